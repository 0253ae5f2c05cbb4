package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/internal/nemesis"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/server"
	"github.com/twmb/franz-go/pkg/kgo"
)

// keyedBatch is a producer's batch of the records key=value, in order.
func keyedBatch(t *testing.T, kv ...string) []byte {
	t.Helper()
	bld := record.NewBuilder(record.None)
	for i := 0; i < len(kv); i += 2 {
		if err := bld.Add(record.Record{Offset: int64(i / 2), Timestamp: 1_700_000_000_000, Key: []byte(kv[i]), Value: []byte(kv[i+1])}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(b)
}

// produceCommitted writes b to topic's partition 0 with acks=all through
// whichever running node leads it, until one commits it.
func (c *tcluster) produceCommitted(topic string, b []byte) {
	c.t.Helper()
	testutil.WaitFor(c.t, "a batch committed", func() bool {
		for _, tn := range c.running() {
			st, err := tn.node.State(topic, 0)
			if err != nil || !st.Leader {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = tn.node.Produce(ctx, topic, 0, bytes.Clone(b), -1)
			cancel()
			if errors.Is(err, server.ErrNotLeader) || errors.Is(err, context.DeadlineExceeded) {
				return false
			}
			if err != nil {
				c.t.Fatal(err)
			}
			return true
		}
		return false
	})
}

// gaps counts the places in tn's partition 0 of topic, from offset from
// to upTo, where the next record is not at the next offset: what the
// cleaner removed.
func gaps(t *testing.T, tn *tnode, topic string, from, upTo int64) int {
	t.Helper()
	v, err := tn.st.Log(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, next := 0, from
	for r, err := range v.Records(from) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset >= upTo {
			break
		}
		if r.Offset != next {
			n++
		}
		next = r.Offset + 1
	}
	return n
}

// TestCompactedCatchUpBySnapshot: on a compacted topic of small
// segments, a follower stops; many writes overwrite a few keys; the
// leader's cleaner compacts them, and its raft log gives up its entries
// as it applies them (replica.Store.CompactTo), past what the stopped
// node has. Restarted, the node catches up by a snapshot: it keeps its own
// batches and copies the leader's compacted ones as they are, gaps and
// all, so its partition is the leader's batch by batch up to the high
// watermark. It then leads, and serves every key's last value to a Kafka
// client; fsck finds both directories clean.
func TestCompactedCatchUpBySnapshot(t *testing.T) {
	c := newServedCluster(t, 3)
	const topic = "compacted"
	configs := map[string]string{
		"cleanup.policy":            "compact",
		"segment.bytes":             "4096",
		"max.message.bytes":         "2048",
		"min.cleanable.dirty.ratio": "0.01",
	}
	if err := c.controller().node.CreateTopic(ctxTimeout(t), topic, 1, 3, configs); err != nil {
		t.Fatal(err)
	}
	last := map[string]string{}
	write := func(kv ...string) {
		t.Helper()
		c.produceCommitted(topic, keyedBatch(t, kv...))
		for i := 0; i < len(kv); i += 2 {
			last[kv[i]] = kv[i+1]
		}
	}
	// Keys written once: compaction keeps their batches as they are, so
	// the follower's own batches stay the leader's.
	for i := range 8 {
		write(fmt.Sprintf("once-%d", i), fmt.Sprintf("only value %d", i))
	}
	l := c.leaderOf(topic, 0)
	caughtUp(t, c.tcluster, topic)
	var f, other *tnode
	for _, tn := range c.running() {
		switch {
		case tn == l:
		case f == nil:
			f = tn
		default:
			other = tn
		}
	}
	fv, err := f.st.Log(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	stoppedAt := fv.EndOffset()
	c.stopNode(f.id)

	// Ten keys overwritten over many segments.
	for i := range 400 {
		kv := []string{fmt.Sprintf("k-%d", i%10), fmt.Sprintf("value %d of k-%d %040d", i, i%10, 0)}
		if i%3 == 0 {
			kv = append(kv, fmt.Sprintf("k-%d", (i+5)%10), fmt.Sprintf("value %d of k-%d", i, (i+5)%10))
		}
		write(kv...)
	}
	l = c.leaderOf(topic, 0)
	res, err := l.st.Clean(ctxTimeout(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("cleaning %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	}
	lst, err := l.node.State(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if gaps(t, l, topic, 0, lst.HighWatermark) == 0 {
		t.Fatal("the leader's cleaner compacted nothing")
	}
	c.restartNode(f.id)
	write("after", "the restart")
	hw := caughtUp(t, c.tcluster, topic)
	if st := f.node.mr.Stats(); st.SnapshotsDone == 0 {
		t.Fatalf("the node caught up with no snapshot: %+v", st)
	}
	// The copy came from the leader's compacted log, gaps and all.
	if gaps(t, f, topic, stoppedAt, hw) == 0 {
		t.Fatalf("node %d holds no gap past offset %d, where it stopped", f.id, stoppedAt)
	}
	// Batch for batch the leader's, byte for byte, up to the high
	// watermark: its own batches below stoppedAt, which compaction left
	// as they were, then the leader's.
	vs, err := nemesis.CompareReplicas(c.fs, []string{filepath.Join(l.dir, topic+"-0"), filepath.Join(f.dir, topic+"-0")}, hw)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Error(v)
	}

	// The caught-up node leads: the third stops, the leader hands over.
	c.stopNode(other.id)
	testutil.WaitFor(t, fmt.Sprintf("node %d leads %s-0", f.id, topic), func() bool {
		if err := l.node.HandOver(ctxTimeout(t)); err != nil {
			t.Logf("hand over: %v", err)
		}
		st, err := f.node.State(topic, 0)
		return err == nil && st.Leader
	})
	write("led by", fmt.Sprintf("node %d", f.id))
	fst, err := f.node.State(topic, 0)
	if err != nil || !fst.Leader {
		t.Fatalf("node %d no longer leads: %+v, %v", f.id, fst, err)
	}
	cl := c.client(t, kgo.SeedBrokers(f.kafka), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]string{}
	var next int64
	for next < fst.HighWatermark {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
		fs := cl.PollFetches(ctx)
		err := ctx.Err()
		cancel()
		if err != nil {
			t.Fatalf("read up to %d of %d: %v", next, fst.HighWatermark, err)
		}
		for _, fe := range fs.Errors() {
			t.Logf("fetch error (retried): %v", fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)] = string(r.Value)
			next = r.Offset + 1
		})
	}
	if len(got) != len(last) {
		t.Errorf("read %d keys, wrote %d", len(got), len(last))
	}
	for k, v := range last {
		if got[k] != v {
			t.Errorf("key %s: read %q, last written %q", k, got[k], v)
		}
	}

	for _, tn := range []*tnode{l, f} {
		c.stopNode(tn.id)
		dir := filepath.Join(tn.dir, topic+"-0")
		rep, err := fsck.Check(c.fs, dir, fsck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean() {
			t.Fatalf("node %d %s: fsck: %+v", tn.id, dir, rep.Problems)
		}
	}
}

// caughtUp waits until every running replica of topic's partition 0 has
// the leader's log end and high watermark, and returns the high
// watermark.
func caughtUp(t *testing.T, c *tcluster, topic string) int64 {
	t.Helper()
	var hw int64
	testutil.WaitFor(t, fmt.Sprintf("every replica of %s-0 has the leader's log", topic), func() bool {
		var end int64 = -1
		for _, tn := range c.running() {
			st, err := tn.node.State(topic, 0)
			if err == nil && st.Leader {
				v, err := tn.st.Log(topic, 0)
				if err != nil {
					return false
				}
				hw, end = st.HighWatermark, v.EndOffset()
			}
		}
		if end < 0 || hw != end {
			return false
		}
		for _, tn := range c.running() {
			v, err := tn.st.Log(topic, 0)
			st, serr := tn.node.State(topic, 0)
			if err != nil || serr != nil || v.EndOffset() != end || st.HighWatermark != hw {
				return false
			}
		}
		return true
	})
	return hw
}
