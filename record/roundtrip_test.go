package record

import (
	"bytes"
	"errors"
	"testing"
)

// TestRebuildCorpus re-encodes the records of every corpus file with every
// codec, in batches of 40 as the client did, and checks they parse back
// unchanged, and that the header fields follow from the records.
func TestRebuildCorpus(t *testing.T) {
	for _, src := range Codecs {
		want := loadRecords(t, src.String())
		for _, c := range Codecs {
			t.Run(src.String()+"-as-"+c.String(), func(t *testing.T) {
				bld := NewBuilder(c)
				bld.SetProducer(7, 3, 100)
				for start := 0; start < len(want); start += 40 {
					end := min(start+40, len(want))
					bld.Reset()
					maxTS := int64(-1)
					for i, r := range want[start:end] {
						r.Offset = int64(i)
						if err := bld.Add(r.Record); err != nil {
							t.Fatal(err)
						}
						maxTS = max(maxTS, r.Timestamp)
					}
					b, err := bld.Build()
					if err != nil {
						t.Fatal(err)
					}
					if err := ValidateProducerBatch(b, DefaultMaxBatchSize); err != nil {
						t.Fatal(err)
					}
					if b.Codec() != c || b.NumRecords() != int32(end-start) || b.LastOffsetDelta() != int32(end-start-1) ||
						b.BaseTimestamp() != want[start].Timestamp || b.MaxTimestamp() != maxTS ||
						b.ProducerID() != 7 || b.ProducerEpoch() != 3 || b.BaseSequence() != 100 ||
						b.PartitionLeaderEpoch() != -1 || b.BaseOffset() != 0 || b.Size() != len(b) {
						t.Fatalf("header fields wrong: codec %v count %d lod %d base ts %d max ts %d pid %d epoch %d seq %d",
							b.Codec(), b.NumRecords(), b.LastOffsetDelta(), b.BaseTimestamp(), b.MaxTimestamp(),
							b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
					}
					got, err := decodeAll(b)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != end-start {
						t.Fatalf("%d records back, want %d", len(got), end-start)
					}
					for i, r := range got {
						if r.Offset != int64(i) {
							t.Fatalf("offset %d, want %d", r.Offset, i)
						}
						if d := diffRecord(r, want[start+i].Record); d != "" {
							t.Fatalf("record #%d: %s", start+i, d)
						}
					}
				}
			})
		}
	}
}

// TestNullVersusEmpty checks null and empty keys, values and header
// values survive as themselves.
func TestNullVersusEmpty(t *testing.T) {
	recs := []Record{
		{Key: nil, Value: nil},
		{Key: []byte{}, Value: []byte{}},
		{Key: []byte("k"), Value: nil, Headers: []Header{{Key: "a", Value: nil}, {Key: "", Value: []byte{}}}},
		{Key: nil, Value: []byte("v"), Headers: []Header{{Key: "h", Value: []byte("x")}}},
	}
	for _, c := range Codecs {
		bld := NewBuilder(c)
		for i, r := range recs {
			r.Offset, r.Timestamp = int64(i), 1000-int64(i)*7
			if err := bld.Add(r); err != nil {
				t.Fatal(err)
			}
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeAll(b)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		for i := range recs {
			w := recs[i]
			w.Timestamp = 1000 - int64(i)*7
			if d := diffRecord(got[i], w); d != "" {
				t.Fatalf("%v record %d: %s", c, i, d)
			}
		}
		if b.MaxTimestamp() != 1000 || b.BaseTimestamp() != 1000 {
			t.Fatalf("%v: base %d max %d, want 1000 1000", c, b.BaseTimestamp(), b.MaxTimestamp())
		}
	}
}

// TestEmptyBatch checks the 61-byte empty batch Kafka's cleaner can leave
// behind: valid, no records, timestamps -1.
func TestEmptyBatch(t *testing.T) {
	for _, c := range Codecs {
		bld := NewBuilder(c)
		bld.SetLastOffsetDelta(9)
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != HeaderSize || b.NumRecords() != 0 || b.BaseTimestamp() != -1 || b.MaxTimestamp() != -1 || b.LastOffsetDelta() != 9 {
			t.Fatalf("%v: len %d count %d ts %d/%d lod %d", c, len(b), b.NumRecords(), b.BaseTimestamp(), b.MaxTimestamp(), b.LastOffsetDelta())
		}
		got, err := decodeAll(b)
		if err != nil || len(got) != 0 {
			t.Fatalf("%v: %d records, %v", c, len(got), err)
		}
		if err := ValidateProducerBatch(b, DefaultMaxBatchSize); !errors.Is(err, ErrInvalidProducerBatch) {
			t.Fatalf("%v: empty producer batch: %v", c, err)
		}
	}
}

// TestBuilderReuse checks Reset starts a clean batch in the same buffer and
// that settings survive.
func TestBuilderReuse(t *testing.T) {
	bld := NewBuilder(None)
	bld.SetTransactional(true)
	if err := bld.Add(Record{Offset: 0, Timestamp: 5, Value: bytes.Repeat([]byte("a"), 100)}); err != nil {
		t.Fatal(err)
	}
	first, _ := bld.Build()
	firstLen := len(first)
	bld.Reset()
	if err := bld.Add(Record{Offset: 0, Timestamp: 9, Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= firstLen || b.NumRecords() != 1 || b.BaseTimestamp() != 9 || !b.IsTransactional() {
		t.Fatalf("after Reset: len %d count %d base ts %d txn %v", len(b), b.NumRecords(), b.BaseTimestamp(), b.IsTransactional())
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := bld.Add(Record{Offset: 0}); err == nil {
		t.Fatal("repeated offset accepted")
	}
}

// TestBuilderWarmAllocs checks a warm builder allocates nothing per record
// when building uncompressed batches into its reused buffer.
func TestBuilderWarmAllocs(t *testing.T) {
	bld := NewBuilder(None)
	val := bytes.Repeat([]byte("x"), 100)
	hdrs := []Header{{Key: "h", Value: []byte("v")}}
	run := func() {
		bld.Reset()
		for i := range 100 {
			if err := bld.Add(Record{Offset: int64(i), Timestamp: int64(i), Key: val[:8], Value: val, Headers: hdrs}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := bld.Build(); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Fatalf("%v allocations per 100-record batch, want 0", n)
	}
}

// TestIteratorAll checks the range-over-func forms stop when the loop
// breaks and report an error once.
func TestIteratorAll(t *testing.T) {
	b := sampleBatch(t)
	var it Iterator
	if err := it.Reset(b); err != nil {
		t.Fatal(err)
	}
	n := 0
	for r, err := range it.All() {
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != int64(n) {
			t.Fatalf("offset %d, want %d", r.Offset, n)
		}
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 || !it.Next() || it.Record().Offset != 2 || it.Next() || it.Err() != nil {
		t.Fatalf("after break at 2: n=%d err=%v", n, it.Err())
	}
	b[offCRC] ^= 1
	errs := 0
	for _, err := range b.Records() {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("yielded %v", err)
		}
		errs++
	}
	if errs != 1 {
		t.Fatalf("%d errors yielded, want 1", errs)
	}
}
