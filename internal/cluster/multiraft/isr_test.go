package multiraft

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	etcdraft "go.etcd.io/raft/v3"

	"github.com/seglog/seglog/internal/testutil"
)

// TestCatchUpRecord: Kafka's rule, sampled. A follower at the leader's end
// is caught up now; one holding what the leader held at the previous
// sample caught up then; one that stopped taking entries is caught up as
// of the last sample it kept pace with, and no later.
func TestCatchUpRecord(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 100 * time.Millisecond) }
	var c catchUp
	if c.since(time.Time{}.Add(1)) {
		t.Fatal("a follower never sampled is caught up")
	}
	c.observe(at(0), 5, 10, 6) // behind the commit, no previous sample
	if !c.at.IsZero() {
		t.Fatalf("behind the commit at its first sample: caught up at %v", c.at)
	}
	var fresh catchUp
	if fresh.observe(at(0), 6, 10, 6); fresh.at != at(0) {
		t.Fatalf("holding every committed entry at a leadership's first sample: caught up at %v, want %v", fresh.at, at(0))
	}
	c.observe(at(1), 10, 12, 11) // holds what the leader had at sample 0
	if c.at != at(0) {
		t.Fatalf("holding the previous sample's end: caught up at %v, want %v", c.at, at(0))
	}
	c.observe(at(2), 12, 15, 14) // a round behind again, steadily
	if c.at != at(1) {
		t.Fatalf("steadily a round behind: caught up at %v, want %v", c.at, at(1))
	}
	c.observe(at(3), 15, 15, 15) // at the end
	if c.at != at(3) {
		t.Fatalf("at the end: caught up at %v, want %v", c.at, at(3))
	}
	for i := 4; i < 10; i++ { // stuck at 15 while the leader goes on
		c.observe(at(i), 15, uint64(16+i), uint64(16+i))
	}
	if c.at != at(3) {
		t.Fatalf("stuck: caught up at %v, want %v (the last sample whose end, 15, it holds)", c.at, at(3))
	}
	if !c.since(at(3)) || c.since(at(4)) {
		t.Fatalf("since: at %v", c.at)
	}
	var none *catchUp
	if none.since(t0) {
		t.Fatal("a follower with no record is caught up")
	}
}

// TestCaughtUpSteadyUnderLoad: every replica stays in the caught-up set at
// every tick while a steady stream of proposals commits, each replica
// keeping pace. A walk saw followers leave the ISR for milliseconds many
// times a second at 200 records a second, when the set was the followers
// whose log reached the commit index at the moment asked.
func TestCaughtUpSteadyUnderLoad(t *testing.T) {
	c, g, lead := caughtUpGroup(t)
	// The leader's first samples (a leadership's start has no record to
	// go by: the set is the followers holding the commit then).
	testutil.WaitFor(t, "the leader sampled its followers caught up", func() bool {
		n := 0
		_ = c.members[lead].node.do(context.Background(), func() {
			for _, cu := range c.members[lead].node.groups[g].caught {
				if !cu.at.IsZero() {
					n++
				}
			}
		})
		return n == 2
	})
	// Proposals one after another from two writers until the samples end.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				n := c.members[lead].node
				if n == nil {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, _ = n.Propose(ctx, g, []byte(fmt.Sprintf("w%d-%d", w, i)))
				cancel()
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	short := 0
	for i := 0; i < 4*DefaultElectionTick; i++ {
		st, err := c.members[lead].node.Status(context.Background(), g)
		if err != nil {
			t.Fatal(err)
		}
		if st.RaftState != etcdraft.StateLeader {
			t.Fatalf("sample %d: the leadership moved under an in-memory load", i)
		}
		if len(st.CaughtUp) != 3 {
			short++
			t.Errorf("sample %d: caught up %v while every replica keeps pace, want all three (progress %v)", i, st.CaughtUp, st.Progress)
		}
		time.Sleep(20 * time.Millisecond) // paces the samples, one a tick
	}
	if short > 0 {
		t.Logf("%d of %d samples short", short, 4*DefaultElectionTick)
	}
}

// caughtUpGroup starts three nodes running one group at a 20 ms tick,
// commits an entry and waits until its leader counts every replica
// caught up; it returns the cluster, the group and its leader.
func caughtUpGroup(t *testing.T) (*cluster, uint64, uint64) {
	t.Helper()
	c := newCluster(t, 3, 1, Config{Tick: 20 * time.Millisecond})
	c.waitLeaders()
	g := c.groups[0]
	c.propose(g, "x")
	lead := c.leader(g)
	testutil.WaitFor(t, "every replica caught up", func() bool {
		st, err := c.members[lead].node.Status(context.Background(), g)
		return err == nil && len(st.CaughtUp) == 3
	})
	return c, g, lead
}
