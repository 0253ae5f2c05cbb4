package record

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// refAdd is the Builder.Add encoder as it was before the fast path: every
// field appended with its own capacity check. It is kept, with its own
// varint helpers, as an independent oracle for the equivalence test and as
// the baseline of BenchmarkBuilderAddReference.
func refAdd(b *Builder, r Record) error {
	d := r.Offset - b.baseOffset
	if d < 0 || d > math.MaxInt32 {
		return fmt.Errorf("%w: offset %d outside the batch (base %d)", ErrOffsetOrder, r.Offset, b.baseOffset)
	}
	if !b.baseTSSet {
		b.baseTS, b.baseTSSet = r.Timestamp, true
	}
	return refAddRecord(b, int32(d), r.Timestamp-b.baseTS, r.Key, r.Value, r.Headers)
}

// refAddRecord is the old Builder.AddRecord.
func refAddRecord(b *Builder, offsetDelta int32, timestampDelta int64, key, value []byte, headers []Header) error {
	if offsetDelta <= b.lastDelta {
		return fmt.Errorf("%w: offset delta %d does not follow %d", ErrOffsetOrder, offsetDelta, b.lastDelta)
	}
	if b.count == math.MaxInt32 {
		return fmt.Errorf("record: more than 2^31-1 records: %w", ErrTooLarge)
	}
	if !b.baseTSSet {
		b.baseTS, b.baseTSSet = 0, true
	}
	body := 1 + refVarintLen(timestampDelta) + refVarintLen(int64(offsetDelta)) +
		refBytesLen(key) + refBytesLen(value) + refVarintLen(int64(len(headers)))
	for _, h := range headers {
		body += refVarintLen(int64(len(h.Key))) + len(h.Key) + refBytesLen(h.Value)
	}
	if body > math.MaxInt32 {
		return fmt.Errorf("record: record of %d bytes too large: %w", body, ErrTooLarge)
	}
	buf := &b.out
	if b.codec != None {
		buf = &b.raw
	}
	dst := *buf
	if cap(dst)-len(dst) < body+5 {
		dst = grow(dst, body+5)
	}
	dst = refAppendVarint(dst, int64(body))
	dst = append(dst, 0)
	dst = refAppendVarint(dst, timestampDelta)
	dst = refAppendVarint(dst, int64(offsetDelta))
	dst = refAppendBytes(dst, key)
	dst = refAppendBytes(dst, value)
	dst = refAppendVarint(dst, int64(len(headers)))
	for _, h := range headers {
		dst = refAppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = refAppendBytes(dst, h.Value)
	}
	*buf = dst
	b.lastDelta = offsetDelta
	b.count++
	if ts := b.baseTS + timestampDelta; ts > b.maxTS {
		b.maxTS = ts
	}
	return nil
}

func refVarintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func refAppendVarint(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func refBytesLen(v []byte) int {
	if v == nil {
		return 1
	}
	return refVarintLen(int64(len(v))) + len(v)
}

func refAppendBytes(dst, v []byte) []byte {
	if v == nil {
		return append(dst, 1) // zig-zag -1
	}
	dst = refAppendVarint(dst, int64(len(v)))
	return append(dst, v...)
}

// randBytes returns nil, empty, or random bytes of a length chosen to
// cross the one-, two- and three-byte varint boundaries of the length
// (64 and 8192 bytes, zig-zag encoded).
func randBytes(rng *rand.Rand) []byte {
	var n int
	switch p := rng.Intn(20); {
	case p < 4:
		return nil
	case p < 6:
		return []byte{}
	case p < 13:
		n = 1 + rng.Intn(20)
	case p < 17:
		n = 60 + rng.Intn(10) // 63 | 64
	case p < 19:
		n = 100 + rng.Intn(4000)
	default:
		n = 8188 + rng.Intn(8) // 8191 | 8192
	}
	b := make([]byte, n)
	rng.Read(b)
	return b
}

// randHeaders returns nil, empty or up to four headers, with empty keys
// and null values among them.
func randHeaders(rng *rand.Rand) []Header {
	switch rng.Intn(4) {
	case 0:
		return nil
	case 1:
		return []Header{}
	}
	hs := make([]Header, 1+rng.Intn(4))
	for i := range hs {
		hs[i] = Header{Key: string(randBytes(rng)[:0:0]), Value: randBytes(rng)}
		if rng.Intn(3) > 0 {
			hs[i].Key = fmt.Sprintf("h%d", rng.Intn(1000))
		}
	}
	return hs
}

// randInt64 returns v moved by a random step, small, large or extreme in
// either direction.
func randInt64(rng *rand.Rand, v int64) int64 {
	switch rng.Intn(10) {
	case 0:
		return v
	case 1:
		return v + rng.Int63n(1<<40) - 1<<39
	case 2:
		return []int64{math.MinInt64, math.MaxInt64, -1, 0}[rng.Intn(4)]
	default:
		return v + rng.Int63n(200) - 100
	}
}

// TestAddMatchesReference builds random batches with Add, AddAt and
// AddRecord, mixed, and with the encoder they replaced (refAdd,
// refAddRecord), and checks every call fails or succeeds alike, with the
// same message, and the record sections and batches come out
// byte-identical, for every codec; then reads the records back.
func TestAddMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	got, want := NewBuilder(None), NewBuilder(None)
	var it Iterator
	for iter := range 400 {
		c := Codecs[iter%len(Codecs)]
		base := []int64{0, 0, 1000, 1 << 40, -5}[rng.Intn(5)]
		appendTime := []int64{-1, -1, 1_700_000_000_000}[rng.Intn(3)]
		for _, bld := range []*Builder{got, want} {
			bld.SetCodec(c)
			bld.SetBaseOffset(base)
			bld.SetLogAppendTime(appendTime)
		}
		if rng.Intn(4) == 0 {
			ts := randInt64(rng, 1_700_000_000_000)
			got.SetBaseTimestamp(ts)
			want.SetBaseTimestamp(ts)
		}
		var recs []Record // what was added, absolute
		off, ts := base, randInt64(rng, 1_700_000_000_000)
		for range rng.Intn(40) {
			switch p := rng.Intn(100); {
			case p < 3: // repeated, or before the base
				off -= rng.Int63n(3)
			case p < 5: // beyond the batch
				off += math.MaxInt32
			case p < 70:
				off++
			case p < 95:
				off += 1 + rng.Int63n(100)
			default:
				off += 1 + rng.Int63n(1<<20)
			}
			ts = randInt64(rng, ts)
			r := Record{Offset: off, Timestamp: ts, Key: randBytes(rng), Value: randBytes(rng), Headers: randHeaders(rng)}
			var errGot, errWant error
			switch rng.Intn(3) {
			case 0:
				errGot, errWant = got.Add(r), refAdd(want, r)
			case 1:
				// Offset and Timestamp are to be ignored.
				rr := r
				rr.Offset, rr.Timestamp = rng.Int63(), rng.Int63()
				errGot, errWant = got.AddAt(off, ts, &rr), refAdd(want, r)
			default:
				od, td := int32(off-base), ts-want.baseTS
				if !want.baseTSSet {
					td = ts
				}
				r.Offset, r.Timestamp = base+int64(od), td // Timestamp fixed below
				errGot = got.AddRecord(od, td, r.Key, r.Value, r.Headers)
				errWant = refAddRecord(want, od, td, r.Key, r.Value, r.Headers)
				r.Timestamp = want.baseTS + td
			}
			if (errGot == nil) != (errWant == nil) || errGot != nil && errGot.Error() != errWant.Error() {
				t.Fatalf("batch %d (%v), record %d: error %v, reference %v", iter, c, len(recs), errGot, errWant)
			}
			if errGot == nil {
				recs = append(recs, r)
			}
		}
		if !bytes.Equal(got.raw, want.raw) {
			t.Fatalf("batch %d (%v): record section differs from the reference\n% x\n% x", iter, c, got.raw, want.raw)
		}
		if got.UncompressedSize() != want.UncompressedSize() {
			t.Fatalf("batch %d (%v): uncompressed size %d, reference %d", iter, c, got.UncompressedSize(), want.UncompressedSize())
		}
		gb, err := got.Build()
		if err != nil {
			t.Fatal(err)
		}
		wb, err := want.Build()
		if err != nil {
			t.Fatal(err)
		}
		// Compression being deterministic, the batches are equal whatever
		// the codec.
		if !bytes.Equal(gb, wb) {
			t.Fatalf("batch %d (%v): differs from the reference\n% x\n% x", iter, c, []byte(gb), []byte(wb))
		}
		if err := it.Reset(gb); err != nil {
			t.Fatalf("batch %d (%v): %v", iter, c, err)
		}
		for i := 0; it.Next(); i++ {
			if i >= len(recs) {
				t.Fatalf("batch %d (%v): more records than the %d added", iter, c, len(recs))
			}
			g, w := it.Record(), recs[i]
			if appendTime >= 0 {
				w.Timestamp = appendTime // what readers see
			}
			if d := diffRecord(g, w); d != "" || g.Offset != w.Offset {
				t.Fatalf("batch %d (%v), record %d: offset %d, want %d; %s", iter, c, i, g.Offset, w.Offset, d)
			}
		}
		if it.Err() != nil || gb.NumRecords() != int32(len(recs)) {
			t.Fatalf("batch %d (%v): %d records, want %d: %v", iter, c, gb.NumRecords(), len(recs), it.Err())
		}
		got.Reset()
		want.Reset()
	}
}

// TestAddAtWarmAllocs checks AddAt, like Add, allocates nothing once the
// builder's buffer has grown, on both the path for records without
// headers and the one for records with.
func TestAddAtWarmAllocs(t *testing.T) {
	bld := NewBuilder(None)
	recs := benchAddRecords(100)
	recs[1].Headers = []Header{{Key: "h", Value: []byte("v")}}
	run := func() {
		bld.Reset()
		for i := range recs {
			if err := bld.AddAt(int64(i), recs[i].Timestamp, &recs[i]); err != nil {
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
