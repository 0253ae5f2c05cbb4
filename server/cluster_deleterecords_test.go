package server

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// TestClusterDeleteRecords: in a cluster, DeleteRecords goes through the
// Cluster (never the node's store alone), and its errors come back as
// Kafka's codes: NOT_LEADER_OR_FOLLOWER on a follower, OFFSET_OUT_OF_RANGE
// past the high watermark, REQUEST_TIMED_OUT when the entry does not
// commit in the request's timeout, UNKNOWN_TOPIC_OR_PARTITION; -1 is the
// high watermark, and the offsets topic and a topic that only compacts
// (POLICY_VIOLATION, as Kafka) are refused before the Cluster is asked.
// A request's partitions are deleted at once.
func TestClusterDeleteRecords(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "d", 1)
	c := dialRaw(t, ts.addr)
	for i := range 3 {
		if rp := produceOne(t, c, 9, "d", makeBatch(t, record.None, -1, 0, 0, 10, fmt.Sprint(i))); rp.ErrorCode != 0 {
			t.Fatalf("produce %d: error %d", i, rp.ErrorCode)
		}
	}
	del := func(topic string, off int64, timeout int32) kmsg.DeleteRecordsResponseTopicPartition {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.SetVersion(2)
		req.TimeoutMillis = timeout
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: off}}}}
		return c.do(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
	}
	fc.holdHW("d", 0, 20)
	if got := del("d", 15, 0); got.ErrorCode != 0 || got.LowWatermark != 15 {
		t.Fatalf("delete to 15: %+v", got)
	}
	if got := del("d", 21, 0); got.ErrorCode != kerr.OffsetOutOfRange.Code || got.LowWatermark != -1 {
		t.Fatalf("delete past the high watermark 20: %+v", got)
	}
	if got := del("d", -2, 0); got.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("delete to -2: %+v", got)
	}
	if got := del("d", -1, 0); got.ErrorCode != 0 || got.LowWatermark != 20 {
		t.Fatalf("delete to the high watermark 20: %+v", got)
	}
	if l, err := ts.st.Log("d", 0); err != nil || l.StartOffset() != 20 {
		t.Fatalf("the store's start after the deletes: %v", err)
	}
	fc.setLeader("d", 0, false)
	if got := del("d", 25, 0); got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("delete on a follower: %+v", got)
	}
	fc.setLeader("d", 0, true)
	// The request's timeout bounds the wait for the commit.
	fc.set(func(fc *fakeCluster) { fc.deleteHang = true })
	if got := del("d", 25, 50); got.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("no commit in the timeout: %+v", got)
	}
	fc.set(func(fc *fakeCluster) {
		fc.deleteHang = false
		fc.deleteErr = fmt.Errorf("fake: %w: gone", store.ErrUnknownTopic)
	})
	if got := del("gone", 0, 0); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", got)
	}
	fc.set(func(fc *fakeCluster) { fc.deleteErr = nil })
	// A topic that only compacts is refused, as Kafka refuses it.
	cfg := store.DefaultTopicConfig()
	if err := cfg.Set("cleanup.policy", "compact"); err != nil {
		t.Fatal(err)
	}
	if err := ts.st.CreateTopic("compacted", 1, cfg); err != nil {
		t.Fatal(err)
	}
	if got := del("compacted", -1, 0); got.ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("delete records of a compacted topic: %+v", got)
	}
	if got := del(store.OffsetsTopic, -1, 0); got.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("delete records of the offsets topic: %+v", got)
	}
	// A request's partitions are deleted at once, each waiting for its
	// own commit.
	createTestTopic(t, ts.st, "two", 2)
	gate := make(chan struct{})
	fc.set(func(fc *fakeCluster) { fc.deleteGate = gate })
	answer := make(chan *kmsg.DeleteRecordsResponse, 1)
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.SetVersion(2)
	req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "two", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}, {Partition: 1, Offset: -1}}}}
	go func() { answer <- c.do(req).(*kmsg.DeleteRecordsResponse) }()
	testutil.WaitFor(t, "both partitions' deletes in flight at once", func() bool {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		return fc.deleting == 2
	})
	close(gate)
	for i, p := range (<-answer).Topics[0].Partitions {
		if p.Partition != int32(i) || p.ErrorCode != 0 || p.LowWatermark != 0 {
			t.Errorf("partition %d of two: %+v", i, p)
		}
	}
	fc.set(func(fc *fakeCluster) { fc.deleteGate = nil })
	fc.mu.Lock()
	asked := slices.Clone(fc.deletes)
	fc.mu.Unlock()
	if want := []int64{15, 21, -2, -1, 25, 25, 0, -1, -1}; !slices.Equal(asked, want) {
		t.Errorf("the Cluster was asked for %v, want %v (never for the offsets topic)", asked, want)
	}
}
