package partition

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
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
	produceSome := c.sender(0)
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
			// The start moves (its checkpoint first) before the segments
			// below it go, and a view reads the two apart: wait for both.
			testutil.WaitFor(t, fmt.Sprintf("%s: node %d's start at %d, in its first segment", label, n.id, x), func() bool {
				v := n.view(t, 0)
				first := v.Segments()[0]
				return v.StartOffset() == x && first.BaseOffset <= x && first.NextOffset > x
			})
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

// sameFromStart waits until every live replica of partition 0 has the
// leader's log and high watermark, then checks each starts where the
// leader does and holds its batches from there, byte for byte (a start
// inside a batch leaves replicas' segment files apart: one restarted at
// that batch's base offset names its first segment there, so files are
// not compared).
func (c *cluster) sameFromStart() {
	c.t.Helper()
	l := c.caughtUp(0)
	start, want := l.view(c.t, 0).StartOffset(), l.batches(c.t, 0)
	for _, n := range c.nodes {
		if n.m == nil || n == l {
			continue
		}
		if got := n.view(c.t, 0).StartOffset(); got != start {
			c.t.Fatalf("node %d's partition starts at %d, the leader %d's at %d", n.id, got, l.id, start)
		}
		got := n.batches(c.t, 0)
		if len(got) != len(want) {
			c.t.Fatalf("node %d holds %d batches from %d, the leader %d holds %d", n.id, len(got), start, l.id, len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				c.t.Fatalf("batch %d (offset %d) differs between node %d and the leader %d", i, record.Batch(want[i]).BaseOffset(), n.id, l.id)
			}
		}
	}
}

// midBatch returns the offset of the second record of l's first producer
// batch of several records whose base offset is past after.
func midBatch(t *testing.T, l *node, after int64) int64 {
	t.Helper()
	for _, b := range l.batches(t, 0) {
		if rb := record.Batch(b); rb.BaseOffset() > after && !rb.IsControl() && rb.NumRecords() >= 2 {
			return rb.BaseOffset() + 1
		}
	}
	t.Fatalf("no batch of several records past offset %d", after)
	return 0
}

// deleteTo asks whoever leads partition 0 to delete the records before x
// (the leadership may move under a loaded machine) and checks the low
// watermark it answers.
func (c *cluster) deleteTo(x int64) {
	c.t.Helper()
	testutil.WaitFor(c.t, fmt.Sprintf("the leader to delete the records before %d", x), func() bool {
		l := c.leader(0)
		if l == nil {
			return false
		}
		low, err := l.m.DeleteRecords(context.Background(), topic, 0, x)
		if errors.Is(err, server.ErrNotLeader) {
			return false
		}
		if err != nil || low != x {
			c.t.Fatalf("DeleteRecords to %d: %d, %v", x, low, err)
		}
		return true
	})
}

// TestDeleteRecordsMidBatchFollowerBehind: a follower stopped before a
// DeleteRecords to an offset inside a batch, past the follower's end,
// catches up when it comes back, through a snapshot (the leader's raft
// log starts at the DeleteRecords entry): the leader serves the whole
// batch holding its start, the follower restarts its partition at that
// batch's base offset, and moves its start to the offset (with the
// snapshot, and again when it applies the entry after it). Its partition
// is the leader's from the leader's start, batch by batch; it can lead;
// fsck finds every directory clean.
func TestDeleteRecordsMidBatchFollowerBehind(t *testing.T) {
	c := newCluster(t)
	p := &producer{c: c}
	p.send(20)
	c.agree(0)
	f := c.follower()
	fEnd := f.view(t, 0).EndOffset()
	c.stop(f)
	p.send(100)
	x := midBatch(t, c.waitLeader(0), fEnd+50)
	c.deleteTo(x)
	c.start(f)
	p.send(5)
	c.sameFromStart()
	if st := f.raft.Stats(); st.SnapshotsDone == 0 {
		t.Fatalf("the follower caught up with no snapshot: %+v", st)
	}
	if got := f.view(t, 0).StartOffset(); got != x {
		t.Fatalf("the follower's start is %d, want %d", got, x)
	}
	if got, want := f.lastSequence(t), p.seq-1; got != want {
		t.Fatalf("the follower's last sequence of the producer is %d, want %d", got, want)
	}
	// The follower can lead, from its start.
	l := c.waitLeader(0)
	c.stop(l)
	p.send(5)
	c.sameFromStart()
	c.start(l)
	p.send(2)
	c.sameFromStart()
	c.fsckClean()
}

// TestDeleteRecordsSnapshotPastEntry: on a compact,delete topic the raft
// log gives up its entries a segment at a time as they are applied
// (replica.Store.CompactTo), so it moves past a DeleteRecords entry while
// a follower is stopped whose committed entries reach past the offset
// deleted to (inside a batch): the follower gets a snapshot past the
// entry, which it never applies, keeps its batches, and takes the
// leader's start with the snapshot. Its partition is the leader's from
// the leader's start, batch by batch, after a restart too; fsck finds
// every directory clean.
func TestDeleteRecordsSnapshotPastEntry(t *testing.T) {
	c := newCluster(t)
	c.setPolicy(cleaner.CompactDelete)
	p := &producer{c: c}
	p.send(40)
	c.agree(0)
	f := c.follower()
	x := midBatch(t, c.waitLeader(0), 10)
	if end := f.view(t, 0).EndOffset(); end <= x {
		t.Fatalf("the follower ends at %d, not past %d", end, x)
	}
	c.stop(f)
	c.deleteTo(x)
	after := c.waitLeader(0).view(t, 0).EndOffset() // past the entry
	p.send(120)
	c.caughtUp(0)
	l := c.waitLeader(0)
	st := l.m.parts[key{topic, 0}].st
	first, err := st.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if off, err := st.Offset(first); err != nil || off <= after {
		t.Fatalf("the leader's raft log starts at entry %d, offset %d (%v): not past the DeleteRecords entry, below %d", first, off, err, after)
	}
	c.start(f)
	p.send(5)
	c.sameFromStart()
	if st := f.raft.Stats(); st.SnapshotsDone == 0 {
		t.Fatalf("the follower caught up with no snapshot: %+v", st)
	}
	if got := f.view(t, 0).StartOffset(); got != x {
		t.Fatalf("the follower's start is %d, want %d", got, x)
	}
	c.stop(f)
	c.start(f)
	p.send(2)
	c.sameFromStart()
	c.fsckClean()
}
