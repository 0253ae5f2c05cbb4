package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// damagedStore serves a store whose topic "d" (one partition, small
// segments) had the length field of its first segment's second batch
// overwritten while the server was stopped: damage in a sealed segment,
// which opening does not scan and a read meets. It returns the damaged
// batch's base offset.
func damagedStore(t *testing.T) (ts *testServer, damaged int64) {
	t.Helper()
	dir := t.TempDir()
	ts = startServer(t, dir, Options{})
	cfg := store.DefaultTopicConfig()
	cfg.SegmentBytes, cfg.MaxMessageBytes, cfg.SegmentIndexBytes = 2<<10, 1<<10, 4096
	if err := ts.st.CreateTopic("d", 1, cfg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i += 5 {
		var recs []record.Record
		for j := i; j < i+5; j++ {
			recs = append(recs, record.Record{Key: []byte(fmt.Sprintf("k%d", j)), Value: []byte(fmt.Sprintf("value-%d", j)), Timestamp: 1_700_000_000_000 + int64(j)})
		}
		if _, err := ts.st.ProduceTo("d", 0, recs...); err != nil {
			t.Fatal(err)
		}
	}
	ts.stop()
	part := filepath.Join(dir, "d-0")
	names, err := vfs.Default.List(part)
	if err != nil {
		t.Fatal(err)
	}
	if _, bases := layout.SegmentFiles(names); len(bases) < 2 {
		t.Fatalf("%d segments, want a sealed one", len(bases))
	}
	logFile := filepath.Join(part, layout.FileName(0, layout.LogSuffix))
	f, err := vfs.Default.OpenReadWrite(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, record.HeaderSize)
	if _, err := f.ReadAt(head, 0); err != nil {
		t.Fatal(err)
	}
	pos := int64(record.Batch(head).Size())
	if _, err := f.ReadAt(head, pos); err != nil {
		t.Fatal(err)
	}
	damaged = record.Batch(head).BaseOffset()
	var length [4]byte
	binary.BigEndian.PutUint32(length[:], 1<<30)
	if _, err := f.WriteAt(length[:], pos+8); err != nil { // batchLength
		t.Fatal(err)
	}
	return startServer(t, dir, Options{}), damaged
}

// TestFetchDamageIsStorageError: a Fetch that meets damage in the
// partition's files is answered KAFKA_STORAGE_ERROR, the broker's fault,
// with no bytes, not CORRUPT_MESSAGE, which tells a client its own data
// was bad. The partition's other requests keep working: a Produce lands in
// the active segment.
func TestFetchDamageIsStorageError(t *testing.T) {
	ts, damaged := damagedStore(t)
	c := dialRaw(t, ts.addr)
	for _, off := range []int64{damaged, damaged + 1} {
		rp := c.do(fetchReq(12, 0, "d", map[int32]int64{0: off})).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if rp.ErrorCode != kerr.KafkaStorageError.Code || len(rp.RecordBatches) != 0 {
			t.Fatalf("fetch at %d in the damaged batch: error %d with %d bytes, want KAFKA_STORAGE_ERROR (%d) and none",
				off, rp.ErrorCode, len(rp.RecordBatches), kerr.KafkaStorageError.Code)
		}
	}
	if rp := produceOne(t, c, 9, "d", makeBatch(t, record.None, -1, 0, 0, 2, "after")); rp.ErrorCode != 0 || rp.BaseOffset != 100 {
		t.Fatalf("produce after the damage: error %d offset %d, want 0 at 100", rp.ErrorCode, rp.BaseOffset)
	}
}

// TestProduceBadBatchIsClientError: a Produce whose batch the log refuses
// for its contents is the client's fault (CORRUPT_MESSAGE for a malformed
// batch, INVALID_RECORD for a producer rule, as Kafka's
// CorruptRecordException and InvalidRecordException), never
// KAFKA_STORAGE_ERROR, and stores nothing. The batches pass the server's
// own framing checks (checkProduceBatch) and are refused by AppendBatch.
func TestProduceBadBatchIsClientError(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("c", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	good := makeBatch(t, record.None, -1, 0, 0, 3, "g")
	badRecord := bytes.Clone(good)
	badRecord[record.HeaderSize] = 0x7f // the first record's length varint, CRC made to match
	record.Batch(badRecord).SetMaxTimestamp(record.Batch(badRecord).MaxTimestamp()+1, record.CreateTime)
	baseOffset := bytes.Clone(good)
	record.Batch(baseOffset).SetBaseOffset(7)
	for _, tc := range []struct {
		name string
		recs []byte
		want int16
	}{
		{"malformed record", badRecord, kerr.CorruptMessage.Code},
		{"base offset", baseOffset, kerr.InvalidRecord.Code},
	} {
		if rp := produceOne(t, c, 9, "c", tc.recs); rp.ErrorCode != tc.want {
			t.Errorf("%s: error %d, want %d", tc.name, rp.ErrorCode, tc.want)
		}
	}
	l, err := ts.st.Log("c", 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 0 {
		t.Fatalf("refused produces stored %d records", l.EndOffset())
	}
}

// TestErrorCodes pins the mapping of the log's errors to Kafka's codes:
// the client's bad batch and damage on disk are told apart, and "closed"
// is one error whichever layer (Log, Store, segment, index) says it.
func TestErrorCodes(t *testing.T) {
	l, err := seglog.Open(t.TempDir(), seglog.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bad := makeBatch(t, record.None, -1, 0, 0, 2, "x")
	bad[len(bad)-1] ^= 0xff
	_, appendErr := l.AppendBatch(bad)
	for _, tc := range []struct {
		name string
		err  error
		code func(error) int16
		want int16
	}{
		{"bad batch, produce", appendErr, appendErrorCode, kerr.CorruptMessage.Code},
		{"damage, produce", &seglog.CorruptionError{File: "/d/00000000000000000000.log", Pos: 141, Reason: record.ErrShortHeader}, appendErrorCode, kerr.KafkaStorageError.Code},
		{"damage, read", &seglog.CorruptionError{File: "/d/00000000000000000000.log", Pos: 141, Reason: record.ErrShortHeader}, logErrorCode, kerr.KafkaStorageError.Code},
		{"log closed", seglog.ErrClosed, logErrorCode, kerr.NotLeaderForPartition.Code},
		{"store closed", store.ErrClosed, logErrorCode, kerr.NotLeaderForPartition.Code},
		{"segment closed under a read", fmt.Errorf("segment: /d/00000000000000000000.log: %w", segment.ErrClosed), logErrorCode, kerr.NotLeaderForPartition.Code},
		{"index closed under a read", &index.Error{Op: "read", Path: "/d/00000000000000000000.index", Pos: -1, Err: index.ErrClosed}, logErrorCode, kerr.NotLeaderForPartition.Code},
	} {
		if got := tc.code(tc.err); got != tc.want {
			t.Errorf("%s: %v is code %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
}
