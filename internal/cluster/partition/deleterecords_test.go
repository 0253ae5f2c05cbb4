package partition

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/server"
)

// TestDeleteRecordsUnderRaft: a DeleteRecords through the leader, to an
// offset inside a batch of a later segment, moves the log start on every
// replica and deletes the segments wholly below it on each, alike; the
// group goes on committing and the replicas agree batch by batch and file
// by file; every node restarted (raft applies the entry again) keeps the
// start; retention after it still works under raft. A follower refuses
// it, and an offset past the high watermark or below -1 is out of range.
func TestDeleteRecordsUnderRaft(t *testing.T) {
	c := newCluster(t)
	i := 0
	produceSome := func(n int) {
		for range n {
			c.produce(0, i)
			i++
		}
	}
	produceSome(120)
	c.agree(0)
	l := c.waitLeader(0)
	v := l.view(t, 0)
	segs := v.Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments: the test needs several", len(segs))
	}
	// x is the second record of the first batch of several records in
	// the third segment.
	var x int64 = -1
	for _, b := range l.batches(t, 0) {
		rb := record.Batch(b)
		if rb.BaseOffset() >= segs[2].BaseOffset && !rb.IsControl() && rb.NumRecords() >= 2 {
			x = rb.BaseOffset() + 1
			break
		}
	}
	if x < 0 {
		t.Fatal("no batch of several records in the third segment")
	}
	ctx := context.Background()
	for _, n := range c.nodes {
		if n == l {
			continue
		}
		if _, err := n.m.DeleteRecords(ctx, topic, 0, x); !errors.Is(err, server.ErrNotLeader) {
			t.Fatalf("DeleteRecords on follower %d: %v, want ErrNotLeader", n.id, err)
		}
	}
	st, err := l.m.State(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{st.HighWatermark + 1, -2} {
		if _, err := l.m.DeleteRecords(ctx, topic, 0, off); !errors.Is(err, seglog.ErrOffsetOutOfRange) {
			t.Fatalf("DeleteRecords to %d (high watermark %d): %v, want ErrOffsetOutOfRange", off, st.HighWatermark, err)
		}
	}
	// The leadership may move under a loaded machine: ask whoever leads.
	var low int64
	testutil.WaitFor(t, fmt.Sprintf("the leader to delete the records before %d", x), func() bool {
		l := c.leader(0)
		if l == nil {
			return false
		}
		low, err = l.m.DeleteRecords(ctx, topic, 0, x)
		if errors.Is(err, server.ErrNotLeader) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true
	})
	if low != x {
		t.Fatalf("DeleteRecords answered the low watermark %d, want %d", low, x)
	}
	checkStart := func(label string) {
		t.Helper()
		for _, n := range c.nodes {
			testutil.WaitFor(t, fmt.Sprintf("%s: node %d's start at %d", label, n.id, x), func() bool { return n.view(t, 0).StartOffset() == x })
			first := n.view(t, 0).Segments()[0]
			if first.BaseOffset > x || first.NextOffset <= x {
				t.Fatalf("%s: node %d's first segment holds [%d, %d), not the start %d", label, n.id, first.BaseOffset, first.NextOffset, x)
			}
		}
	}
	checkStart("after the delete")
	produceSome(20)
	c.agree(0)

	// Each node restarted: raft applies the entry again, which finds the
	// start moved.
	for _, n := range c.nodes {
		c.stop(n)
		c.start(n)
		if got := n.view(t, 0).StartOffset(); got != x {
			t.Fatalf("node %d restarted with its start at %d, want %d", n.id, got, x)
		}
		produceSome(5)
	}
	checkStart("after the restarts")
	c.agree(0)

	// Retention goes on under raft after it.
	c.setRetentionBytes(1)
	for _, n := range c.nodes {
		n.clean(t)
		if got := n.view(t, 0).StartOffset(); got <= x {
			t.Fatalf("node %d: retention after the delete left the start at %d", n.id, got)
		}
	}
	produceSome(10)
	c.agree(0)
}

// TestDeleteRecordsMidBatchFollowerBehind: a follower stopped before a
// DeleteRecords to an offset inside a batch, past the follower's end,
// catches up when it comes back (through a snapshot: the leader's raft log
// starts at the DeleteRecords entry) and its start is the offset.
//
// Known to fail: replica.Store.ServeSnapshot starts at the leader's log
// start and refuses the batch holding it, whose base offset is below; the
// follower restarts its partition at the start and stays there, empty
// (docs/cluster-partitions.md, "What is left"). The fix belongs to the
// snapshot transfer: serve from the batch holding the start, with its base
// offset as the header's start.
func TestDeleteRecordsMidBatchFollowerBehind(t *testing.T) {
	t.Skip("known: a snapshot cannot carry a log start inside a batch (docs/cluster-partitions.md, \"What is left\")")
	c := newCluster(t)
	i := 0
	produceSome := func(n int) {
		for range n {
			c.produce(0, i)
			i++
		}
	}
	produceSome(20)
	c.agree(0)
	l := c.waitLeader(0)
	var f *node
	for _, n := range c.nodes {
		if n != l {
			f = n
			break
		}
	}
	c.stop(f)
	produceSome(100)
	l = c.waitLeader(0)
	var x int64 = -1
	for _, b := range l.batches(t, 0) {
		if rb := record.Batch(b); rb.BaseOffset() > 100 && !rb.IsControl() && rb.NumRecords() >= 2 {
			x = rb.BaseOffset() + 1
			break
		}
	}
	if x < 0 {
		t.Fatal("no batch of several records past offset 100")
	}
	if low, err := l.m.DeleteRecords(context.Background(), topic, 0, x); err != nil || low != x {
		t.Fatalf("DeleteRecords to %d: %d, %v", x, low, err)
	}
	c.start(f)
	produceSome(5)
	c.caughtUp(0)
	if got := f.view(t, 0).StartOffset(); got != x {
		t.Fatalf("the follower's start is %d, want %d", got, x)
	}
}
