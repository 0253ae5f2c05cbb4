package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// DescribeCluster through kgo: this broker, also the controller, under the
// cluster id Metadata gives; a request for controllers (v1's endpoint type
// 2) is refused as a Kafka broker refuses it.
func TestDescribeCluster(t *testing.T) {
	ts := startServer(t, "", Options{})
	cl := ts.client()
	ctx := testCtx(t)
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 1 || resp.ErrorCode != 0 || resp.ClusterID != ts.srv.ClusterID() || resp.ControllerID != ts.srv.NodeID() ||
		resp.EndpointType != 1 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != ts.srv.NodeID() || resp.Brokers[0].Port == 0 {
		t.Errorf("describe cluster: %+v", resp)
	}
	req.EndpointType = 2
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Errorf("controllers: %v, %+v", err, resp)
	}
}

// DescribeLogDirs through kgo: the store's directory, each partition's
// size as the store counts it, offset lag 0; the named partitions only
// when the request names some; v4's disk totals from statfs.
func TestDescribeLogDirs(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("logs", 2, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	cl := ts.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testCtx(t)
	for range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "logs", Partition: 1, Value: make([]byte, 1000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	info, err := ts.st.DescribeTopic("logs")
	if err != nil {
		t.Fatal(err)
	}
	if info.Partitions[1].Size < 3000 {
		t.Fatalf("partition 1 holds %d bytes", info.Partitions[1].Size)
	}

	// To the broker itself: kgo's Client.Request would shard the request
	// and merge the answers, dropping v4's disk totals.
	broker := cl.Broker(int(ts.srv.NodeID()))
	all := kmsg.NewPtrDescribeLogDirsRequest() // null topics: everything
	resp, err := all.RequestWith(ctx, broker)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 4 || len(resp.Dirs) != 1 {
		t.Fatalf("v%d, %d dirs", resp.Version, len(resp.Dirs))
	}
	d := resp.Dirs[0]
	if d.ErrorCode != 0 || d.Dir != ts.dir || d.TotalBytes <= 0 || d.UsableBytes < 0 || d.UsableBytes > d.TotalBytes {
		t.Errorf("dir: %q error %d total %d usable %d", d.Dir, d.ErrorCode, d.TotalBytes, d.UsableBytes)
	}
	sizes := make(map[string]map[int32]int64)
	for _, dt := range d.Topics {
		sizes[dt.Topic] = make(map[int32]int64)
		for _, p := range dt.Partitions {
			if p.OffsetLag != 0 || p.IsFuture {
				t.Errorf("%s-%d: lag %d future %v", dt.Topic, p.Partition, p.OffsetLag, p.IsFuture)
			}
			sizes[dt.Topic][p.Partition] = p.Size
		}
	}
	if len(sizes["logs"]) != 2 || sizes["logs"][0] != info.Partitions[0].Size || sizes["logs"][1] != info.Partitions[1].Size {
		t.Errorf("logs sizes %v, want %d and %d", sizes["logs"], info.Partitions[0].Size, info.Partitions[1].Size)
	}
	if _, ok := sizes[store.OffsetsTopic]; !ok {
		t.Errorf("__consumer_offsets not listed: %v", sizes)
	}

	some := kmsg.NewPtrDescribeLogDirsRequest()
	some.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "logs", Partitions: []int32{1, 7}}, {Topic: "nope", Partitions: []int32{0}}}
	resp, err = some.RequestWith(ctx, broker)
	if err != nil {
		t.Fatal(err)
	}
	if ts := resp.Dirs[0].Topics; len(ts) != 1 || ts[0].Topic != "logs" || len(ts[0].Partitions) != 1 ||
		ts[0].Partitions[0].Partition != 1 || ts[0].Partitions[0].Size != info.Partitions[1].Size {
		t.Errorf("named partitions: %+v", ts)
	}
}
