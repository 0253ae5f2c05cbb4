package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// gapStore serves a store whose topic "m" (one partition, small segments)
// lost a middle segment (all three files, while the server was stopped):
// a log never compacted with offsets [from, to) missing.
func gapStore(t *testing.T) (ts *testServer, from, to int64) {
	t.Helper()
	dir := t.TempDir()
	ts = startServer(t, dir, Options{})
	cfg := store.DefaultTopicConfig()
	cfg.SegmentBytes, cfg.MaxMessageBytes, cfg.SegmentIndexBytes = 2<<10, 1<<10, 4096
	if err := ts.st.CreateTopic("m", 1, cfg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i += 5 {
		var recs []record.Record
		for j := i; j < i+5; j++ {
			recs = append(recs, record.Record{Key: []byte(fmt.Sprintf("k%d", j)), Value: []byte(fmt.Sprintf("value-%d", j)), Timestamp: 1_700_000_000_000 + int64(j)})
		}
		if _, err := ts.st.ProduceTo("m", 0, recs...); err != nil {
			t.Fatal(err)
		}
	}
	ts.stop()
	part := filepath.Join(dir, "m-0")
	names, err := vfs.Default.List(part)
	if err != nil {
		t.Fatal(err)
	}
	_, bases := layout.SegmentFiles(names)
	if len(bases) < 5 {
		t.Fatalf("%d segments, want 5 or more", len(bases))
	}
	from, to = bases[2], bases[3]
	for _, suf := range []string{layout.LogSuffix, layout.IndexSuffix, layout.TimeIndexSuffix} {
		if err := vfs.Default.Remove(filepath.Join(part, layout.FileName(from, suf))); err != nil {
			t.Fatal(err)
		}
	}
	return startServer(t, dir, Options{}), from, to
}

// TestFetchStopsAtMissingData: a consumer fetching through a gap in a log
// never compacted gets every batch before it, then KAFKA_STORAGE_ERROR for
// the partition at the gap, never the batches after it; a ListOffsets by a
// timestamp the missing records may have held gets the same error.
func TestFetchStopsAtMissingData(t *testing.T) {
	ts, from, to := gapStore(t)
	c := dialRaw(t, ts.addr)
	next := int64(0)
	for {
		req := fetchReq(12, 0, "m", map[int32]int64{0: next})
		rp := c.do(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if rp.ErrorCode != 0 {
			if rp.ErrorCode != kerr.KafkaStorageError.Code || len(rp.RecordBatches) != 0 {
				t.Fatalf("fetch at %d: error %d with %d bytes, want KAFKA_STORAGE_ERROR and none", next, rp.ErrorCode, len(rp.RecordBatches))
			}
			break
		}
		if len(rp.RecordBatches) == 0 {
			t.Fatalf("fetch at %d: nothing, and no error", next)
		}
		for data := rp.RecordBatches; len(data) > 0; {
			b := record.Batch(data)
			if b.BaseOffset() > next {
				t.Fatalf("fetch at %d: a batch at %d", next, b.BaseOffset())
			}
			next = b.LastOffset() + 1
			data = data[b.Size():]
		}
	}
	if next != from {
		t.Fatalf("fetched up to %d, then the error; want up to the gap at %d", next, from)
	}
	for _, off := range []int64{from + 1, to - 1} {
		rp := c.do(fetchReq(12, 0, "m", map[int32]int64{0: off})).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if rp.ErrorCode != kerr.KafkaStorageError.Code {
			t.Fatalf("fetch at %d in the gap: error %d", off, rp.ErrorCode)
		}
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(7)
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "m"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = 1_700_000_000_000 + from
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	if got := c.do(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; got.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("ListOffsets at a timestamp in the gap: error %d, offset %d", got.ErrorCode, got.Offset)
	}
}

// TestKgoStopsAtMissingData: franz-go treats KAFKA_STORAGE_ERROR as
// retriable: it stays at the gap's first offset and never skips it. With
// KeepRetryableFetchErrors the error reaches PollFetches, after exactly
// the records before the gap.
func TestKgoStopsAtMissingData(t *testing.T) {
	ts, from, _ := gapStore(t)
	cl := ts.client(kgo.ConsumeTopics("m"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepRetryableFetchErrors())
	defer cl.Close()
	ctx := testCtx(t)
	var got int64
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d records and no error: %v", got, err)
		}
		for _, r := range fs.Records() {
			if r.Offset != got {
				t.Fatalf("record at offset %d, want %d", r.Offset, got)
			}
			got++
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			if !errors.Is(ferr, kerr.KafkaStorageError) {
				t.Fatalf("fetch error %v, want KAFKA_STORAGE_ERROR", ferr)
			}
			if !strings.Contains(ferr.Error(), "KAFKA_STORAGE_ERROR") {
				t.Fatalf("fetch error %q", ferr)
			}
			break
		}
	}
	if got != from {
		t.Fatalf("consumed %d records before the error, want the %d before the gap", got, from)
	}
}
