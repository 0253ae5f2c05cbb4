package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// ListOffsets' special timestamps through kgo, on a partition whose start
// DeleteRecords moved: -3 is the record with the largest timestamp (not
// the last), -4 the earliest local offset (the start: everything is
// local), -5 the latest tiered offset, -1 as Kafka answers without tiered
// storage.
func TestListOffsetsSpecs(t *testing.T) {
	ts := startServer(t, "", Config{})
	if err := ts.st.CreateTopic("specs", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	cl := ts.client()
	ctx := testCtx(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for _, d := range []time.Duration{0, time.Second, 9 * time.Second, 2 * time.Second} { // offset 2 holds the max
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "specs", Value: []byte("v"), Timestamp: base.Add(d)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.st.DeleteRecords("specs", 0, 1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, off, stamp int64 }{
		{-3, 2, base.Add(9 * time.Second).UnixMilli()},
		{-4, 1, -1},
		{-2, 1, -1},
		{-5, -1, -1},
		{-1, 4, -1},
	} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "specs"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = c.spec
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.Offset != c.off || got.Timestamp != c.stamp {
			t.Errorf("spec %d (v%d): error %d offset %d timestamp %d, want offset %d timestamp %d",
				c.spec, resp.Version, got.ErrorCode, got.Offset, got.Timestamp, c.off, c.stamp)
		}
	}
}
