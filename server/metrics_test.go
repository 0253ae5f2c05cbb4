package server

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/store"
)

func topicMetrics(m Metrics, topic string) TopicMetrics {
	for _, t := range m.Topics {
		if t.Topic == topic {
			return t
		}
	}
	return TopicMetrics{Topic: topic}
}

func requestMetrics(m Metrics, key int16) RequestMetrics {
	for _, r := range m.Requests {
		if r.Key == key {
			return r
		}
	}
	return RequestMetrics{Key: key}
}

// TestMetricsCountProduceAndFetch checks that the traffic counters hold
// exactly what went through: the bytes of the batches stored, which the
// log holds as they arrived, and the records produced, in and then out.
func TestMetricsCountProduceAndFetch(t *testing.T) {
	ts := startServer(t, "", Options{NumPartitions: 2})
	const n = 300
	produceRecords(t, ts.client(kgo.ProducerBatchMaxBytes(4<<10), kgo.AllowAutoTopicCreation()), "counted", n, "m")
	var logBytes, end int64
	for p := range int32(2) {
		l, err := ts.st.Log("counted", p)
		if err != nil {
			t.Fatal(err)
		}
		logBytes += l.Size()
		end += l.EndOffset()
	}
	if end != n {
		t.Fatalf("the log holds %d records, want %d", end, n)
	}
	m := ts.srv.Metrics()
	if got := topicMetrics(m, "counted"); got.BytesIn != logBytes || got.MessagesIn != n || got.BytesOut != 0 || got.MessagesOut != 0 {
		t.Fatalf("after producing: %+v, want %d bytes and %d messages in, nothing out", got, logBytes, n)
	}
	consumeAll(t, ts.addr, "counted", n)
	m = ts.srv.Metrics()
	if got := topicMetrics(m, "counted"); got.BytesIn != logBytes || got.MessagesIn != n || got.BytesOut != logBytes || got.MessagesOut != n {
		t.Fatalf("after consuming: %+v, want %d bytes and %d messages in and out", got, logBytes, n)
	}
	for _, key := range []int16{int16(kmsg.Produce), int16(kmsg.Fetch), int16(kmsg.Metadata), int16(kmsg.ApiVersions)} {
		// A request is counted once its answer is written, which the
		// client may have read first.
		testutil.WaitFor(t, "a request counted", func() bool { return requestMetrics(ts.srv.Metrics(), key).Requests > 0 })
		r := requestMetrics(ts.srv.Metrics(), key)
		if r.Requests == 0 || r.Latency.Count != uint64(r.Requests) || r.Name != kmsg.NameForKey(key) {
			t.Errorf("key %d: %+v, want requests counted in the histogram", key, r)
		}
		if len(r.Latency.Cumulative) != len(r.Latency.Bounds) || r.Latency.Cumulative[len(r.Latency.Bounds)-1] > r.Latency.Count {
			t.Errorf("key %d: buckets %v of %d requests", key, r.Latency.Cumulative, r.Latency.Count)
		}
	}
	if m.ConnectionsAccepted < 2 || m.ConnectionsOpen < 1 {
		t.Errorf("connections: %d accepted, %d open", m.ConnectionsAccepted, m.ConnectionsOpen)
	}
	var parts int
	for _, p := range m.Partitions {
		if p.Topic == "counted" {
			parts++
			if p.Err != nil || p.Size == 0 || p.StartOffset != 0 || p.EndOffset == 0 {
				t.Errorf("partition %+v", p)
			}
		}
	}
	if parts != 2 {
		t.Errorf("%d partitions of counted in the snapshot, want 2", parts)
	}
}

// TestMetricsGroupLagAndParkedFetch checks the figures read at snapshot
// time (a group's lag from its commit) and the parked-fetch gauge.
func TestMetricsGroupLagAndParkedFetch(t *testing.T) {
	ts := startServer(t, "", Options{})
	produceRecords(t, ts.client(kgo.AllowAutoTopicCreation()), "lagged", 10, "g")
	if err := ts.st.Commit("readers", "lagged", map[int32]int64{0: 4}); err != nil {
		t.Fatal(err)
	}
	m := ts.srv.Metrics()
	var found bool
	for _, g := range m.GroupLag {
		if g.Group == "readers" && g.Topic == "lagged" && g.Partition == 0 {
			found = true
			if g.Committed != 4 || g.End != 10 || g.Lag != 6 {
				t.Errorf("lag %+v, want committed 4, end 10, lag 6", g)
			}
		}
	}
	if !found {
		t.Fatalf("no lag for group readers in %+v", m.GroupLag)
	}
	// The store alone gives the same figures of what it holds.
	sm := StoreMetrics(ts.st)
	if !slices.Equal(sm.GroupLag, m.GroupLag) || !slices.Equal(sm.Partitions, m.Partitions) || sm.Topics != nil {
		t.Fatalf("StoreMetrics: %+v\nServer.Metrics: %+v", sm, m)
	}

	// A consumer at the end parks its fetch until something arrives.
	cl := ts.client(kgo.ConsumeTopics("lagged"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(30e9))
	polled := make(chan int, 1)
	go func() { polled <- len(cl.PollFetches(testCtx(t)).Records()) }()
	testutil.WaitFor(t, "a parked fetch", func() bool { return ts.srv.Metrics().ParkedFetches == 1 })
	produceRecords(t, ts.client(), "lagged", 1, "wake")
	if got := <-polled; got != 1 {
		t.Fatalf("polled %d records, want 1", got)
	}
	// The consumer's next fetch parks again; its connection's end answers
	// it.
	cl.Close()
	testutil.WaitFor(t, "no parked fetch", func() bool { return ts.srv.Metrics().ParkedFetches == 0 })
}

// TestMetricsCleaner: the snapshot carries the store's cleaner figures:
// after a round under retention.bytes 1, the bytes deleted are what the
// partition shrank by; and its Logs' counters. A read-only store's
// snapshot has neither.
func TestMetricsCleaner(t *testing.T) {
	ts := startServer(t, "", Options{})
	cfg := store.DefaultTopicConfig()
	cfg.SegmentBytes, cfg.MaxMessageBytes, cfg.SegmentIndexBytes, cfg.RetentionBytes = 2<<10, 1<<10, 4096, 1
	if err := ts.st.CreateTopic("retained", 1, cfg); err != nil {
		t.Fatal(err)
	}
	produceRecords(t, ts.client(kgo.ProducerBatchMaxBytes(1<<10)), "retained", 100, "r")
	l, err := ts.st.Log("retained", 0)
	if err != nil {
		t.Fatal(err)
	}
	before := l.Size()
	if m := ts.srv.Metrics(); m.Cleaner == nil || m.Cleaner.Passes != 0 || m.Cleaner.BytesDeleted != 0 {
		t.Fatalf("cleaner figures before a round: %+v", m.Cleaner)
	}
	if err := ts.st.CleanOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := ts.srv.Metrics()
	deleted := before - l.Size()
	if m.Cleaner == nil || deleted <= 0 || m.Cleaner.BytesDeleted != deleted || m.Cleaner.Passes != 1 {
		t.Fatalf("after a round that deleted %d bytes: %+v", deleted, m.Cleaner)
	}
	if sm := StoreMetrics(ts.st); sm.Cleaner == nil || sm.Cleaner.BytesDeleted != deleted {
		t.Errorf("StoreMetrics' cleaner figures: %+v", sm.Cleaner)
	}
	// Filling the segments that retention deleted rolled the log.
	if m.Logs == nil || m.Logs.Rolls < 1 || m.Logs.Opens < 1 {
		t.Errorf("the Logs' counters: %+v", m.Logs)
	}
	ro, err := store.Open(ts.dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if sm := StoreMetrics(ro); sm.Cleaner != nil || sm.Logs != nil {
		t.Errorf("a read-only store's snapshot has cleaner figures or Log counters: %+v, %+v", sm.Cleaner, sm.Logs)
	}
}

// TestClusterMetricsCount: the leader's own partitions with an ISR short
// of the replicas are under-replicated, a partition without a leader is
// offline wherever it is seen from.
func TestClusterMetricsCount(t *testing.T) {
	parts := map[string][]PartitionInfo{
		"a": {
			{Partition: 0, Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}},
			{Partition: 1, Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}},
			{Partition: 2, Leader: 2, LeaderEpoch: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{2}},
		},
		"b": {{Partition: 0, Leader: -1, LeaderEpoch: 5, Replicas: []int32{2, 3}}},
	}
	m := countCluster(1, []string{"a", "b"}, parts)
	if m.LeaderPartitions != 2 || m.UnderReplicated != 1 || m.Offline != 1 || len(m.Partitions) != 4 {
		t.Fatalf("%+v: want 2 led, 1 under-replicated, 1 offline, 4 partitions", m)
	}
	if p := m.Partitions[3]; p.Topic != "b" || p.Leader != -1 || p.LeaderEpoch != 5 || p.Replicas != 2 || p.InSync != 0 {
		t.Fatalf("partition b-0: %+v", p)
	}
}

// TestClusterMetricsFromNode: a cluster node's snapshot has the cluster's
// view, and a leader change shows as a new leader epoch.
func TestClusterMetricsFromNode(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "c", 2)
	fc.setLeader("c", 1, false)
	m := ts.srv.Metrics().Cluster
	if m == nil {
		t.Fatal("no cluster figures on a cluster node")
	}
	// The fake's replicas are 1, 2, 3 with 1 and 2 in sync: node 1 leads
	// c-0 (under-replicated), node 2 c-1.
	var c0, c1 ClusterPartitionMetrics
	for _, p := range m.Partitions {
		if p.Topic == "c" && p.Partition == 0 {
			c0 = p
		}
		if p.Topic == "c" && p.Partition == 1 {
			c1 = p
		}
	}
	if c0.Leader != 1 || c1.Leader != 2 || c0.Replicas != 3 || c0.InSync != 2 {
		t.Fatalf("c-0 %+v, c-1 %+v", c0, c1)
	}
	if m.Brokers != 3 || m.ActiveController || m.UnderReplicated != m.LeaderPartitions || m.Offline != 0 {
		t.Fatalf("%+v", m)
	}
	fc.setLeader("c", 1, true)
	after := ts.srv.Metrics().Cluster
	for _, p := range after.Partitions {
		if p.Topic == "c" && p.Partition == 1 && (p.Leader != 1 || p.LeaderEpoch != c1.LeaderEpoch+1) {
			t.Fatalf("after the election: %+v, was %+v", p, c1)
		}
	}
	if after.LeaderPartitions != m.LeaderPartitions+1 {
		t.Fatalf("led %d partitions after taking c-1, %d before", after.LeaderPartitions, m.LeaderPartitions)
	}

	// What the cluster's write path stored is counted in as on one node.
	produceRecords(t, ts.client(), "c", 50, "x")
	var size int64
	for p := range int32(2) {
		l, err := ts.st.Log("c", p)
		if err != nil {
			t.Fatal(err)
		}
		size += l.Size()
	}
	if got := topicMetrics(ts.srv.Metrics(), "c"); got.BytesIn != size || got.MessagesIn != 50 {
		t.Fatalf("in a cluster: %+v, want %d bytes and 50 messages in", got, size)
	}
}

// TestClusterMetricsGroupLag: a cluster node's commits come from its
// offsets partitions, and their lag is counted to the high watermark, the
// end a consumer can read to, not the log end.
func TestClusterMetricsGroupLag(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "g", 1)
	produceRecords(t, ts.client(), "g", 10, "l")
	fc.holdHW("g", 0, 6)
	c := dialRaw(t, ts.addr)
	testutil.WaitFor(t, "the offsets partition is loaded", func() bool { return commitOffset(t, c, "grp", "g", 0, 2) == 0 })
	var got []GroupLagMetrics
	for _, g := range ts.srv.Metrics().GroupLag {
		if g.Group == "grp" {
			got = append(got, g)
		}
	}
	want := []GroupLagMetrics{{Group: "grp", Topic: "g", Partition: 0, Committed: 2, End: 6, Lag: 4}}
	if !slices.Equal(got, want) {
		t.Fatalf("lag %+v, want %+v", got, want)
	}
}
