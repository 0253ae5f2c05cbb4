package server

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// makeBatch builds a producer batch of n records (values "<tag>-i").
func makeBatch(t *testing.T, codec record.Codec, pid int64, epoch int16, seq int32, n int, tag string) []byte {
	t.Helper()
	b := record.NewBuilder(codec)
	b.SetBaseTimestamp(time.Now().UnixMilli())
	b.SetPartitionLeaderEpoch(-1)
	if pid >= 0 {
		b.SetProducer(pid, epoch, seq)
	} else {
		b.SetProducer(-1, -1, -1)
	}
	for i := range n {
		if err := b.AddRecord(int32(i), int64(i), []byte("k"), []byte(fmt.Sprintf("%s-%d", tag, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

func produceReq(version int16, acks int16, topic string, part int32, recs []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = part
	rp.Records = recs
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceOne sends one batch and returns the partition's answer.
func produceOne(t *testing.T, c *rawConn, version int16, topic string, recs []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp := c.do(produceReq(version, -1, topic, 0, recs)).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0]
}

func fetchReq(version int16, maxWait int32, topic string, parts map[int32]int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWait
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < int32(len(parts)); p++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rp.FetchOffset = parts[p]
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestApiVersionsDowngrade(t *testing.T) {
	ts := startServer(t, "", Options{})
	c := dialRaw(t, ts.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4) // above our maximum, 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	corr := c.send(req)
	v0 := kmsg.NewPtrApiVersionsRequest() // the reply is in v0's format
	v0.SetVersion(0)
	resp := c.recv(v0, corr).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 ||
		resp.ApiKeys[0].ApiKey != apiVersionsKey || resp.ApiKeys[0].MaxVersion != apiVersionsMax {
		t.Fatalf("downgrade reply: %+v", resp)
	}
	// The connection stays usable at a version we speak.
	req.SetVersion(3)
	got := c.do(req).(*kmsg.ApiVersionsResponse)
	if got.ErrorCode != 0 {
		t.Fatalf("v3: error %d", got.ErrorCode)
	}
	want := map[int16][2]int16{0: {0, 12}, 1: {4, 12}, 2: {0, 11}, 3: {0, 12}, 18: {0, 3}, 19: {0, 7}, 20: {0, 5}, 21: {0, 2}, 22: {0, 4}}
	for _, k := range got.ApiKeys {
		if w, ok := want[k.ApiKey]; ok {
			if k.MinVersion != w[0] || k.MaxVersion != w[1] {
				t.Errorf("key %d advertised %d-%d, want %d-%d", k.ApiKey, k.MinVersion, k.MaxVersion, w[0], w[1])
			}
			delete(want, k.ApiKey)
		}
	}
	if len(want) > 0 {
		t.Fatalf("keys not advertised: %v", want)
	}
}

// TestFetchFramingEveryVersion checks the hand-written Fetch framing
// against kmsg's decoder for every version served, with a partition that
// has data, an empty one and an unknown topic.
func TestFetchFramingEveryVersion(t *testing.T) {
	ts := startServer(t, "", Options{NumPartitions: 2})
	if err := ts.st.CreateTopic("f", 2, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	var want []byte
	for i := range 3 {
		b := makeBatch(t, record.Snappy, -1, 0, 0, 5, fmt.Sprint("b", i))
		if rp := produceOne(t, c, 9, "f", b); rp.ErrorCode != 0 || rp.BaseOffset != int64(5*i) {
			t.Fatalf("produce %d: error %d at %d", i, rp.ErrorCode, rp.BaseOffset)
		}
		rb := record.Batch(b)
		rb.SetBaseOffset(int64(5 * i))
		rb.SetPartitionLeaderEpoch(0)
		want = append(want, b...)
	}
	for v := int16(4); v <= 12; v++ {
		req := fetchReq(v, 0, "f", map[int32]int64{0: 0, 1: 0})
		unknown := kmsg.NewFetchRequestTopic()
		unknown.Topic = "nope"
		unknown.Partitions = []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1000}}
		req.Topics = append(req.Topics, unknown)
		resp := c.do(req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: %d topics", v, len(resp.Topics))
		}
		p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
		if p0.ErrorCode != 0 || p0.HighWatermark != 15 || p0.LastStableOffset != 15 || !bytes.Equal(p0.RecordBatches, want) {
			t.Fatalf("v%d partition 0: error %d hwm %d lso %d, %d record bytes (want %d)", v, p0.ErrorCode, p0.HighWatermark, p0.LastStableOffset, len(p0.RecordBatches), len(want))
		}
		if v >= 5 && p0.LogStartOffset != 0 {
			t.Fatalf("v%d: log start %d", v, p0.LogStartOffset)
		}
		if p1.ErrorCode != 0 || p1.HighWatermark != 0 || p1.RecordBatches == nil || len(p1.RecordBatches) != 0 {
			t.Fatalf("v%d empty partition: error %d hwm %d records %v (must be empty, not null)", v, p1.ErrorCode, p1.HighWatermark, p1.RecordBatches)
		}
		if got := resp.Topics[1].Partitions[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("v%d unknown topic: error %d", v, got)
		}
	}
}

func TestFetchLimits(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("l", 2, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	for p := range int32(2) {
		for i := range 4 {
			req := produceReq(9, 1, "l", p, makeBatch(t, record.None, -1, 0, 0, 50, fmt.Sprint(i)))
			if rp := c.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; rp.ErrorCode != 0 {
				t.Fatal(rp.ErrorCode)
			}
		}
	}
	one := len(makeBatch(t, record.None, -1, 0, 0, 50, "0"))
	// A partition limit below one batch still gets the first batch whole
	// (KIP-74); the second partition, over what is left, gets nothing.
	req := fetchReq(12, 0, "l", map[int32]int64{0: 0, 1: 0})
	req.MaxBytes = int32(one / 2)
	for i := range req.Topics[0].Partitions {
		req.Topics[0].Partitions[i].PartitionMaxBytes = 10
	}
	resp := c.do(req).(*kmsg.FetchResponse)
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	if len(p0.RecordBatches) != one || len(p1.RecordBatches) != 0 {
		t.Fatalf("got %d and %d record bytes, want one whole batch (%d) and none", len(p0.RecordBatches), len(p1.RecordBatches), one)
	}
	// Room for two and a half batches: whole batches only, within limit.
	req = fetchReq(12, 0, "l", map[int32]int64{0: 0})
	req.Topics[0].Partitions[0].PartitionMaxBytes = int32(2*one + one/2)
	resp = c.do(req).(*kmsg.FetchResponse)
	if got := len(resp.Topics[0].Partitions[0].RecordBatches); got != 2*one {
		t.Fatalf("got %d record bytes, want %d", got, 2*one)
	}
	// Out of range.
	req = fetchReq(12, 0, "l", map[int32]int64{0: 1000})
	if got := c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch past the end: error %d", got)
	}
}

// TestFetchLongPoll: a fetch at the end parks until a produce arrives and
// then answers with it; one whose wait runs out answers empty.
func TestFetchLongPoll(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("w", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	consumer := dialRaw(t, ts.addr)
	resp := consumer.do(fetchReq(11, 1, "w", map[int32]int64{0: 0})).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("expired wait: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	req := fetchReq(11, 60_000, "w", map[int32]int64{0: 0})
	corr := consumer.send(req)
	// Once the fetch is parked (it read nothing), a produce on another
	// connection must wake it well before its minute is up. Producing
	// before it parks would let it answer without ever being woken.
	testutil.WaitBlocked(t, "the fetch parked", "server.(*conn).fetch(", 1)
	producer := dialRaw(t, ts.addr)
	if rp := produceOne(t, producer, 9, "w", makeBatch(t, record.None, -1, 0, 0, 3, "x")); rp.ErrorCode != 0 {
		t.Fatal(rp.ErrorCode)
	}
	resp = consumer.recv(req, corr).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.HighWatermark != 3 || len(p.RecordBatches) == 0 {
		t.Fatalf("woken fetch: hwm %d, %d bytes", p.HighWatermark, len(p.RecordBatches))
	}
}

func TestProduceChecks(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("c", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	// A single node is its partitions' one in-sync replica: above 1,
	// min.insync.replicas refuses acks=all writes, not acks=1 ones.
	two := store.DefaultTopicConfig()
	if err := two.Set("min.insync.replicas", "2"); err != nil {
		t.Fatal(err)
	}
	if err := ts.st.CreateTopic("m", 1, two); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	good := makeBatch(t, record.None, -1, 0, 0, 2, "g")
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 0xff
	txn := record.NewBuilder(record.None)
	txn.SetProducer(7, 0, 0)
	txn.SetTransactional(true)
	txn.AddRecord(0, 0, nil, []byte("t"), nil)
	txnBatch, _ := txn.Build()
	cases := []struct {
		name    string
		version int16
		acks    int16
		topic   string
		recs    []byte
		txnID   bool
		want    int16
	}{
		{"v2 refused", 2, -1, "c", good, false, kerr.UnsupportedVersion.Code},
		{"two batches", 9, -1, "c", append(bytes.Clone(good), good...), false, kerr.InvalidRecord.Code},
		{"no batch", 9, -1, "c", []byte{}, false, kerr.InvalidRecord.Code},
		{"short", 9, -1, "c", good[:30], false, kerr.CorruptMessage.Code},
		{"truncated", 9, -1, "c", good[:len(good)-3], false, kerr.CorruptMessage.Code},
		{"bad crc", 9, -1, "c", badCRC, false, kerr.CorruptMessage.Code},
		{"zstd before v7", 6, -1, "c", makeBatch(t, record.Zstd, -1, 0, 0, 2, "z"), false, kerr.UnsupportedCompressionType.Code},
		{"transactional id", 9, -1, "c", good, true, kerr.TransactionalIDAuthorizationFailed.Code},
		{"transactional batch", 9, -1, "c", bytes.Clone(txnBatch), false, kerr.TransactionalIDAuthorizationFailed.Code},
		{"acks 2", 9, 2, "c", good, false, kerr.InvalidRequiredAcks.Code},
		{"unknown topic", 9, -1, "nope", good, false, kerr.UnknownTopicOrPartition.Code},
		{"internal topic", 9, -1, store.OffsetsTopic, good, false, kerr.InvalidTopicException.Code},
		{"acks=all under min.insync.replicas", 9, -1, "m", good, false, kerr.NotEnoughReplicas.Code},
	}
	for _, tc := range cases {
		req := produceReq(tc.version, tc.acks, tc.topic, 0, tc.recs)
		if tc.txnID {
			req.TransactionID = kmsg.StringPtr("tx")
		}
		resp := c.do(req).(*kmsg.ProduceResponse)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want {
			t.Errorf("%s: error %d, want %d", tc.name, got, tc.want)
		}
	}
	for _, topic := range []string{"c", "m"} {
		l, _ := ts.st.Log(topic, 0)
		if l.EndOffset() != 0 {
			t.Fatalf("refused produces stored %d records in %s", l.EndOffset(), topic)
		}
	}
	if rp := c.do(produceReq(9, 1, "m", 0, good)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("acks=1 under min.insync.replicas 2: error %d offset %d", rp.ErrorCode, rp.BaseOffset)
	}
	if rp := produceOne(t, c, 9, "c", good); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("good batch: error %d offset %d", rp.ErrorCode, rp.BaseOffset)
	}
}

// TestProduceAcksZeroAndPipelining: acks=0 gets no response but is stored,
// and pipelined requests are answered in order.
func TestProduceAcksZeroAndPipelining(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("a", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	var reqs []kmsg.Request
	var corrs []int32
	for i := range 6 {
		acks := int16(-1)
		if i%2 == 1 {
			acks = 0
		}
		if i == 4 {
			acks = 1
		}
		req := produceReq(9, acks, "a", 0, makeBatch(t, record.None, -1, 0, 0, 1, fmt.Sprint(i)))
		corr := c.send(req)
		if acks != 0 {
			reqs, corrs = append(reqs, req), append(corrs, corr)
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	reqs, corrs = append(reqs, md), append(corrs, c.send(md))
	for i, req := range reqs {
		resp := c.recv(req, corrs[i]) // recv checks the correlation ids come in order
		if pr, ok := resp.(*kmsg.ProduceResponse); ok && pr.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce %d: error %d", i, pr.Topics[0].Partitions[0].ErrorCode)
		}
	}
	l, _ := ts.st.Log("a", 0)
	if l.EndOffset() != 6 {
		t.Fatalf("stored %d records, want 6 (acks=0 ones included)", l.EndOffset())
	}
	// A failed acks=0 produce closes the connection: the client reads no
	// response, so that is how it learns.
	c.send(produceReq(9, 0, "nope", 0, makeBatch(t, record.None, -1, 0, 0, 1, "x")))
	c.expectClosed()
}

func TestListOffsets(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("o", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	base := time.Now().Add(-time.Hour).UnixMilli()
	stamps := []int64{base, base + 100, base + 5000, base + 200} // the third holds the max
	for _, ts := range stamps {
		b := record.NewBuilder(record.None)
		b.SetBaseTimestamp(ts)
		b.SetProducer(-1, -1, -1)
		b.AddRecord(0, 0, nil, []byte("v"), nil)
		out, _ := b.Build()
		if rp := produceOne(t, c, 9, "o", bytes.Clone(out)); rp.ErrorCode != 0 {
			t.Fatal(rp.ErrorCode)
		}
	}
	ask := func(version int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(version)
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "o"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rp.MaxNumOffsets = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return c.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	for _, tc := range []struct {
		ts, off, stamp int64
	}{
		{-2, 0, -1}, {-1, 4, -1}, {-3, 2, base + 5000}, {base + 50, 1, base + 100},
		{base + 4000, 2, base + 5000}, {base + 9000, -1, -1},
	} {
		got := ask(8, tc.ts)
		if got.ErrorCode != 0 || got.Offset != tc.off || got.Timestamp != tc.stamp {
			t.Errorf("timestamp %d: error %d offset %d ts %d, want offset %d ts %d", tc.ts, got.ErrorCode, got.Offset, got.Timestamp, tc.off, tc.stamp)
		}
	}
	if got := ask(0, -1); len(got.OldStyleOffsets) != 1 || got.OldStyleOffsets[0] != 4 {
		t.Errorf("v0 latest: %v", got.OldStyleOffsets)
	}
}

func TestCreateDeleteTopics(t *testing.T) {
	ts := startServer(t, "", Options{NumPartitions: 4})
	c := dialRaw(t, ts.addr)
	create := func(name string, parts int32, rf int16, cfg map[string]string) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		for k, v := range cfg {
			rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
		}
		req.Topics = append(req.Topics, rt)
		return c.do(req).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	if got := create("t1", -1, -1, map[string]string{"retention.ms": "1000"}); got.ErrorCode != 0 || got.NumPartitions != 4 {
		t.Fatalf("create: %+v", got)
	}
	if info, err := ts.st.DescribeTopic("t1"); err != nil || len(info.Partitions) != 4 || info.Config.RetentionMs != 1000 {
		t.Fatalf("created topic: %+v %v", info, err)
	}
	for _, tc := range []struct {
		name string
		rf   int16
		cfg  map[string]string
		want int16
	}{
		{"t1", 1, nil, kerr.TopicAlreadyExists.Code},
		{"t2", 3, nil, kerr.InvalidReplicationFactor.Code},
		{"bad/name", 1, nil, kerr.InvalidTopicException.Code},
		{"t3", 1, map[string]string{"no.such": "1"}, kerr.InvalidConfig.Code},
	} {
		if got := create(tc.name, 1, tc.rf, tc.cfg); got.ErrorCode != tc.want {
			t.Errorf("create %s: error %d, want %d", tc.name, got.ErrorCode, tc.want)
		}
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TopicNames = []string{"t1", "nope"}
	resp := c.do(del).(*kmsg.DeleteTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %d %d", resp.Topics[0].ErrorCode, resp.Topics[1].ErrorCode)
	}
	if got := ts.st.Topics(); len(got) != 0 {
		t.Fatalf("topics left: %v", got)
	}
}

func TestMetadataAutoCreate(t *testing.T) {
	off := false
	for _, auto := range []*bool{nil, &off} {
		ts := startServer(t, "", Options{NumPartitions: 3, AutoCreateTopics: auto, Advertise: "kafka.example:1234"})
		c := dialRaw(t, ts.addr)
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(4)
		md.AllowAutoTopicCreation = true
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("new")}}
		resp := c.do(md).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].Host != "kafka.example" || resp.Brokers[0].Port != 1234 {
			t.Fatalf("brokers: %+v", resp.Brokers)
		}
		tp := resp.Topics[0]
		if auto == nil && (tp.ErrorCode != 0 || len(tp.Partitions) != 3) {
			t.Fatalf("auto-created topic: error %d, %d partitions", tp.ErrorCode, len(tp.Partitions))
		}
		if auto != nil && tp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("auto creation off: error %d", tp.ErrorCode)
		}
		// A client that does not allow creation (kgo by default) gets an
		// unknown topic either way.
		md.AllowAutoTopicCreation = false
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("other")}}
		if got := c.do(md).(*kmsg.MetadataResponse).Topics[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("creation not allowed: error %d", got)
		}
	}
}

func TestDeleteRecords(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("d", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	for i := range 3 {
		produceOne(t, c, 9, "d", makeBatch(t, record.None, -1, 0, 0, 10, fmt.Sprint(i)))
	}
	del := func(off int64) kmsg.DeleteRecordsResponseTopicPartition {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.SetVersion(2)
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "d", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: off}}}}
		return c.do(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
	}
	if got := del(15); got.ErrorCode != 0 || got.LowWatermark != 15 {
		t.Fatalf("delete to 15: %+v", got)
	}
	if got := del(100); got.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("delete past the end: %+v", got)
	}
	resp := c.do(fetchReq(11, 0, "d", map[int32]int64{0: 3})).(*kmsg.FetchResponse)
	if got := resp.Topics[0].Partitions[0]; got.ErrorCode != kerr.OffsetOutOfRange.Code || got.LogStartOffset != 15 {
		t.Fatalf("fetch below the new start: error %d, log start %d", got.ErrorCode, got.LogStartOffset)
	}
	if got := del(-1); got.ErrorCode != 0 || got.LowWatermark != 30 {
		t.Fatalf("delete to the high watermark: %+v", got)
	}
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.SetVersion(2)
	req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: store.OffsetsTopic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: -1}}}}
	if got := c.do(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]; got.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("delete records of the offsets topic: %+v", got)
	}
}
