package record

import (
	"bytes"
	"path/filepath"
	"runtime"
	"testing"
)

// fuzzLimit is the decompression cap used while fuzzing, small so that
// the allocation bound below is meaningful.
const fuzzLimit = 1 << 20

// FuzzParseBatch feeds arbitrary bytes to the read path. It must never
// panic, never allocate far past the decompression cap, and whatever it
// accepts must rebuild into a batch that parses back to the same records
// and rebuilds to the same bytes (build → parse → build is stable).
// Seeds: every batch of the real-client corpus, the golden batch and a few
// damaged ones.
//
// The allocation check reads runtime.MemStats, which stops the world, so
// minimizing a large new input is slow; fuzz with a short
// -fuzzminimizetime, for example:
//
//	go test ./record -run '^$' -fuzz FuzzParseBatch -fuzztime 5m -fuzzminimizetime 5s
func FuzzParseBatch(f *testing.F) {
	for _, c := range Codecs {
		for _, suffix := range []string{".batches", ".broker-log"} {
			for _, b := range splitEntries(f, readFile(f, filepath.Join(corpusDir, c.String()+suffix))) {
				f.Add([]byte(b))
			}
		}
	}
	golden := readFile(f, filepath.Join("testdata", "golden-none.batch"))
	f.Add(golden)
	f.Add(golden[:40])
	f.Add([]byte(withSection(Snappy, 1, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0})))
	f.Add([]byte(withSection(None, 1, rec(0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 1, 1, 0))))

	f.Fuzz(func(t *testing.T, data []byte) {
		PeekEntry(data)
		b := Batch(data)
		valid := b.Validate() == nil

		var it Iterator
		it.MaxDecompressed = fuzzLimit
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var recs []Record
		err := it.Reset(b)
		if err == nil {
			for it.Next() {
				recs = append(recs, it.Record().Clone())
			}
			err = it.Err()
		}
		runtime.ReadMemStats(&after)
		// Decoders own some fixed-size state (an LZ4 block of up to 4 MiB,
		// zstd tables), so the bound has slack; what it catches is memory
		// sized by a length field.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*fuzzLimit+8<<20+uint64(64*len(data)) {
			t.Fatalf("%d bytes allocated for a %d-byte input", alloc, len(data))
		}
		if len(it.data) > fuzzLimit {
			t.Fatalf("decoded %d bytes past the %d cap", len(it.data), fuzzLimit)
		}
		if err != nil || !valid {
			return
		}
		if len(recs) != int(b.NumRecords()) {
			t.Fatalf("%d records accepted, header counts %d", len(recs), b.NumRecords())
		}

		first, ok := rebuild(t, b, recs)
		if !ok {
			return // e.g. offsets not increasing: valid to read, not buildable
		}
		first = append(Batch(nil), first...)
		again, err := decodeAll(first)
		if err != nil {
			t.Fatalf("rebuilt batch does not parse: %v", err)
		}
		for i := range recs {
			if d := diffRecord(again[i], recs[i]); d != "" || again[i].Offset != recs[i].Offset {
				t.Fatalf("record %d changed by rebuild: %s", i, d)
			}
		}
		second, ok := rebuild(t, first, again)
		if !ok || !bytes.Equal(first, second) {
			t.Fatalf("build → parse → build not stable\n% x\n% x", []byte(first), []byte(second))
		}
	})
}

// rebuild encodes recs with b's header settings.
func rebuild(t *testing.T, b Batch, recs []Record) (Batch, bool) {
	bld := NewBuilder(b.Codec())
	bld.SetBaseOffset(b.BaseOffset())
	bld.SetPartitionLeaderEpoch(b.PartitionLeaderEpoch())
	bld.SetProducer(b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
	bld.SetTransactional(b.IsTransactional())
	bld.SetControl(b.IsControl())
	if b.TimestampType() == LogAppendTime {
		if b.MaxTimestamp() < 0 {
			return nil, false // the builder takes a negative append time as "CreateTime"
		}
		bld.SetLogAppendTime(b.MaxTimestamp())
	}
	if b.HasDeleteHorizon() && b.BaseTimestamp() >= 0 {
		bld.SetDeleteHorizon(b.BaseTimestamp())
	}
	bld.Reset()
	bld.SetBaseTimestamp(b.BaseTimestamp())
	bld.SetLastOffsetDelta(max(b.LastOffsetDelta(), 0))
	for _, r := range recs {
		if r.Offset-b.BaseOffset() < 0 || r.Offset-b.BaseOffset() > 1<<31-1 {
			return nil, false
		}
		if err := bld.AddRecord(int32(r.Offset-b.BaseOffset()), r.Timestamp-b.BaseTimestamp(), r.Key, r.Value, r.Headers); err != nil {
			return nil, false
		}
	}
	out, err := bld.Build()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return out, true
}

// FuzzBuild builds a batch from arbitrary record contents with each codec
// and checks it parses back to them.
func FuzzBuild(f *testing.F) {
	f.Add([]byte("key"), []byte("value"), "hdr", []byte("hv"), int64(1_700_000_000_000), int64(-5), uint8(0), uint8(3))
	f.Add([]byte{}, []byte(nil), "", []byte(nil), int64(-1), int64(1<<40), uint8(4), uint8(1))
	f.Fuzz(func(t *testing.T, key, value []byte, hk string, hv []byte, ts, step int64, codec, n uint8) {
		c := Codec(codec % 5)
		bld := NewBuilder(c)
		var want []Record
		for i := range int(n%8) + 1 {
			r := Record{Offset: int64(i) * 2, Timestamp: ts + int64(i)*step, Key: key, Value: value}
			if i%2 == 1 {
				r.Key = nil
				r.Headers = []Header{{Key: hk, Value: hv}}
			}
			if err := bld.Add(r); err != nil {
				t.Fatal(err)
			}
			want = append(want, r)
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeAll(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		for i := range want {
			if d := diffRecord(got[i], want[i]); d != "" || got[i].Offset != want[i].Offset {
				t.Fatalf("record %d: %s", i, d)
			}
		}
	})
}
