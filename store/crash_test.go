package store

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// crashHistory is what the workload had acknowledged, guarded by mu; a
// crash clone is taken under mu, so it sees exactly the acknowledgements
// made before it.
type crashHistory struct {
	mu      sync.Mutex
	topics  map[string]int     // acknowledged topics and their partition counts
	pending map[string]int     // creates or deletes in flight: count, or -1
	commits map[string][]int64 // "group/topic/p" → every offset attempted, in order
	acked   map[string]int     // "group/topic/p" → index of the last acknowledged
	synced  map[string]int64   // "topic/p" → end offset acknowledged durable (flush.messages=1 topics)
}

type crashPoint struct {
	fs      *vfs.MemFS
	topics  map[string]int
	pending map[string]int
	commits map[string][]int64
	acked   map[string]int
	synced  map[string]int64
}

func clone[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Power loss at random moments during topic creates and deletes, produces
// and commits: the store reopens, every topic either exists whole or not at
// all, acknowledged creates and deletes stick, acknowledged records of a
// synced topic survive, and every group's committed offset is the last
// acknowledged commit or a later attempt, never past its partition's end.
func TestCrashDuringTopicsAndCommits(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	h := &crashHistory{topics: map[string]int{}, pending: map[string]int{}, commits: map[string][]int64{},
		acked: map[string]int{}, synced: map[string]int64{}}
	rng := rand.New(rand.NewPCG(7, 7))

	// The workload signals the crasher at random moments and goes on, so
	// the clone lands during the next operation or between two.
	var points []crashPoint
	signal := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		crng := rand.New(rand.NewPCG(8, 8))
		for range signal {
			h.mu.Lock()
			c := fs.CrashCloneWith(vfs.CrashOptions{Rand: crng, KeepUnsynced: 0.5, KeepUnsyncedEntries: 0.5})
			points = append(points, crashPoint{fs: c, topics: clone(h.topics), pending: clone(h.pending),
				commits: clone(h.commits), acked: clone(h.acked), synced: clone(h.synced)})
			h.mu.Unlock()
		}
	}()

	names := []string{"a", "b", "c"}
	for i := 0; i < 600; i++ {
		if rng.IntN(8) == 0 {
			signal <- struct{}{} // waits only while the last clone is still pending
		}
		name := names[rng.IntN(len(names))]
		h.mu.Lock()
		n, exists := h.topics[name]
		h.mu.Unlock()
		switch op := rng.IntN(10); {
		case !exists && op < 3:
			n := 1 + rng.IntN(3)
			cfg := smallConfig()
			if name == "a" {
				cfg.FlushMessages = 1
			}
			h.mu.Lock()
			h.pending[name] = n
			h.mu.Unlock()
			mustf(t, s.CreateTopic(name, n, cfg), "create %s", name)
			h.mu.Lock()
			delete(h.pending, name)
			h.topics[name] = n
			h.mu.Unlock()
		case exists && op == 0:
			h.mu.Lock()
			h.pending[name] = -1
			delete(h.topics, name)
			for k := range h.commits {
				var g, tp string
				var p int
				if _, err := fmt.Sscanf(k, "%s %s %d", &g, &tp, &p); err != nil {
					t.Fatal(err)
				}
				if tp == name {
					delete(h.commits, k)
					delete(h.acked, k)
				}
			}
			for k := range h.synced {
				var tp string
				var p int
				if _, err := fmt.Sscanf(k, "%s %d", &tp, &p); err != nil {
					t.Fatal(err)
				}
				if tp == name {
					delete(h.synced, k)
				}
			}
			h.mu.Unlock()
			mustf(t, s.DeleteTopic(name), "delete %s", name)
			h.mu.Lock()
			delete(h.pending, name)
			h.mu.Unlock()
		case exists && op < 6:
			res, err := s.Produce(name, kv(fmt.Sprint(rng.IntN(50)), "v"), kv(fmt.Sprint(rng.IntN(50)), "w"))
			mustf(t, err, "produce")
			if name == "a" {
				h.mu.Lock()
				for _, r := range res {
					k := fmt.Sprintf("%s %d", name, r.Partition)
					h.synced[k] = max(h.synced[k], r.Offset+1)
				}
				h.mu.Unlock()
			}
		case exists:
			g := fmt.Sprintf("g%d", rng.IntN(3))
			p := int32(rng.IntN(n))
			l, release, err := s.AcquireLog(name, p) // not Log: the budget closes partitions as the workload goes
			mustf(t, err, "log")
			off := l.StartOffset() + rng.Int64N(l.EndOffset()-l.StartOffset()+1)
			release()
			k := fmt.Sprintf("%s %s %d", g, name, p)
			h.mu.Lock()
			h.commits[k] = append(h.commits[k], off)
			h.mu.Unlock()
			mustf(t, s.Commit(g, name, map[int32]int64{p: off}), "commit")
			h.mu.Lock()
			h.acked[k] = len(h.commits[k]) - 1
			h.mu.Unlock()
		}
	}
	close(signal)
	<-done
	mustf(t, s.Close(), "close")
	if len(points) < 20 {
		t.Fatalf("only %d crash points", len(points))
	}

	for i, cp := range points {
		s, err := Open(testDir, Options{FS: cp.fs, OffsetsPartitions: 5, Clock: clock, Logger: quiet, OffsetsConfig: &offsetsCfg, MaxOpenLogs: testMaxOpenLogs})
		if err != nil {
			t.Fatalf("crash %d: reopen: %v", i, err)
		}
		got := make(map[string]int)
		for _, name := range s.Topics() {
			got[name], _ = s.Partitions(name)
		}
		for _, name := range names {
			want, acked := cp.topics[name]
			pend, inFlight := cp.pending[name]
			switch {
			case inFlight && pend > 0: // a create in flight: whole or absent
				if n, ok := got[name]; ok && n != pend {
					t.Errorf("crash %d: topic %s half created: %d of %d partitions", i, name, n, pend)
				}
			case inFlight: // a delete in flight: whole or absent
				if n, ok := got[name]; ok && n != want && want != 0 {
					t.Errorf("crash %d: topic %s half deleted", i, name)
				}
			case acked && got[name] != want:
				t.Errorf("crash %d: acknowledged topic %s has %d partitions, want %d", i, name, got[name], want)
			case !acked && got[name] != 0:
				t.Errorf("crash %d: topic %s exists, never acknowledged", i, name)
			}
		}
		for k, end := range cp.synced {
			var name string
			var p int32
			if _, err := fmt.Sscanf(k, "%s %d", &name, &p); err != nil {
				t.Fatal(err)
			}
			if _, ok := got[name]; !ok {
				continue
			}
			l, err := s.Log(name, p)
			mustf(t, err, "log")
			if l.EndOffset() < end {
				t.Errorf("crash %d: %s lost acknowledged records: end %d < %d", i, k, l.EndOffset(), end)
			}
		}
		for k, hist := range cp.commits {
			var g, name string
			var p int32
			if _, err := fmt.Sscanf(k, "%s %s %d", &g, &name, &p); err != nil {
				t.Fatal(err)
			}
			if _, ok := got[name]; !ok {
				continue
			}
			c, ok := s.CommittedOffset(g, name, p)
			ai, wasAcked := cp.acked[k]
			if !ok {
				if wasAcked {
					t.Errorf("crash %d: acknowledged commit %s lost", i, k)
				}
				continue
			}
			from := 0
			if wasAcked {
				from = ai
			}
			found := false
			for _, v := range hist[from:] {
				found = found || v == c.Offset
			}
			if !found {
				t.Errorf("crash %d: %s committed %d, not the acknowledged %v or a later attempt", i, k, c.Offset, hist[from:])
			}
			l, _ := s.Log(name, p)
			if c.Offset > l.EndOffset() {
				t.Errorf("crash %d: %s committed %d past the end %d", i, k, c.Offset, l.EndOffset())
			}
		}
		mustf(t, s.Close(), "crash %d: close", i)
	}
}
