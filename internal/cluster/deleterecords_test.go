package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/internal/testutil"
)

// TestDeleteRecordsReplicated: DeleteRecords through the partition's
// leader moves the log start on every replica: the leader answers with
// the offset as the low watermark, a follower answers
// NOT_LEADER_OR_FOLLOWER, an offset past the high watermark is
// OFFSET_OUT_OF_RANGE; consumers from the start begin at the offset, and
// one asking below it is reset there. A replica stopped before the delete
// moves its start when it catches up, one stopped after it starts there
// again, and once the leader stops the new leader's earliest offset is
// still the offset. -1 deletes up to the high watermark. The replicas hold
// the same records from the start, and fsck finds each directory clean.
func TestDeleteRecordsReplicated(t *testing.T) {
	c := newServedCluster(t, 3)
	const topic = "dr"
	ctx := ctxTimeout(t)
	if err := c.controller().node.CreateTopic(ctx, topic, 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	cl := c.client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	// One record a batch: offset n is the n-th record produced, but for
	// raft's own entries (the DeleteRecords entries) among them.
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v-%03d", i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// deleteOn asks node id, again if the connection fails (one a
	// stopped node's leaving cut).
	deleteOn := func(id int32, off int64) kmsg.DeleteRecordsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = 10_000
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: off}}}}
		var r kmsg.DeleteRecordsResponseTopicPartition
		testutil.WaitFor(t, fmt.Sprintf("node %d to answer DeleteRecords to %d", id, off), func() bool {
			resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
			if err != nil {
				t.Logf("DeleteRecords on node %d: %v (retried)", id, err)
				return false
			}
			r = resp.Topics[0].Partitions[0]
			return true
		})
		return r
	}
	// deleteOnLeader asks the leader, again if the leadership moved
	// between finding it and asking.
	deleteOnLeader := func(off int64) kmsg.DeleteRecordsResponseTopicPartition {
		t.Helper()
		var r kmsg.DeleteRecordsResponseTopicPartition
		testutil.WaitFor(t, fmt.Sprintf("the leader to answer DeleteRecords to %d", off), func() bool {
			r = deleteOn(c.leaderOf(topic, 0).id, off)
			return r.ErrorCode != kerr.NotLeaderForPartition.Code
		})
		return r
	}
	startOf := func(tn *tnode) int64 {
		t.Helper()
		v, err := tn.st.Log(topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		return v.StartOffset()
	}
	waitStart := func(tn *tnode, want int64) {
		t.Helper()
		testutil.WaitFor(t, fmt.Sprintf("node %d's log start at %d", tn.id, want), func() bool { return startOf(tn) == want })
	}
	hwOf := func(tn *tnode) int64 {
		t.Helper()
		st, err := tn.node.State(topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		return st.HighWatermark
	}

	produce(0, 50)
	l := c.leaderOf(topic, 0)
	// lag stops with the first 50 records and misses the delete.
	lag := c.follower(l)
	testutil.WaitFor(t, "the follower to hold the first 50 records", func() bool { return hwOf(lag) >= 50 })
	c.stopNode(lag.id)
	produce(50, 100)

	const at = 40
	if r := deleteOnLeader(at); r.ErrorCode != 0 || r.LowWatermark != at {
		t.Fatalf("delete to %d: %+v", at, r)
	}
	l = c.leaderOf(topic, 0)
	if got := startOf(l); got != at {
		t.Fatalf("the leader answered before its own start moved: %d", got)
	}
	for _, tn := range c.running() {
		waitStart(tn, at)
		if tn != l {
			if r := deleteOn(tn.id, at+5); r.ErrorCode != kerr.NotLeaderForPartition.Code {
				t.Errorf("delete on follower %d: %+v, want NOT_LEADER_OR_FOLLOWER", tn.id, r)
			}
		}
	}
	if hw := hwOf(l); deleteOnLeader(hw+1).ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Errorf("delete past the high watermark %d: not OFFSET_OUT_OF_RANGE", hw)
	}

	// A consumer from the start begins at the offset; one asking for an
	// offset below it is reset to the start.
	firstRead := func(opts ...kgo.Opt) int64 {
		t.Helper()
		cons := c.client(t, append(opts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		for {
			pctx, cancel := context.WithTimeout(ctx, testutil.WaitTimeout)
			fs := cons.PollRecords(pctx, 1)
			err := pctx.Err()
			cancel()
			if err != nil {
				t.Fatalf("no record read: %v", err)
			}
			for _, fe := range fs.Errors() {
				t.Logf("fetch error (retried): %v", fe.Err)
			}
			if rs := fs.Records(); len(rs) > 0 {
				return rs[0].Offset
			}
		}
	}
	if got := firstRead(kgo.ConsumeTopics(topic)); got != at {
		t.Errorf("a consumer from the start read offset %d first, want %d", got, at)
	}
	if got := firstRead(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(10)}})); got != at {
		t.Errorf("a consumer at offset 10 read offset %d first, want %d (reset to the start)", got, at)
	}

	// The replica that missed the delete catches up and moves its start.
	c.restartNode(lag.id)
	waitStart(lag, at)
	// A replica stopped after the delete starts there again.
	l = c.leaderOf(topic, 0)
	f := c.follower(l)
	c.stopNode(f.id)
	c.restartNode(f.id)
	if got := startOf(f); got != at {
		t.Errorf("node %d restarted with its log start at %d, want %d", f.id, got, at)
	}

	// The leader stops: the new one's earliest offset is still the
	// offset.
	c.stopNode(l.id)
	nl := c.leaderOf(topic, 0)
	testutil.WaitFor(t, fmt.Sprintf("node %d, the new leader, to answer ListOffsets", nl.id), func() bool {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -2, CurrentLeaderEpoch: -1}}}}
		resp, err := req.RequestWith(ctx, cl.Broker(int(nl.id)))
		if err != nil {
			// A connection the stopped node's leaving cut: again.
			t.Logf("ListOffsets on node %d: %v (retried)", nl.id, err)
			return false
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Logf("ListOffsets on node %d: %v (retried)", nl.id, kerr.ErrorForCode(p.ErrorCode))
			return false
		}
		if p.Offset != at {
			t.Fatalf("the new leader's earliest offset is %d, want %d", p.Offset, at)
		}
		return true
	})

	// -1 is the high watermark, on every replica.
	produce(100, 110)
	r := deleteOnLeader(-1)
	if r.ErrorCode != 0 || r.LowWatermark < 110 {
		t.Fatalf("delete to the high watermark: %+v", r)
	}
	// The old leader, stopped before this delete and behind its offset,
	// restarts at the leader's start (a snapshot: Kafka's
	// truncateFullyAndStartAt), and then the replicas hold the same
	// records from the start.
	c.restartNode(l.id)
	for _, tn := range c.running() {
		waitStart(tn, r.LowWatermark)
	}
	produce(110, 120)
	hw := hwOf(c.leaderOf(topic, 0))
	testutil.WaitFor(t, "every replica to reach the high watermark", func() bool {
		for _, tn := range c.running() {
			if v, err := tn.st.Log(topic, 0); err != nil || v.EndOffset() < hw {
				return false
			}
		}
		return true
	})
	want := recordsFrom(t, c.running()[0], topic, r.LowWatermark, hw)
	if len(want) != 10 {
		t.Errorf("%d records after the start, want the 10 produced since", len(want))
	}
	for _, tn := range c.running()[1:] {
		if got := recordsFrom(t, tn, topic, r.LowWatermark, hw); !slices.Equal(got, want) {
			t.Errorf("node %d holds %q from the start, node %d %q", tn.id, got, c.running()[0].id, want)
		}
	}
	// Every replica's directory is a clean Kafka partition directory,
	// the DeleteRecords entries' control batches in it.
	for _, tn := range c.running() {
		c.stopNode(tn.id)
		rep, err := fsck.Check(c.fs, filepath.Join(tn.dir, topic+"-0"), fsck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean() || rep.Stats.ControlBatches == 0 {
			t.Errorf("node %d: fsck: %+v, %d control batches", tn.id, rep.Problems, rep.Stats.ControlBatches)
		}
	}
}

// recordsFrom lists tn's records of topic's partition 0 in [from, to),
// as offset:value.
func recordsFrom(t *testing.T, tn *tnode, topic string, from, to int64) []string {
	t.Helper()
	v, err := tn.st.Log(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for r, err := range v.Records(from) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset >= to {
			break
		}
		out = append(out, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	return out
}
