package partition

import (
	"fmt"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
)

// TestISRCounts: a fresh in-sync set that lost a member is a shrink, one
// that gained a member an expansion (both when a member was swapped), the
// same set nothing, and a new term starts over without counting.
func TestISRCounts(t *testing.T) {
	m, p := &Manager{}, &part{}
	for i, c := range []struct {
		term            uint64
		isr             []int32
		shrinks, expand int64
	}{
		{1, []int32{1, 2, 3}, 0, 0}, // first seen: nothing to compare
		{1, []int32{1, 2, 3}, 0, 0},
		{1, []int32{1, 3}, 1, 0},
		{1, []int32{1, 2}, 2, 1}, // 3 left, 2 came back
		{1, []int32{1, 2, 3}, 2, 2},
		{2, []int32{1}, 2, 2}, // a new leadership is not a shrink
		{2, []int32{1, 3}, 2, 3},
	} {
		m.noteISR(p, c.term, c.isr)
		s, e, _ := m.ReplicationCounts()
		if s != c.shrinks || e != c.expand {
			t.Fatalf("step %d (term %d, %v): shrinks %d expands %d, want %d %d", i, c.term, c.isr, s, e, c.shrinks, c.expand)
		}
	}
}

// TestReplicationCounts: on three real replicas, a committed batch is
// timed on its leader, a stopped follower is counted as a shrink of the
// leader's in-sync set and its return as an expansion.
func TestReplicationCounts(t *testing.T) {
	c := newCluster(t)
	c.produce(0, 0)
	l := c.caughtUp(0)
	if _, _, h := l.m.ReplicationCounts(); func() uint64 { _, n, _ := h.Snapshot(); return n }() == 0 {
		t.Fatal("a committed batch was not timed on its leader")
	}
	isr := func() []int32 {
		_, _, isr, _ := l.m.Leader(topic, 0)
		return isr
	}
	testutil.WaitFor(t, "the leader sees three replicas in sync", func() bool { return len(isr()) == 3 })
	var f *node
	for _, n := range c.nodes {
		if n != l {
			f = n
			break
		}
	}
	shrinks0, expands0, _ := l.m.ReplicationCounts()
	c.stop(f)
	testutil.WaitFor(t, fmt.Sprintf("node %d leaves the in-sync set", f.id), func() bool { return len(isr()) == 2 })
	if s, _, _ := l.m.ReplicationCounts(); s <= shrinks0 {
		t.Fatalf("shrinks %d after a follower stopped, %d before", s, shrinks0)
	}
	c.start(f)
	testutil.WaitFor(t, fmt.Sprintf("node %d is back in the in-sync set", f.id), func() bool {
		if st, err := l.m.State(topic, 0); err != nil || !st.Leader {
			// A returning follower must not unseat the leader (raft's
			// pre-vote): the counts would then be another node's.
			t.Fatalf("node %d no longer leads: %+v %v", l.id, st, err)
		}
		return len(isr()) == 3
	})
	if _, e, _ := l.m.ReplicationCounts(); e <= expands0 {
		t.Fatalf("expands %d after the follower returned, %d before", e, expands0)
	}
}
