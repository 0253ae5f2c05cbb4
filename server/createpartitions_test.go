package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// CreatePartitions through kgo: ValidateOnly changes nothing, a count
// that does not grow, an unknown topic, a duplicate and a real replica
// assignment are refused, a trivial assignment is accepted, and the grown
// topic takes records on its new partitions and keeps its count across a
// restart.
func TestCreatePartitions(t *testing.T) {
	ts := startServer(t, "", Options{})
	for _, name := range []string{"grow", "other"} {
		if err := ts.st.CreateTopic(name, 2, store.DefaultTopicConfig()); err != nil {
			t.Fatal(err)
		}
	}
	cl := ts.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testCtx(t)
	node := ts.srv.NodeID()
	create := func(validate bool, topics ...kmsg.CreatePartitionsRequestTopic) map[string]int16 {
		t.Helper()
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.ValidateOnly = validate
		req.Topics = topics
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := make(map[string]int16)
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 && rt.ErrorMessage == nil {
				t.Errorf("%s: error %d without a message", rt.Topic, rt.ErrorCode)
			}
			out[rt.Topic] = rt.ErrorCode
		}
		return out
	}
	topic := func(name string, count int32, assign ...[]int32) kmsg.CreatePartitionsRequestTopic {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		for _, r := range assign {
			rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: r})
		}
		return rt
	}
	count := func(name string) int {
		n, err := ts.st.Partitions(name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	if got := create(true, topic("grow", 4)); got["grow"] != 0 || count("grow") != 2 {
		t.Fatalf("validate only: %v, %d partitions", got, count("grow"))
	}
	got := create(false, topic("grow", 2), topic("nope", 3), topic("other", 3, []int32{99}), topic("other", 4))
	want := map[string]int16{"grow": kerr.InvalidPartitions.Code, "nope": kerr.UnknownTopicOrPartition.Code, "other": kerr.InvalidRequest.Code}
	for name, code := range want {
		if got[name] != code {
			t.Errorf("%s: error %d, want %d", name, got[name], code)
		}
	}
	got = create(false, topic("other", 4, []int32{99}, []int32{node}), topic("grow", 1))
	if got["other"] != kerr.InvalidReplicaAssignment.Code || got["grow"] != kerr.InvalidPartitions.Code {
		t.Errorf("bad assignment, shrink: %v", got)
	}
	if count("grow") != 2 || count("other") != 2 {
		t.Fatalf("refused requests changed counts: %d, %d", count("grow"), count("other"))
	}
	got = create(false, topic("grow", 5), topic("other", 4, []int32{node}, []int32{node}))
	if got["grow"] != 0 || got["other"] != 0 || count("grow") != 5 || count("other") != 4 {
		t.Fatalf("grow: %v, counts %d, %d", got, count("grow"), count("other"))
	}

	// The new partitions take records and are in Metadata.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: 4, Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatalf("produce to a new partition: %v", err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("grow")}}
	mr, err := md.RequestWith(ctx, cl)
	if err != nil || len(mr.Topics) != 1 || len(mr.Topics[0].Partitions) != 5 {
		t.Fatalf("metadata after growing: %v %+v", err, mr)
	}
	dir := ts.dir
	cl.Close()
	ts.stop()
	ts = startServer(t, dir, Options{})
	if n, err := ts.st.Partitions("grow"); err != nil || n != 5 {
		t.Fatalf("after a restart: %d, %v", n, err)
	}
	if l, err := ts.st.Log("grow", 4); err != nil || l.EndOffset() != 1 {
		t.Fatalf("new partition after a restart: %v", err)
	}
}
