package server

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/kmsgtest"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

func createTestTopic(t *testing.T, st *store.Store, name string, n int) {
	t.Helper()
	if err := st.CreateTopic(name, n, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
}

func TestClusterMetadata(t *testing.T) {
	var logs testutil.LockedBuffer
	ts, fc := startCluster(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	createTestTopic(t, ts.st, "m", 2)
	fc.setLeader("m", 1, false)
	c := dialRaw(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("m")
	req.Topics = append(req.Topics, rt)
	resp := c.do(req).(*kmsg.MetadataResponse)
	if len(resp.Brokers) != 3 || resp.ControllerID != 2 || *resp.ClusterID != "fake-cluster" {
		t.Fatalf("brokers %+v controller %d cluster %v", resp.Brokers, resp.ControllerID, resp.ClusterID)
	}
	if b := resp.Brokers[1]; b.NodeID != 2 || b.Host != "h2" || b.Port != 9002 || b.Rack == nil || *b.Rack != "r2" {
		t.Fatalf("broker 2: %+v", b)
	}
	ps := resp.Topics[0].Partitions
	if len(ps) != 2 || ps[0].Leader != 1 || ps[0].LeaderEpoch != 0 || ps[1].Leader != 2 || ps[1].LeaderEpoch != 1 {
		t.Fatalf("partitions: %+v", ps)
	}
	if !slices.Equal(ps[0].Replicas, []int32{1, 2, 3}) || !slices.Equal(ps[0].ISR, []int32{1, 2}) || !slices.Equal(ps[0].OfflineReplicas, []int32{3}) {
		t.Fatalf("replicas %v isr %v offline %v", ps[0].Replicas, ps[0].ISR, ps[0].OfflineReplicas)
	}

	// A topic asked for by name is created through the controller with
	// the cluster's default replication factor.
	// While too few brokers are live for the default replication factor
	// (a cluster starting), the client is told to retry; then the topic
	// is created.
	rt.Topic = kmsg.StringPtr("auto")
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	req.AllowAutoTopicCreation = true
	fc.set(func(fc *fakeCluster) {
		fc.createErr = fmt.Errorf("fake: 3 with 1 live brokers: %w", ErrInvalidReplicationFactor)
	})
	resp = c.do(req).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("auto-create with too few live brokers: %+v", resp.Topics[0])
	}
	// The log says why the topic is not made (clients only retry): once
	// for a retry soon after.
	c.do(req)
	if got := logs.String(); strings.Count(got, "waits for enough live brokers") != 1 || !strings.Contains(got, "topic=auto") || !strings.Contains(got, "1 live brokers") {
		t.Fatalf("the server's log with a topic waiting for brokers: %q", got)
	}
	fc.set(func(fc *fakeCluster) { fc.createErr = nil })
	resp = c.do(req).(*kmsg.MetadataResponse)
	if resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("auto-created topic: %+v", resp.Topics[0])
	}
	if cs := fc.creates(); len(cs) != 3 || cs[2].name != "auto" || cs[2].rf != -1 || cs[2].partitions != 1 {
		t.Fatalf("create calls: %+v", cs)
	}
	if cs := fc.creates(); len(cs[2].configs) != 0 {
		t.Fatalf("auto-create with the default topic config asked for overrides: %+v", cs[2])
	}

	// DescribeCluster from the Cluster too.
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.SetVersion(1)
	dc.EndpointType = 1
	dr := c.do(dc).(*kmsg.DescribeClusterResponse)
	if dr.ErrorCode != 0 || dr.ControllerID != 2 || len(dr.Brokers) != 3 || dr.ClusterID != "fake-cluster" {
		t.Fatalf("describe cluster: %+v", dr)
	}
}

func TestClusterProduceErrors(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "p", 1)
	c := dialRaw(t, ts.addr)
	b := func() []byte { return makeBatch(t, record.None, -1, 0, 0, 1, "x") }
	if rp := produceOne(t, c, 9, "p", b()); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("produce to the leader: %+v", rp)
	}
	// acks -1 and 1 are passed through; acks 0 is written as 1 and not
	// answered.
	for _, acks := range []int16{1, 0, -1} {
		if acks == 0 {
			c.send(produceReq(9, 0, "p", 0, b()))
		} else if rp := c.do(produceReq(9, acks, "p", 0, b())).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
			t.Fatalf("acks %d: error %d", acks, rp.ErrorCode)
		}
		want := acks
		if acks == 0 {
			want = 1
			testutil.WaitFor(t, "the acks=0 batch is written", func() bool {
				fc.mu.Lock()
				defer fc.mu.Unlock()
				return fc.produced == 3
			})
		}
		fc.mu.Lock()
		got := fc.acks
		fc.mu.Unlock()
		if got != want {
			t.Fatalf("produce with acks %d: the Cluster was asked for acks %d", acks, got)
		}
	}
	fc.setLeader("p", 0, false)
	if rp := produceOne(t, c, 9, "p", b()); rp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a follower: error %d", rp.ErrorCode)
	}
	fc.setLeader("p", 0, true)
	fc.set(func(fc *fakeCluster) {
		fc.produceErr = fmt.Errorf("fake: %w", ErrNotEnoughReplicas)
	})
	if rp := produceOne(t, c, 9, "p", b()); rp.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("no majority: error %d", rp.ErrorCode)
	}
	fc.set(func(fc *fakeCluster) {
		fc.produceErr = fmt.Errorf("fake: %w", ErrNotEnoughReplicasAfterAppend)
	})
	if rp := produceOne(t, c, 9, "p", b()); rp.ErrorCode != kerr.NotEnoughReplicasAfterAppend.Code {
		t.Fatalf("committed, min.insync.replicas not reached: error %d", rp.ErrorCode)
	}
	fc.set(func(fc *fakeCluster) {
		fc.produceErr = nil
		fc.gate = make(chan struct{}) // never released: the replicas never confirm
	})
	req := produceReq(9, -1, "p", 0, b())
	req.TimeoutMillis = 50
	if rp := c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; rp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("no confirmation within the request's timeout: error %d", rp.ErrorCode)
	}
	// A batch the replicas could not all store is refused before it is
	// replicated.
	bad := b()
	bad[len(bad)-1] ^= 0xff
	if rp := produceOne(t, c, 9, "p", bad); rp.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("corrupt batch: error %d", rp.ErrorCode)
	}
	if rp := produceOne(t, c, 9, store.OffsetsTopic, b()); rp.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to the offsets topic: error %d", rp.ErrorCode)
	}
}

// TestClusterFetchBelowHW: records above the high watermark are not
// served, an offset between it and the log end parks the fetch instead of
// being out of range, and the Cluster's notification wakes it.
func TestClusterFetchBelowHW(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "f", 1)
	c := dialRaw(t, ts.addr)
	fc.holdHW("f", 0, 1)
	for i := range 3 {
		if rp := produceOne(t, c, 9, "f", makeBatch(t, record.None, -1, 0, 0, 1, fmt.Sprint(i))); rp.ErrorCode != 0 {
			t.Fatalf("produce %d: error %d", i, rp.ErrorCode)
		}
	}
	fr := c.do(fetchReq(12, 0, "f", map[int32]int64{0: 0})).(*kmsg.FetchResponse)
	p := fr.Topics[0].Partitions[0]
	recs := fetchedRecords(t, p.RecordBatches)
	if p.ErrorCode != 0 || p.HighWatermark != 1 || p.LastStableOffset != 1 || len(recs) != 1 {
		t.Fatalf("fetch below the high watermark: error %d hw %d lso %d, %d records", p.ErrorCode, p.HighWatermark, p.LastStableOffset, len(recs))
	}
	p = c.do(fetchReq(12, 0, "f", map[int32]int64{0: 2})).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("fetch between the high watermark and the log end: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	if p = c.do(fetchReq(12, 0, "f", map[int32]int64{0: 4})).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch past the log end: error %d", p.ErrorCode)
	}

	parked := c.send(fetchReq(12, 60_000, "f", map[int32]int64{0: 2}))
	testutil.WaitBlocked(t, "the fetch parked", "server.(*conn).fetch(", 1)
	fc.holdHW("f", 0, 3)
	p = c.recv(fetchReq(12, 0, "f", nil), parked).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if recs = fetchedRecords(t, p.RecordBatches); p.ErrorCode != 0 || p.HighWatermark != 3 || len(recs) != 1 || string(recs[0].Value) != "2-0" {
		t.Fatalf("woken fetch: error %d hw %d records %v", p.ErrorCode, p.HighWatermark, recs)
	}

	// A parked fetch whose partition's leader moves away answers at once.
	parked = c.send(fetchReq(12, 60_000, "f", map[int32]int64{0: 3}))
	testutil.WaitBlocked(t, "the fetch parked", "server.(*conn).fetch(", 1)
	fc.setLeader("f", 0, false)
	p = c.recv(fetchReq(12, 0, "f", nil), parked).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("parked fetch after the leader moved: error %d", p.ErrorCode)
	}
}

// fetchedRecords decodes a fetch answer's uncompressed record batches.
func fetchedRecords(t *testing.T, section []byte) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	for _, kb := range fetchedBatches(t, section) {
		recs, err := kmsgtest.Records(kb.Records)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

func fetchedBatches(t *testing.T, section []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(section) > 0 {
		n := record.Batch(section).Size()
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(section[:n]); err != nil {
			t.Fatal(err)
		}
		out = append(out, kb)
		section = section[n:]
	}
	return out
}

func TestClusterLeaderEpochChecks(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "e", 1)
	c := dialRaw(t, ts.addr)
	for range 2 {
		if rp := produceOne(t, c, 9, "e", makeBatch(t, record.None, -1, 0, 0, 2, "x")); rp.ErrorCode != 0 {
			t.Fatal(rp.ErrorCode)
		}
		fc.setLeader("e", 0, true) // epochs 1 (from offset 2) and 2 (from 4)
	}
	cases := []struct {
		current int32
		code    int16
	}{{-1, 0}, {2, 0}, {1, kerr.FencedLeaderEpoch.Code}, {3, kerr.UnknownLeaderEpoch.Code}}
	for _, cs := range cases {
		fr := fetchReq(12, 0, "e", map[int32]int64{0: 0})
		fr.Topics[0].Partitions[0].CurrentLeaderEpoch = cs.current
		if p := c.do(fr).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != cs.code {
			t.Errorf("fetch, current epoch %d: error %d, want %d", cs.current, p.ErrorCode, cs.code)
		}

		lo := kmsg.NewPtrListOffsetsRequest()
		lo.SetVersion(7)
		lo.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "e"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.CurrentLeaderEpoch, lp.Timestamp = cs.current, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		p := c.do(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if p.ErrorCode != cs.code || (cs.code == 0 && (p.Offset != 4 || p.LeaderEpoch != 2)) {
			t.Errorf("list offsets, current epoch %d: %+v, want error %d, offset 4 in epoch 2", cs.current, p, cs.code)
		}

		op := offsetForEpoch(t, c, "e", cs.current, 1)
		if op.ErrorCode != cs.code || (cs.code == 0 && (op.LeaderEpoch != 1 || op.EndOffset != 4)) {
			t.Errorf("offset for epoch 1, current epoch %d: %+v, want error %d, epoch 1 ending at 4", cs.current, op, cs.code)
		}
	}
	// Latest is the high watermark, not the log end.
	fc.holdHW("e", 0, 3)
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(7)
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "e", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{CurrentLeaderEpoch: -1, Timestamp: -1}}}}
	if p := c.do(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != 3 {
		t.Fatalf("latest with the high watermark held at 3: %+v", p)
	}
	fc.setLeader("e", 0, false)
	if op := offsetForEpoch(t, c, "e", -1, 1); op.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("offset for epoch on a follower: error %d", op.ErrorCode)
	}
	if p := c.do(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("list offsets on a follower: error %d", p.ErrorCode)
	}
}

func offsetForEpoch(t *testing.T, c *rawConn, topic string, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.do(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
}

// TestOffsetForLeaderEpochSingleNode: one node has only ever had epoch 0,
// which every batch it stored carries.
func TestOffsetForLeaderEpochSingleNode(t *testing.T) {
	ts := startServer(t, "", Options{})
	createTestTopic(t, ts.st, "s", 1)
	c := dialRaw(t, ts.addr)
	if rp := produceOne(t, c, 9, "s", makeBatch(t, record.None, -1, 0, 0, 3, "x")); rp.ErrorCode != 0 {
		t.Fatal(rp.ErrorCode)
	}
	fr := c.do(fetchReq(12, 0, "s", map[int32]int64{0: 0})).(*kmsg.FetchResponse)
	for _, kb := range fetchedBatches(t, fr.Topics[0].Partitions[0].RecordBatches) {
		if kb.PartitionLeaderEpoch != singleNodeEpoch {
			t.Fatalf("stored batch in epoch %d, want %d", kb.PartitionLeaderEpoch, singleNodeEpoch)
		}
	}
	for _, v := range []int16{0, 2, 4} {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "s", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
		p := c.do(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.EndOffset != 3 || (v >= 1 && p.LeaderEpoch != 0) {
			t.Fatalf("v%d: %+v", v, p)
		}
	}
	if p := offsetForEpoch(t, c, "s", 0, 0); p.ErrorCode != 0 || p.LeaderEpoch != 0 || p.EndOffset != 3 {
		t.Fatalf("epoch 0, current 0: %+v", p)
	}
	if p := offsetForEpoch(t, c, "s", 1, 0); p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("current epoch 1 on a single node: %+v", p)
	}
	if p := offsetForEpoch(t, c, "s", -1, -1); p.ErrorCode != 0 || p.LeaderEpoch != -1 || p.EndOffset != -1 {
		t.Fatalf("epoch -1: %+v", p)
	}
	if p := offsetForEpoch(t, c, "nope", -1, 0); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", p)
	}
}

func TestClusterAdmin(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	c := dialRaw(t, ts.addr)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ct.TimeoutMillis = 5000
	ct.Topics = []kmsg.CreateTopicsRequestTopic{
		{Topic: "a", NumPartitions: 2, ReplicationFactor: 3, Configs: []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}},
		{Topic: "b", NumPartitions: 1, ReplicationFactor: 4},
	}
	resp := c.do(ct).(*kmsg.CreateTopicsResponse)
	if r := resp.Topics[0]; r.ErrorCode != 0 || r.ReplicationFactor != 3 || r.NumPartitions != 2 {
		t.Fatalf("create a: %+v", r)
	}
	if c := fc.creates()[0]; c.rf != 3 || c.configs["retention.ms"] != "1000" {
		t.Fatalf("create call: %+v", c)
	}
	if r := resp.Topics[1]; r.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("replication factor above the live brokers: %+v", r)
	}
	fc.set(func(fc *fakeCluster) {
		fc.createErr = fmt.Errorf("fake: %w", ErrNotController)
	})
	ct.Topics = ct.Topics[:1]
	ct.Topics[0].Topic = "c"
	if r := c.do(ct).(*kmsg.CreateTopicsResponse).Topics[0]; r.ErrorCode != kerr.NotController.Code {
		t.Fatalf("no controller: %+v", r)
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.SetVersion(4)
	ip.ProducerID, ip.ProducerEpoch = -1, -1
	if r := c.do(ip).(*kmsg.InitProducerIDResponse); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("producer id without the controller: %+v", r)
	}
	fc.set(func(fc *fakeCluster) {
		fc.createErr = nil
	})
	if r := c.do(ip).(*kmsg.InitProducerIDResponse); r.ErrorCode != 0 || r.ProducerID != 1001 || r.ProducerEpoch != 0 {
		t.Fatalf("producer id from the cluster: %+v", r)
	}

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.SetVersion(5)
	dt.TimeoutMillis = 5000
	dt.TopicNames = []string{"a", store.OffsetsTopic}
	dr := c.do(dt).(*kmsg.DeleteTopicsResponse)
	if dr.Topics[0].ErrorCode != 0 || dr.Topics[1].ErrorCode == 0 {
		t.Fatalf("delete topics: %+v", dr.Topics)
	}
	if _, err := ts.st.Partitions("a"); err == nil {
		t.Fatal("topic a still exists")
	}

	// CreatePartitions and config changes go through the cluster; an
	// explicit assignment is the controller's to make.
	createTestTopic(t, ts.st, "r", 1)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.SetVersion(3)
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "r", Count: 2}}
	if r := c.do(cp).(*kmsg.CreatePartitionsResponse).Topics[0]; r.ErrorCode != 0 {
		t.Fatalf("create partitions: %+v", r)
	}
	if n, err := ts.st.Partitions("r"); err != nil || n != 2 {
		t.Fatalf("r has %d partitions (%v) after CreatePartitions, want 2", n, err)
	}
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "r", Count: 3, Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}}}
	if r := c.do(cp).(*kmsg.CreatePartitionsResponse).Topics[0]; r.ErrorCode != kerr.InvalidReplicaAssignment.Code || r.ErrorMessage == nil {
		t.Fatalf("create partitions with an assignment: %+v", r)
	}
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ia.SetVersion(1)
	ia.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "r",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("5")}}}}
	if r := c.do(ia).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("incremental alter configs: %+v", r)
	}
	if cfg, err := ts.st.TopicConfigOf("r"); err != nil || cfg.Get("retention.ms") != "5" {
		t.Fatalf("r's retention.ms after the alter: %q (%v), want 5", cfg.Get("retention.ms"), err)
	}
	// DeleteRecords goes through the Cluster (TestClusterDeleteRecords).
	drr := kmsg.NewPtrDeleteRecordsRequest()
	drr.SetVersion(2)
	drr.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "r", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}}}}
	if r := c.do(drr).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]; r.ErrorCode != 0 || r.LowWatermark != 0 {
		t.Fatalf("delete records: %+v", r)
	}
}

// TestClusterKgo: a franz-go client produces idempotently and consumes
// through a node of the (fake) cluster.
func TestClusterKgo(t *testing.T) {
	ts, _ := startCluster(t, Options{})
	ctx := testCtx(t)
	cl := ts.client(kgo.DefaultProduceTopic("k"), kgo.ConsumeTopics("k"), kgo.AllowAutoTopicCreation())
	for i := range 20 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for len(got) < 20 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
}

// TestClusterKgoEpochChange: a consumer reading across a leader election
// is fenced (its fetches carry the old epoch), refreshes its metadata,
// checks its position with OffsetForLeaderEpoch and reads on, every
// record once.
func TestClusterKgoEpochChange(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "k", 1)
	ctx := testCtx(t)
	var keys sync.Map // request keys sent, to see the fencing's requests happen
	cl := ts.client(kgo.DefaultProduceTopic("k"), kgo.ConsumeTopics("k"), kgo.MetadataMinAge(10*time.Millisecond),
		kgo.WithHooks(writeHook(func(key int16) { keys.Store(key, true) })))
	var got []string
	consume := func(n int) {
		for len(got) < n {
			fs := cl.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
	}
	produce := func(from int) {
		for i := from; i < from+10; i++ {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0)
	consume(10)
	fc.setLeader("k", 0, true)
	produce(10)
	consume(20)
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("record %d is %q", i, v)
		}
	}
	if _, ok := keys.Load(int16(23)); !ok {
		t.Error("the consumer never checked its position with OffsetForLeaderEpoch")
	}
}

// writeHook is a kgo hook calling f with the key of every request sent.
type writeHook func(key int16)

func (h writeHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	h(key)
}

// TestClusterProduceInParallel: a request's partitions wait for their
// replicas at the same time, not one after another.
func TestClusterProduceInParallel(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "two", 2)
	c := dialRaw(t, ts.addr)
	gate := make(chan struct{})
	fc.set(func(fc *fakeCluster) { fc.gate = gate })
	req := produceReq(9, -1, "two", 0, makeBatch(t, record.None, -1, 0, 0, 1, "a"))
	p1 := kmsg.NewProduceRequestTopicPartition()
	p1.Partition, p1.Records = 1, makeBatch(t, record.None, -1, 0, 0, 2, "b")
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
	corr := c.send(req)
	testutil.WaitBlocked(t, "both partitions wait for their replicas", "(*fakeCluster).Produce(", 2)
	close(gate)
	resp := c.recv(req, corr).(*kmsg.ProduceResponse)
	for i, p := range resp.Topics[0].Partitions {
		if p.Partition != int32(i) || p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("partition answer %d: %+v", i, p)
		}
	}
}

// TestClusterServerTopicConfig: the server's topic config (serve
// --config) reaches the controller for topics created through this node,
// on first use and by CreateTopics, under the request's own configs.
func TestClusterServerTopicConfig(t *testing.T) {
	cfg := store.DefaultTopicConfig()
	if err := cfg.SetAll([]string{"segment.bytes=4194304", "retention.ms=5000"}); err != nil {
		t.Fatal(err)
	}
	ts, fc := startCluster(t, Options{TopicConfig: &cfg})
	c := dialRaw(t, ts.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto")
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	req.AllowAutoTopicCreation = true
	if resp := c.do(req).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("auto-create: %+v", resp.Topics[0])
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ct.TimeoutMillis = 5000
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "made", NumPartitions: 1, ReplicationFactor: 1,
		Configs: []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("9000")}}}}
	if r := c.do(ct).(*kmsg.CreateTopicsResponse).Topics[0]; r.ErrorCode != 0 {
		t.Fatalf("create: %+v", r)
	}
	cs := fc.creates()
	if len(cs) != 2 {
		t.Fatalf("create calls: %+v", cs)
	}
	want := []map[string]string{
		{"segment.bytes": "4194304", "retention.ms": "5000"},
		{"segment.bytes": "4194304", "retention.ms": "9000"},
	}
	for i, c := range cs {
		if !maps.Equal(c.configs, want[i]) {
			t.Fatalf("create %q: configs %v, want %v", c.name, c.configs, want[i])
		}
	}
	got, err := ts.st.TopicConfigOf("auto")
	if err != nil {
		t.Fatal(err)
	}
	if got.SegmentBytes != 4194304 {
		t.Fatalf("the auto-created topic has segment.bytes %d", got.SegmentBytes)
	}
}
