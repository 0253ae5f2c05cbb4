package record

import (
	"bytes"
	"errors"
	"testing"
)

// TestAssignOffsets checks the broker's in-place rewrite leaves the CRC and
// every covered byte alone and moves the record offsets.
func TestAssignOffsets(t *testing.T) {
	b := sampleBatch(t)
	covered := append([]byte{}, b[offCRC:]...)
	b.AssignOffsets(1000, 7)
	if !bytes.Equal(b[offCRC:], covered) {
		t.Fatal("AssignOffsets touched bytes under the CRC")
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if b.BaseOffset() != 1000 || b.PartitionLeaderEpoch() != 7 || b.LastOffset() != 1002 || b.NextOffset() != 1003 {
		t.Fatalf("base %d epoch %d last %d next %d", b.BaseOffset(), b.PartitionLeaderEpoch(), b.LastOffset(), b.NextOffset())
	}
	recs, err := decodeAll(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Offset != 1000+int64(i) {
			t.Fatalf("record %d offset %d", i, r.Offset)
		}
	}
}

// TestSetMaxTimestamp checks the CRC is recomputed exactly when the max
// timestamp or type changes, and that LogAppendTime replaces record
// timestamps on read.
func TestSetMaxTimestamp(t *testing.T) {
	b := sampleBatch(t)
	orig := append([]byte{}, b...)
	maxTS, err := MaxRecordTimestamp(b, nil)
	if err != nil || maxTS != 1002 {
		t.Fatalf("MaxRecordTimestamp = %d, %v; want 1002", maxTS, err)
	}
	if b.SetMaxTimestamp(maxTS, CreateTime) || !bytes.Equal(b, orig) {
		t.Fatal("unchanged max timestamp rewrote the batch")
	}
	if !b.SetMaxTimestamp(5000, LogAppendTime) {
		t.Fatal("change not reported")
	}
	if err := b.Validate(); err != nil {
		t.Fatalf("CRC not recomputed: %v", err)
	}
	if b.CRC() == Batch(orig).CRC() || b.TimestampType() != LogAppendTime || b.MaxTimestamp() != 5000 {
		t.Fatalf("crc %x type %v max %d", b.CRC(), b.TimestampType(), b.MaxTimestamp())
	}
	recs, _ := decodeAll(b)
	for _, r := range recs {
		if r.Timestamp != 5000 {
			t.Fatalf("LogAppendTime record timestamp %d, want 5000", r.Timestamp)
		}
	}
	if !b.SetMaxTimestamp(1002, CreateTime) || !bytes.Equal(b, orig) {
		t.Fatal("switching back did not restore the original bytes")
	}
}

// TestMaxRecordTimestampCompressed checks the recompute over compressed
// records, including out-of-order timestamps, and that it reports damage.
func TestMaxRecordTimestampCompressed(t *testing.T) {
	for _, c := range Codecs {
		bld := NewBuilder(c)
		for i, ts := range []int64{50, 900, -3, 899} {
			if err := bld.Add(Record{Offset: int64(i), Timestamp: ts, Value: []byte("v")}); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := bld.Build()
		var it Iterator
		if got, err := MaxRecordTimestamp(b, &it); err != nil || got != 900 {
			t.Fatalf("%v: %d, %v", c, got, err)
		}
	}
	if _, err := MaxRecordTimestamp(withSection(None, 2, rec(0, 0, 0, 1, 1, 0)), nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short batch: %v", err)
	}
}

// TestMarkers builds COMMIT and ABORT markers and decodes them, and checks
// malformed control records are refused.
func TestMarkers(t *testing.T) {
	bld := NewBuilder(None)
	for _, m := range []Marker{{Type: ControlCommit, CoordinatorEpoch: 12}, {Type: ControlAbort, CoordinatorEpoch: -1}} {
		b, err := BuildMarker(bld, m, 77, 3, 123456)
		if err != nil {
			t.Fatal(err)
		}
		if !b.IsControl() || !b.IsTransactional() || b.ProducerID() != 77 || b.ProducerEpoch() != 3 || b.NumRecords() != 1 {
			t.Fatalf("marker batch header: control %v txn %v pid %d", b.IsControl(), b.IsTransactional(), b.ProducerID())
		}
		if err := ValidateProducerBatch(b, DefaultMaxBatchSize); !errors.Is(err, ErrInvalidProducerBatch) {
			t.Fatalf("producer control batch accepted: %v", err)
		}
		for r, err := range b.Records() {
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.Key, []byte{0, 0, 0, byte(m.Type)}) {
				t.Fatalf("key % x", r.Key)
			}
			got, err := ParseMarker(r)
			if err != nil || got != m {
				t.Fatalf("marker %+v, %v; want %+v", got, err, m)
			}
		}
	}
	bad := []Record{
		{Key: []byte{0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 1}},
		{Key: []byte{0xff, 0xff, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 1}},
		{Key: []byte{0, 0, 0, 2}, Value: []byte{0, 0, 0, 0, 0, 1}},
		{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 1}},
		{Key: []byte{0, 0, 0, 1}, Value: []byte{0x80, 0, 0, 0, 0, 1}},
	}
	for i, r := range bad {
		if _, err := ParseMarker(r); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bad marker %d: %v", i, err)
		}
	}
	// A later value version with extra fields is read for what it knows.
	m, err := ParseMarker(Record{Key: []byte{0, 1, 0, 0}, Value: []byte{0, 1, 0, 0, 0, 9, 0xaa}})
	if err != nil || m.Type != ControlAbort || m.Version != 1 || m.CoordinatorEpoch != 9 {
		t.Fatalf("v1 marker %+v %v", m, err)
	}
}

// TestCodecNames checks names round-trip and unknown ones are refused.
func TestCodecNames(t *testing.T) {
	for _, c := range Codecs {
		got, err := ParseCodec(c.String())
		if err != nil || got != c {
			t.Fatalf("%v: %v %v", c, got, err)
		}
	}
	if c, err := ParseCodec("ZSTD"); err != nil || c != Zstd {
		t.Fatalf("ZSTD: %v %v", c, err)
	}
	if _, err := ParseCodec("brotli"); !errors.Is(err, ErrUnknownCodec) {
		t.Fatalf("brotli: %v", err)
	}
	if Codec(6).Valid() || Codec(6).String() != "codec(6)" {
		t.Fatal("codec 6")
	}
}

// TestLastSequenceWraps checks sequence arithmetic wraps at 2^31-1.
func TestLastSequenceWraps(t *testing.T) {
	bld := NewBuilder(None)
	bld.SetProducer(1, 0, 1<<31-2)
	for i := range 4 {
		if err := bld.Add(Record{Offset: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := bld.Build()
	if b.LastSequence() != 1 {
		t.Fatalf("last sequence %d, want 1", b.LastSequence())
	}
	bld.SetProducer(-1, -1, -1)
	bld.Reset()
	if err := bld.Add(Record{}); err != nil {
		t.Fatal(err)
	}
	b, _ = bld.Build()
	if b.LastSequence() != -1 {
		t.Fatalf("no producer: last sequence %d", b.LastSequence())
	}
}

// TestDeleteHorizon checks the horizon is stored as the base timestamp
// with bit 6 and record timestamps stay right.
func TestDeleteHorizon(t *testing.T) {
	bld := NewBuilder(Zstd)
	bld.SetDeleteHorizon(9_000)
	bld.Reset()
	if err := bld.Add(Record{Offset: 0, Timestamp: 1_000, Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if err := bld.Add(Record{Offset: 5, Timestamp: 2_000, Key: []byte("k2")}); err != nil {
		t.Fatal(err)
	}
	b, _ := bld.Build()
	if !b.HasDeleteHorizon() || b.BaseTimestamp() != 9_000 || b.MaxTimestamp() != 2_000 || b.LastOffsetDelta() != 5 || b.NumRecords() != 2 {
		t.Fatalf("horizon %v base %d max %d", b.HasDeleteHorizon(), b.BaseTimestamp(), b.MaxTimestamp())
	}
	recs, err := decodeAll(b)
	if err != nil || recs[0].Timestamp != 1_000 || recs[1].Timestamp != 2_000 || recs[1].Offset != 5 {
		t.Fatalf("%v %+v", err, recs)
	}
}
