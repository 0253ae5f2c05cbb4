package partition

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
)

// producerID is the idempotent producer of the snapshot tests' batches.
const producerID = 4242

// idempotentBatch is batch i of producer producerID, n records from
// sequence seq.
func idempotentBatch(t *testing.T, i, n int, seq int32) []byte {
	t.Helper()
	bld := record.NewBuilder(record.None)
	bld.SetProducer(producerID, 0, seq)
	for j := range n {
		if err := bld.Add(record.Record{Offset: int64(j), Timestamp: 1_700_000_000_000, Value: fmt.Appendf(nil, "batch %d record %d %0100d", i, j, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(b)
}

// producer writes idempotent batches to partition 0 with acks -1,
// following the leader, and counts its sequence.
type producer struct {
	c   *cluster
	i   int
	seq int32
}

func (p *producer) send(n int) {
	c := p.c
	c.t.Helper()
	for range n {
		recs := 1 + p.i%3
		b := idempotentBatch(c.t, p.i, recs, p.seq)
		testutil.WaitFor(c.t, fmt.Sprintf("batch %d is committed", p.i), func() bool {
			l := c.leader(0)
			if l == nil {
				return false
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := l.m.Produce(ctx, topic, 0, b, -1)
			if errors.Is(err, server.ErrNotLeader) || errors.Is(err, context.DeadlineExceeded) {
				return false
			}
			if err != nil {
				c.t.Fatal(err)
			}
			return true
		})
		p.i++
		p.seq += int32(recs)
	}
}

// lastSequence is the last sequence of producerID's batches in n's
// partition 0: what a new leader's producer state starts from (the server
// rebuilds it from the batch headers).
func (n *node) lastSequence(t *testing.T) int32 {
	t.Helper()
	last := int32(-1)
	for _, b := range n.batches(t, 0) {
		rb := record.Batch(b)
		if !rb.IsControl() && rb.ProducerID() == producerID {
			last = rb.BaseSequence() + rb.LastOffsetDelta()
		}
	}
	return last
}

// follower returns a node that does not lead partition 0.
func (c *cluster) follower() *node {
	l := c.waitLeader(0)
	for _, n := range c.nodes {
		if n != l {
			return n
		}
	}
	return nil
}

// fsckClean stops every node and checks partition 0's directory on each.
func (c *cluster) fsckClean() {
	c.t.Helper()
	for _, n := range c.nodes {
		c.stop(n)
		dir := filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, 0))
		rep, err := fsck.Check(n.fs, dir, fsck.Options{})
		if err != nil {
			c.t.Fatal(err)
		}
		if !rep.Clean() {
			c.t.Fatalf("node %d %s: fsck: %+v", n.id, dir, rep.Problems)
		}
	}
}

// TestSnapshotInstallAfterRetention: a follower is stopped; the leader
// writes on and retention deletes past the follower's end on the live
// nodes; restarted, the follower gets a snapshot, whose data it pulls from
// the leader: its partition restarts at the leader's log start and
// matches the leader's from there batch by batch and file by file; the
// producer's sequences are the leader's, so a new leader's producer state
// is right; the group goes on; fsck finds every directory clean.
func TestSnapshotInstallAfterRetention(t *testing.T) {
	c := newCluster(t)
	p := &producer{c: c}
	p.send(20)
	c.agree(0)
	f := c.follower()
	fEnd := f.view(t, 0).EndOffset()
	c.stop(f)
	p.send(150)
	c.agree(0)
	c.setRetentionBytes(1)
	for _, n := range c.nodes {
		if n.m != nil {
			n.clean(t)
		}
	}
	l := c.waitLeader(0)
	start := l.view(t, 0).StartOffset()
	if start <= fEnd {
		t.Fatalf("retention left the leader's log from %d, not past the follower's end %d", start, fEnd)
	}
	c.start(f)
	p.send(5)
	c.agree(0)
	if st := f.raft.Stats(); st.SnapshotsDone == 0 {
		t.Fatalf("the follower caught up with no snapshot: %+v", st)
	}
	if got := f.view(t, 0).StartOffset(); got != l.view(t, 0).StartOffset() {
		t.Fatalf("the follower's partition starts at %d, the leader's at %d", got, l.view(t, 0).StartOffset())
	}
	if got, want := f.lastSequence(t), p.seq-1; got != want {
		t.Fatalf("the follower's last sequence of the producer is %d, want %d", got, want)
	}
	// The follower can lead: the old leader stops, writes go on.
	c.stop(l)
	p.send(5)
	c.agree(0)
	c.start(l)
	p.send(2)
	c.agree(0)
	c.fsckClean()
}

// setPolicy sets the test topic's cleanup.policy on every node.
func (c *cluster) setPolicy(policy cleaner.CleanupPolicy) {
	c.t.Helper()
	for _, n := range c.nodes {
		if err := n.st.UpdateTopicConfig(topic, false, func(tc store.TopicConfig) (store.TopicConfig, error) {
			tc.CleanupPolicy = policy
			return tc, nil
		}); err != nil {
			c.t.Fatal(err)
		}
	}
}

// TestSnapshotInstallFromEntries: on a compacting topic the leader's raft
// log gives up its entries a segment at a time as they are applied
// (replica.Store.CompactTo) while the partition keeps them; a follower
// stopped meanwhile gets a snapshot, pulls the batches after its commit
// index, stores them as the entries they are, and matches the leader.
func TestSnapshotInstallFromEntries(t *testing.T) {
	c := newCluster(t)
	c.setPolicy(cleaner.Compact)
	p := &producer{c: c}
	p.send(10)
	c.agree(0)
	f := c.follower()
	c.stop(f)
	p.send(120)
	c.agree(0)
	l := c.waitLeader(0)
	first, err := l.m.parts[key{topic, 0}].st.FirstIndex()
	if err != nil || first < 20 {
		t.Fatalf("the leader's raft log starts at %d (%v): CompactTo did not move it", first, err)
	}
	c.start(f)
	p.send(5)
	c.agree(0)
	if st := f.raft.Stats(); st.SnapshotsDone == 0 {
		t.Fatalf("the follower caught up with no snapshot: %+v", st)
	}
	if f.view(t, 0).StartOffset() != 0 {
		t.Fatalf("the follower's partition starts at %d, want 0", f.view(t, 0).StartOffset())
	}
	c.fsckClean()
}
