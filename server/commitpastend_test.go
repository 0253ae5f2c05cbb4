package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// A commit past a partition's end is stored as Kafka stores it (kafkajs's
// admin.setOffsets on an empty topic commits offset 1), and so are -1 and
// -2 (kafkajs's resetOffsets commits -2 for "earliest"); all survive a
// restart.
func TestCommitPastEndStored(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("empty", 3, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	cl := ts.client()
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "setter"
	commit.Generation = -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "empty"
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 1}, {Partition: 1, Offset: -1}, {Partition: 2, Offset: -2},
	}
	commit.Topics = []kmsg.OffsetCommitRequestTopic{ct}
	resp, err := cl.Request(testCtx(t), commit)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int16{0: 0, 1: 0, 2: 0}
	for _, p := range resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions {
		if p.ErrorCode != want[p.Partition] {
			t.Errorf("commit to partition %d: error %d, want %d", p.Partition, p.ErrorCode, want[p.Partition])
		}
	}
	dir := ts.dir
	cl.Close()
	ts.stop()

	ts = startServer(t, dir, Options{})
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "setter"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "empty", Partitions: []int32{0, 1, 2}}}
	fr, err := ts.client().Request(testCtx(t), fetch)
	if err != nil {
		t.Fatal(err)
	}
	wantOff := map[int32]int64{0: 1, 1: -1, 2: -2}
	for _, p := range fr.(*kmsg.OffsetFetchResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Offset != wantOff[p.Partition] {
			t.Errorf("after the restart, partition %d: offset %d error %d, want %d", p.Partition, p.Offset, p.ErrorCode, wantOff[p.Partition])
		}
	}
	rows, total, err := ts.st.DescribeGroup("setter")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Lag != -1 || !rows[0].PastEnd() || rows[1].Lag != 0 || rows[1].PastEnd() || rows[2].Lag != 0 || rows[2].PastEnd() || total != 0 {
		t.Errorf("describe: %+v, total %d", rows, total)
	}
}
