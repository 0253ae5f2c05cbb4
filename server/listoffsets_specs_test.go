package server

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// ListOffsets' special timestamps through kgo, on a partition whose start
// DeleteRecords moved: -3 is the record with the largest timestamp (not
// the last), -4 the earliest local offset (the start: everything is
// local), -5 the latest tiered offset and -6 the earliest offset pending
// upload, -1 as Kafka answers without tiered storage. Each is answered
// from the version that carries it (Kafka's timestampMinSupportedVersion)
// and refused with UNSUPPORTED_VERSION below it, as is a negative
// timestamp that is no spec.
func TestListOffsetsSpecs(t *testing.T) {
	ts := startServer(t, "", Options{})
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
	raw := dialRaw(t, ts.addr)
	for _, c := range []struct {
		spec, off, stamp int64
		first            int16 // the first version that carries spec; -1: none
	}{
		{-3, 2, base.Add(9 * time.Second).UnixMilli(), 7},
		{-4, 1, -1, 8},
		{-2, 1, -1, 0},
		{-5, -1, -1, 9},
		{-6, -1, -1, 11},
		{-1, 4, -1, 0},
		{-7, -1, -1, -1},
		{base.Add(2 * time.Second).UnixMilli(), 2, base.Add(9 * time.Second).UnixMilli(), 0},
	} {
		for v := int16(0); v <= 11; v++ {
			req := kmsg.NewPtrListOffsetsRequest()
			req.SetVersion(v)
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "specs"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = c.spec
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			got := raw.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
			if c.first < 0 || v < c.first {
				if got.ErrorCode != kerr.UnsupportedVersion.Code || got.Offset != -1 {
					t.Errorf("spec %d at v%d: error %d offset %d, want UNSUPPORTED_VERSION", c.spec, v, got.ErrorCode, got.Offset)
				}
				continue
			}
			if v == 0 {
				if want := []int64{c.off}; got.ErrorCode != 0 || !slices.Equal(got.OldStyleOffsets, want) {
					t.Errorf("spec %d at v0: error %d offsets %v, want %v", c.spec, got.ErrorCode, got.OldStyleOffsets, want)
				}
				continue
			}
			if got.ErrorCode != 0 || got.Offset != c.off || got.Timestamp != c.stamp {
				t.Errorf("spec %d at v%d: error %d offset %d timestamp %d, want offset %d timestamp %d",
					c.spec, v, got.ErrorCode, got.Offset, got.Timestamp, c.off, c.stamp)
			}
		}
	}
	// kgo negotiates the highest version both speak, and asks for -6 there.
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "specs"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -6
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0]; resp.Version != 11 || got.ErrorCode != 0 || got.Offset != -1 {
		t.Errorf("kgo: -6 at v%d: error %d offset %d, want v11 offset -1", resp.Version, got.ErrorCode, got.Offset)
	}
}
