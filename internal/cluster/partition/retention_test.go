package partition

import (
	"context"
	"testing"

	"github.com/seglog/seglog/store"
)

// setRetentionBytes alters the test topic's retention.bytes on every live
// node's store (the node does so from the replicated metadata).
func (c *cluster) setRetentionBytes(bytes int64) {
	c.t.Helper()
	for _, n := range c.nodes {
		if n.m == nil {
			continue
		}
		if err := n.st.UpdateTopicConfig(topic, false, func(tc store.TopicConfig) (store.TopicConfig, error) {
			tc.RetentionBytes = bytes
			return tc, nil
		}); err != nil {
			c.t.Fatal(err)
		}
	}
}

// clean runs a cleaning round of the test topic on n's store and fails
// the test on a partition's error.
func (n *node) clean(t *testing.T) {
	t.Helper()
	res, err := n.st.Clean(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("node %d: cleaning %s-%d: %v", n.id, r.Topic, r.Partition, r.Err)
		}
	}
}

// TestRetentionUnderRaft: retention deletes the old segments of a
// replicated partition on every node, up to what raft applied there, and
// the group goes on committing; the replicas still agree batch by batch
// and file by file; a node restarted after retention (whose raft applies
// its committed entries again from its first one) runs its cleaner at
// once without losing an entry raft needs, and catches up.
func TestRetentionUnderRaft(t *testing.T) {
	c := newCluster(t)
	produceSome := c.sender(0)
	produceSome(120)
	c.agree(0)
	l := c.waitLeader(0)
	segs := l.view(t, 0).NumSegments()
	if segs < 4 {
		t.Fatalf("%d segments: the test needs several", segs)
	}
	c.setRetentionBytes(1)
	starts := map[int32]int64{}
	for _, n := range c.nodes {
		n.clean(t)
		v := n.view(t, 0)
		starts[n.id] = v.StartOffset()
		if v.StartOffset() == 0 || v.NumSegments() >= segs {
			t.Fatalf("node %d: retention kept the partition from %d in %d segments (of %d)", n.id, v.StartOffset(), v.NumSegments(), segs)
		}
		if st, _ := n.m.State(topic, 0); v.StartOffset() > st.HighWatermark {
			t.Fatalf("node %d: retention deleted to %d, past the high watermark %d", n.id, v.StartOffset(), st.HighWatermark)
		}
	}
	produceSome(40)
	c.agree(0)

	// A follower restarted after retention: its cleaner runs before raft
	// has applied anything again, and must leave every raft entry.
	var f *node
	for _, n := range c.nodes {
		if n != c.waitLeader(0) {
			f = n
			break
		}
	}
	c.stop(f)
	produceSome(10)
	c.start(f)
	before := f.view(t, 0).StartOffset()
	f.clean(t)
	if st, err := f.m.State(topic, 0); err != nil || f.view(t, 0).StartOffset() > st.HighWatermark {
		t.Fatalf("node %d: retention right after a restart moved the start from %d to %d, past the high watermark %d (%v)", f.id, before, f.view(t, 0).StartOffset(), st.HighWatermark, err)
	}
	// The replicas' log starts may differ now (each cleaned up to what
	// it had applied, at its own time): once all have applied the same,
	// retention leaves them the same again.
	produceSome(20)
	c.caughtUp(0)
	for _, n := range c.nodes {
		n.clean(t)
	}
	produceSome(5)
	c.agree(0)
	for _, n := range c.nodes {
		if n.view(t, 0).StartOffset() <= starts[n.id] {
			t.Fatalf("node %d: the second round of retention left the start at %d", n.id, n.view(t, 0).StartOffset())
		}
	}
}
