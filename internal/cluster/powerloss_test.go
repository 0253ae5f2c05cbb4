package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/nemesis"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
)

// TestPowerLossOneNode: one node of three loses power at random points
// while acks=all writes go on: its network goes first (raftmux.Close,
// what a node's death looks like to its peers), so nothing it does after
// that moment reaches anyone, and it restarts with what it had synced at
// that moment (vfs.MemFS.CrashClone). Every acknowledged record is kept
// exactly once, a record whose write failed is stored at most once, and
// the three replicas agree batch by batch once the node has caught up.
func TestPowerLossOneNode(t *testing.T) {
	c := newClusterOf(t, 3, true)
	ctrl := c.controller()
	const topic = "pl"
	if err := ctrl.node.CreateTopic(ctxTimeout(t), topic, 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	rnd := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	victim := c.nodes[int32(1+rnd.IntN(3))]
	disk := c.fs // the victim's disk; the others keep c.fs

	// lifeMu guards the nodes' lives against the producer, which
	// copies the running nodes under it.
	var lifeMu sync.Mutex
	live := func() []*Node {
		lifeMu.Lock()
		defer lifeMu.Unlock()
		var out []*Node
		for _, tn := range c.running() {
			out = append(out, tn.node)
		}
		return out
	}
	var (
		mu      sync.Mutex
		acked   = map[string]int64{}
		unknown = map[string]bool{}
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			v := fmt.Sprintf("r-%06d", i)
			var lead *Node
			for _, n := range live() {
				if st, err := n.State(topic, 0); err == nil && st.Leader {
					lead = n
				}
			}
			if lead == nil {
				i--
				time.Sleep(5 * time.Millisecond) // no leader yet: pace the retry loop, not a condition
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			off, err := lead.Produce(ctx, topic, 0, producerBatch(t, v), -1)
			cancel()
			mu.Lock()
			if err == nil {
				acked[v] = off
			} else {
				unknown[v] = true
			}
			mu.Unlock()
		}
	}()
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}

	for round := range 3 {
		target := ackedCount() + 50 + rnd.IntN(150)
		testutil.WaitFor(t, fmt.Sprintf("round %d: %d records acknowledged", round, target), func() bool { return ackedCount() >= target })
		// Power loss: the network first, then what was synced is what
		// remains.
		lifeMu.Lock()
		_ = victim.node.mux.Close()
		clone := disk.CrashClone()
		c.crashStop(victim.id)
		disk = clone
		victim.fs = disk
		c.restart(victim.id)
		lifeMu.Unlock()
	}
	target := ackedCount() + 100
	testutil.WaitFor(t, "writes acknowledged after the last restart", func() bool { return ackedCount() >= target })
	stop.Store(true)
	wg.Wait()

	lead := c.leaderOf(topic, 0)
	st, err := lead.node.State(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "every replica at the high watermark", func() bool {
		for _, tn := range c.running() {
			v, err := tn.st.Log(topic, 0)
			if err != nil || v.EndOffset() < st.HighWatermark {
				return false
			}
		}
		return true
	})
	for _, tn := range c.running() {
		count := map[string]int{}
		for _, v := range values(t, tn, topic, 0) {
			count[v]++
		}
		for v, off := range acked {
			if count[v] != 1 {
				t.Errorf("node %d holds acknowledged %s (offset %d) %d times", tn.id, v, off, count[v])
			}
		}
		for v, n := range count {
			if n > 1 {
				t.Errorf("node %d holds %s %d times", tn.id, v, n)
			}
			if _, ok := acked[v]; !ok && !unknown[v] {
				t.Errorf("node %d holds %s, never written", tn.id, v)
			}
		}
	}
	// CompareReplicas reads one FS: the victim's partition is copied
	// from its disk into the shared one beside the others'.
	var dirs []string
	for _, tn := range c.running() {
		d := filepath.Join(tn.dir, topic+"-0")
		if tn == victim {
			d = copyDir(t, c.fsOf(tn), d, c.fs, "/victim/"+topic+"-0")
		}
		dirs = append(dirs, d)
	}
	vs, err := nemesis.CompareReplicas(c.fs, dirs, st.HighWatermark)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}
}

// copyDir copies the files of dir on from into to's dst, and returns dst.
func copyDir(t *testing.T, from vfs.FS, dir string, to vfs.FS, dst string) string {
	t.Helper()
	names, err := from.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := to.MkdirAll(dst); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		data, err := vfs.ReadFileLimit(from, filepath.Join(dir, n), 1<<30)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a running node's temporary file, renamed meanwhile
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFileAtomic(to, filepath.Join(dst, n), data); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// crashStop stops a node whose disk has failed: its close errors are what
// a dead machine would have had, not failures of the test.
func (c *tcluster) crashStop(id int32) {
	tn := c.nodes[id]
	_ = tn.node.Close()
	_ = tn.st.Close()
	tn.node, tn.st = nil, nil
}
