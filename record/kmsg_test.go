package record

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/seglog/seglog/internal/kmsgtest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKmsgReadsOurs checks franz-go's kmsg decodes a batch we build into
// the same header fields and records, for the golden records and the
// first 100 corpus records.
func TestKmsgReadsOurs(t *testing.T) {
	recs := goldenRecords()
	for i, r := range loadRecords(t, "none")[:100] {
		r.Offset = int64(len(goldenRecords()) + i)
		recs = append(recs, r.Record)
	}
	bld := NewBuilder(None)
	bld.SetBaseOffset(0)
	bld.SetProducer(9, 4, 50)
	for _, r := range recs {
		if err := bld.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if kb.FirstOffset != b.BaseOffset() || int(kb.Length) != len(b)-12 || kb.Magic != 2 ||
		uint32(kb.CRC) != crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) ||
		kb.NumRecords != int32(len(recs)) || kb.LastOffsetDelta != int32(len(recs)-1) ||
		kb.ProducerID != 9 || kb.ProducerEpoch != 4 || kb.FirstSequence != 50 ||
		kb.FirstTimestamp != recs[0].Timestamp || kb.PartitionLeaderEpoch != -1 {
		t.Fatalf("kmsg header %+v", kb)
	}
	krs, err := kmsgtest.Records(kb.Records)
	if err != nil {
		t.Fatal(err)
	}
	if len(krs) != len(recs) {
		t.Fatalf("kmsg found %d records, want %d", len(krs), len(recs))
	}
	maxTS := int64(-1)
	for i, kr := range krs {
		got := Record{Offset: kb.FirstOffset + int64(kr.OffsetDelta), Timestamp: kb.FirstTimestamp + kr.TimestampDelta64,
			Key: kr.Key, Value: kr.Value}
		for _, h := range kr.Headers {
			got.Headers = append(got.Headers, Header{Key: h.Key, Value: h.Value})
		}
		if d := diffRecord(got, recs[i]); d != "" || got.Offset != recs[i].Offset {
			t.Fatalf("record %d via kmsg: %s (offset %d)", i, d, got.Offset)
		}
		maxTS = max(maxTS, got.Timestamp)
	}
	if kb.MaxTimestamp != maxTS {
		t.Fatalf("max timestamp %d, records say %d", kb.MaxTimestamp, maxTS)
	}
}

// TestOursReadsKmsg builds a batch with franz-go's kmsg types and checks we
// parse it into the records it was given.
func TestOursReadsKmsg(t *testing.T) {
	recs := goldenRecords()
	base := recs[0].Timestamp
	var section []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.Timestamp - base, OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		body := kr.AppendTo(nil)[1:] // kmsg writes Length as given (0); measure the body
		kr.Length = int32(len(body))
		section = kr.AppendTo(section)
	}
	kb := kmsg.RecordBatch{
		FirstOffset: 500, PartitionLeaderEpoch: 3, Magic: 2, Attributes: 0x10,
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: base, MaxTimestamp: 1_600_000_001_000,
		ProducerID: 11, ProducerEpoch: 1, FirstSequence: 0, NumRecords: int32(len(recs)), Records: section,
	}
	kb.Length = int32(HeaderSize - LogOverhead + len(section))
	raw := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))

	b := Batch(raw)
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if b.BaseOffset() != 500 || b.PartitionLeaderEpoch() != 3 || !b.IsTransactional() || b.NextOffset() != 505 {
		t.Fatalf("header: base %d epoch %d txn %v next %d", b.BaseOffset(), b.PartitionLeaderEpoch(), b.IsTransactional(), b.NextOffset())
	}
	got, err := decodeAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("%d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if d := diffRecord(got[i], recs[i]); d != "" || got[i].Offset != 500+int64(i) {
			t.Fatalf("record %d: %s (offset %d)", i, d, got[i].Offset)
		}
	}
	// And our builder, given the same inputs, writes the same bytes.
	bld := NewBuilder(None)
	bld.SetBaseOffset(500)
	bld.SetPartitionLeaderEpoch(3)
	bld.SetTransactional(true)
	bld.SetProducer(11, 1, 0)
	for _, r := range got {
		if err := bld.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	ours, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours, raw) {
		t.Fatalf("our build differs from kmsg's\nours % x\nkmsg % x", []byte(ours), raw)
	}
}
