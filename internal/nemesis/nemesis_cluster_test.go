//go:build linux

package nemesis

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
)

var (
	clusterFaults = flag.Int("nemesis.cluster.faults", 6, "faults in TestNemesisCluster (SIGKILL and restart, SIGSTOP and SIGCONT, of one node at a time); -soak.scale multiplies it")
	clusterKinds  = flag.String("nemesis.cluster.kinds", "kill,kill,kill-starting,term-kill,pause,pause", "the faults TestNemesisCluster draws from, comma-separated, a kind named twice drawn twice as often: kill, kill-starting, term-kill, pause")
)

// TestNemesisCluster runs a three-node cluster of real `seglog serve`
// processes, started with issue 30's command line, under three writers
// (acks=all, idempotent, every node a seed) to a topic of two partitions
// replicated on all three nodes, with a consumer reading all along. One
// node at a time, the leader of a partition or any node, is SIGKILLed and
// restarted (while writing, during its recovery, or during its clean
// shutdown) or SIGSTOPped and SIGCONTed, -nemesis.cluster.faults times.
// Then, with every node up and every replica in sync, it checks the
// history: every acknowledged record read back exactly once at the
// offset it was acknowledged with (up to each partition's high
// watermark), no value twice, no offset given to two values, nothing a
// consumer saw gone; after a clean stop, every partition's three
// replicas identical batch by batch up to the high watermark (raft's own
// entries, control batches, included) and fsck clean on every node.
//
// The seed fixes the schedule (which fault, which node, how long each
// wait), not the interleaving with the writers or raft's elections.
func TestNemesisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three seglog serve processes for tens of seconds; run without -short")
	}
	s := *seed
	switch {
	case s != 0:
	case soak.Seed() != 0:
		s = soak.Seed()
	default:
		s = uint64(time.Now().UnixNano())
	}
	nFaults := soak.Reduce(*clusterFaults*soak.Scale(), 2)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d; replay: go test ./internal/nemesis -run 'TestNemesisCluster$' -count=1 -v -nemesis.seed=%d -nemesis.cluster.faults=%d", s, s, nFaults)
		}
	})
	rng := rand.New(rand.NewPCG(s, 0x636c7573))
	bin := seglogBinary(t)

	const topic, partitions, rf = "nemesis", 2, 3
	nodes, err := PlanCluster(rf)
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartCluster(bin, t.TempDir(), nodes, "--auto-create-topics=false", "--grace", "10s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node output (tails):\n%s", c.Output())
		}
	})
	t.Logf("node 1: seglog serve DIR %s", strings.Join(ServeArgs(nodes, 0), " "))
	brokers := c.Brokers()

	// CreateTopics goes to the controller, which the metadata group
	// elects once a quorum of nodes is up.
	var createErr error
	defer func() {
		if t.Failed() && createErr != nil {
			t.Logf("the last CreateTopics: %v", createErr)
		}
	}()
	testutil.WaitFor(t, "the topic is created", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		createErr = CreateTopic(ctx, brokers, topic, partitions, rf, "segment.bytes=262144", "max.message.bytes=65536")
		return createErr == nil || errors.Is(createErr, kerr.TopicAlreadyExists)
	})
	inSync := func(what string) map[int32]PartitionState {
		t.Helper()
		var st map[int32]PartitionState
		var err error
		defer func() {
			if t.Failed() {
				t.Logf("the last Metadata: %v, %v", st, err)
			}
		}()
		testutil.WaitFor(t, "every partition has a leader and every replica in sync "+what, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err = Partitions(ctx, brokers, topic)
			if err != nil || len(st) != partitions {
				return false
			}
			for _, p := range st {
				if !p.InSync() || len(p.Replicas) != rf {
					return false
				}
			}
			return true
		})
		return st
	}
	t.Logf("partitions at the start: %v", inSync("at the start"))

	wl := &Workload{Brokers: brokers, Topic: topic, Writers: 3}
	if err := wl.Start(true); err != nil {
		t.Fatal(err)
	}
	progress := func(what string) {
		n := wl.Acked()
		testutil.WaitFor(t, fmt.Sprintf("records are acknowledged again %s (%d so far); produce errors: %s", what, n, wl.Errors()),
			func() bool { return wl.Acked() > n })
	}
	progress("at the start")
	// allUp fails the test if a node exited on its own: the nemesis
	// restarts what it kills, so a node not running crashed (a node that
	// panics after it listens would otherwise go unnoticed until a later
	// fault picks it, or the end).
	allUp := func(when string) {
		t.Helper()
		for i, p := range c.Procs {
			if !p.Running() {
				t.Fatalf("node %d is not running %s: it exited by itself (its output is below)", nodes[i].ID, when)
			}
		}
	}

	// The faults, one node at a time: a SIGKILL while writing ("kill"),
	// during the recovery and start-up after one ("kill-starting") or
	// during a clean shutdown ("term-kill"), each followed by a restart;
	// or a SIGSTOP for up to 3 s ("pause"). Half of them hit the leader of
	// a partition (a failover), the others any node.
	kinds := strings.Split(*clusterKinds, ",")
	for _, k := range kinds {
		if !slices.Contains([]string{"kill", "kill-starting", "term-kill", "pause"}, k) {
			t.Fatalf("-nemesis.cluster.kinds: unknown fault %q", k)
		}
	}
	// The sleeps below are the nemesis: the random moments and lengths
	// of the faults, not waits for a condition (those are WaitFor).
	jitter := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	kills := 0
	for i := range nFaults {
		f := kinds[rng.IntN(len(kinds))]
		leaderOf := int32(-1)
		if rng.IntN(2) == 0 {
			leaderOf = int32(rng.IntN(partitions))
		}
		time.Sleep(jitter(50, 700))
		target := nodes[rng.IntN(len(nodes))].ID
		if leaderOf >= 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			st, err := Partitions(ctx, brokers, topic)
			cancel()
			if err == nil && st[leaderOf].Leader > 0 && c.Node(st[leaderOf].Leader) != nil {
				target = st[leaderOf].Leader
			}
		}
		p := c.Node(target)
		at := wl.Acked()
		who := fmt.Sprintf("node %d", target)
		if leaderOf >= 0 {
			who += fmt.Sprintf(" (leader of %s-%d)", topic, leaderOf)
		}
		switch f {
		case "kill":
			must(p.Kill())
			// Down a while: the other two go on without it.
			time.Sleep(jitter(0, 2000))
		case "kill-starting":
			must(p.Kill())
			must(p.Launch())
			// Up to 1.5 s: a restarted node's start-up includes catching
			// up from its peers, entries already committed elsewhere
			// arriving with their commit index.
			time.Sleep(jitter(0, 1500))
			must(p.Kill())
		case "term-kill":
			must(p.Terminate())
			time.Sleep(jitter(0, 100))
			must(p.Kill())
		case "pause":
			must(p.Pause())
			// Up to 3 s: longer than an election timeout and than the
			// writers' 2 s produce timeout.
			d := jitter(100, 3000)
			time.Sleep(d)
			must(p.Resume())
			t.Logf("fault %d: SIGSTOP of %s at %d acknowledgments for %v (%d acknowledged meanwhile)", i, who, at, d, wl.Acked()-at)
		}
		if f != "pause" {
			kills++
			down := wl.Acked() - at
			if err := p.Restart(); err != nil {
				t.Fatalf("restart of node %d after fault %d (%s): %v", target, i, f, err)
			}
			t.Logf("fault %d: %s of %s at %d acknowledgments (%d acknowledged while it was down), restarted", i, f, who, at, down)
		}
		progress(fmt.Sprintf("after fault %d (%s of %s)", i, f, who))
		allUp(fmt.Sprintf("after fault %d (%s of %s)", i, f, who))
	}
	allUp("after the last fault")

	// Every node is up (each was restarted or resumed). The writers stop;
	// then every replica catches up, and the final read reads up to each
	// partition's high watermark.
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	h := wl.Stop(stopCtx)
	stopCancel()
	t.Logf("partitions at the end: %v", inSync("at the end"))
	readCtx, readCancel := context.WithTimeout(context.Background(), time.Minute)
	var ends map[int32]int64
	h.Read, ends, err = ReadAll(readCtx, brokers, topic)
	readCancel()
	if err != nil {
		t.Error(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("clean stop: %v", err)
	}

	rep := Check(h)
	// Each partition's replicas, one on every node, identical up to its
	// high watermark; fsck clean on every node's partitions.
	var all []string
	for p := range int32(partitions) {
		var dirs []string
		for _, d := range c.Dirs() {
			dirs = append(dirs, filepath.Join(d, layout.PartitionDirName(topic, p)))
		}
		vs, err := CompareReplicas(vfs.Default, dirs, ends[p])
		if err != nil {
			t.Fatal(err)
		}
		rep.Violations = append(rep.Violations, vs...)
		all = append(all, dirs...)
	}
	for _, d := range c.Dirs() {
		dirs, err := PartitionDirs(vfs.Default, d, topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(dirs) != partitions {
			t.Errorf("%d partition directories in %s, want %d: %v", len(dirs), d, partitions, dirs)
		}
	}
	fsckVs, err := FsckClean(vfs.Default, all)
	if err != nil {
		t.Fatal(err)
	}
	rep.Violations = append(rep.Violations, fsckVs...)
	t.Logf("%d faults (%d kills); high watermarks %v; %v", nFaults, kills, ends, rep)
	if errs := wl.Errors(); errs != "" {
		t.Logf("produce errors: %s", errs)
	}
	if out := c.Output(); strings.Contains(out, "WARNING: DATA RACE") {
		t.Errorf("a node reported a data race:\n%s", out)
	}
	if !rep.OK() {
		t.Errorf("the history breaks the rules:\n%v", rep)
	}
	soak.Count(t, "kills", kills)
	soak.Count(t, "records_verified", rep.Acked)
	if rep.Acked == 0 {
		t.Error("nothing was acknowledged: the run checked nothing")
	}
	if len(ends) != partitions || slices.Contains(slices.Collect(maps.Values(ends)), 0) {
		t.Errorf("high watermarks %v: want %d partitions written to", ends, partitions)
	}
}
