package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// sampleBatch is a valid producer batch of three uncompressed records.
func sampleBatch(t testing.TB) Batch {
	t.Helper()
	bld := NewBuilder(None)
	bld.SetProducer(3, 0, 10)
	for i := range 3 {
		if err := bld.Add(Record{Offset: int64(i), Timestamp: 1000 + int64(i), Key: []byte("key"), Value: []byte("value"),
			Headers: []Header{{Key: "h", Value: []byte("v")}}}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return append(Batch(nil), b...)
}

// withSection wraps a hand-made record section in a valid header claiming
// count records.
func withSection(c Codec, count int32, section []byte) Batch {
	b := make(Batch, HeaderSize, HeaderSize+len(section))
	b = append(b, section...)
	be := binary.BigEndian
	be.PutUint32(b[offBatchLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	b[offAttributes+1] = byte(c)
	be.PutUint32(b[offLastOffsetDelta:], uint32(max(count-1, 0)))
	be.PutUint64(b[offProducerID:], ^uint64(0))
	be.PutUint16(b[offProducerEpoch:], 0xffff)
	be.PutUint32(b[offBaseSequence:], 0xffffffff)
	be.PutUint32(b[offRecordsCount:], uint32(count))
	fixCRC(b)
	return b
}

func fixCRC(b Batch) { binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC()) }

// rec assembles one record from raw field bytes, prefixing its length.
func rec(body ...byte) []byte { return append(appendVarint(nil, int64(len(body))), body...) }

// parse runs the whole read path (Validate, then every record).
func parse(b Batch) error {
	_, err := decodeAll(b)
	return err
}

// wantErr checks err matches target (nil for success) and, for a
// CorruptionError, sits at pos (pos < 0: any).
func wantErr(t *testing.T, name string, err, target error, pos int64) {
	t.Helper()
	if target == nil {
		if err != nil {
			t.Errorf("%s: unexpected error %v", name, err)
		}
		return
	}
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want %v", name, err, target)
		return
	}
	var ce *CorruptionError
	if errors.As(err, &ce) && pos >= 0 && ce.Pos != pos {
		t.Errorf("%s: corruption at byte %d, want %d (%v)", name, ce.Pos, pos, err)
	}
	if target == ErrCorrupt && ce == nil {
		t.Errorf("%s: %v is not a *CorruptionError", name, err)
	}
}

// TestDamagedHeader changes each header field in turn and checks which
// check catches it, and with which error.
func TestDamagedHeader(t *testing.T) {
	be := binary.BigEndian
	cases := []struct {
		name     string
		mutate   func(b Batch)
		recrc    bool  // fix the CRC after mutating
		parse    error // expected from Validate + iteration
		producer error // expected from ValidateProducerBatch
		pos      int64
	}{
		{"baseOffset", func(b Batch) { b.SetBaseOffset(7) }, false, nil, ErrInvalidProducerBatch, -1},
		{"batchLength+1", func(b Batch) { be.PutUint32(b[8:], uint32(len(b)-11)) }, false, ErrCorrupt, ErrCorrupt, 8},
		{"batchLength-1", func(b Batch) { be.PutUint32(b[8:], uint32(len(b)-13)) }, false, ErrCorrupt, ErrCorrupt, 8},
		{"batchLength negative", func(b Batch) { be.PutUint32(b[8:], 0x80000000) }, false, ErrCorrupt, ErrCorrupt, 8},
		{"leaderEpoch", func(b Batch) { b.SetPartitionLeaderEpoch(99) }, false, nil, nil, -1},
		{"magic 0", func(b Batch) { b[16] = 0 }, false, ErrUnsupportedMagic, ErrUnsupportedMagic, -1},
		{"magic 1", func(b Batch) { b[16] = 1 }, false, ErrUnsupportedMagic, ErrUnsupportedMagic, -1},
		{"magic 3", func(b Batch) { b[16] = 3 }, false, ErrUnsupportedMagic, ErrUnsupportedMagic, -1},
		{"crc flipped", func(b Batch) { b[17] ^= 0x01 }, false, ErrCorrupt, ErrCorrupt, 17},
		{"attributes, stale crc", func(b Batch) { b[22] |= attrControl }, false, ErrCorrupt, ErrCorrupt, 17},
		{"codec 5", func(b Batch) { b[22] |= 5 }, true, ErrUnknownCodec, ErrUnknownCodec, 22},
		{"codec 7", func(b Batch) { b[22] |= 7 }, true, ErrUnknownCodec, ErrUnknownCodec, 22},
		{"codec gzip on plain records", func(b Batch) { b[22] |= byte(Gzip) }, true, ErrCorrupt, nil, HeaderSize},
		{"control bit", func(b Batch) { b[22] |= attrControl }, true, nil, ErrInvalidProducerBatch, -1},
		{"LogAppendTime bit", func(b Batch) { b[22] |= attrLogAppendTime }, true, nil, ErrInvalidProducerBatch, -1},
		{"lastOffsetDelta, stale crc", func(b Batch) { be.PutUint32(b[23:], 5) }, false, ErrCorrupt, ErrCorrupt, 17},
		{"lastOffsetDelta", func(b Batch) { be.PutUint32(b[23:], 5) }, true, nil, ErrInvalidProducerBatch, -1},
		{"baseTimestamp, stale crc", func(b Batch) { be.PutUint64(b[27:], 1) }, false, ErrCorrupt, ErrCorrupt, 17},
		{"baseTimestamp", func(b Batch) { be.PutUint64(b[27:], 1) }, true, nil, nil, -1},
		{"maxTimestamp, stale crc", func(b Batch) { be.PutUint64(b[35:], 1) }, false, ErrCorrupt, ErrCorrupt, 17},
		{"producerId, stale crc", func(b Batch) { be.PutUint64(b[43:], 1) }, false, ErrCorrupt, ErrCorrupt, 17},
		{"producerEpoch, stale crc", func(b Batch) { be.PutUint16(b[51:], 1) }, false, ErrCorrupt, ErrCorrupt, 17},
		{"baseSequence -1 with producer id", func(b Batch) { be.PutUint32(b[53:], 0xffffffff) }, true, nil, ErrInvalidProducerBatch, -1},
		{"count, stale crc", func(b Batch) { be.PutUint32(b[57:], 2) }, false, ErrCorrupt, ErrCorrupt, 17},
		{"count too high", func(b Batch) { be.PutUint32(b[57:], 4) }, true, ErrCorrupt, ErrInvalidProducerBatch, -1},
		{"count too low", func(b Batch) { be.PutUint32(b[57:], 2) }, true, ErrCorrupt, ErrInvalidProducerBatch, -1},
		{"count zero", func(b Batch) { be.PutUint32(b[57:], 0) }, true, ErrCorrupt, ErrInvalidProducerBatch, HeaderSize},
		{"count negative", func(b Batch) { be.PutUint32(b[57:], 0xffffffff) }, true, ErrCorrupt, ErrCorrupt, 57},
		{"unchanged", func(b Batch) {}, false, nil, nil, -1},
	}
	for _, c := range cases {
		b := sampleBatch(t)
		c.mutate(b)
		if c.recrc {
			fixCRC(b)
		}
		wantErr(t, c.name+" (parse)", parse(b), c.parse, c.pos)
		wantErr(t, c.name+" (producer)", ValidateProducerBatch(b, DefaultMaxBatchSize), c.producer, -1)
	}

	b := sampleBatch(t)
	wantErr(t, "too large", ValidateProducerBatch(b, len(b)-1), ErrTooLarge, -1)
	wantErr(t, "exactly max", ValidateProducerBatch(b, len(b)), nil, -1)
}

// TestTruncated cuts a batch at every length: Validate must refuse each
// prefix with a corruption error, and PeekEntry must say what it can.
func TestTruncated(t *testing.T) {
	for _, c := range Codecs {
		bld := NewBuilder(c)
		for i := range 5 {
			if err := bld.Add(Record{Offset: int64(i), Value: bytes.Repeat([]byte{'a' + byte(i)}, 50)}); err != nil {
				t.Fatal(err)
			}
		}
		full, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(full) {
			cut := append(Batch(nil), full[:n]...)
			err := parse(cut)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v cut at %d: %v, want corruption", c, n, err)
			}
			size, magic, perr := PeekEntry(cut)
			switch {
			case n < PeekSize:
				if !errors.Is(perr, ErrShortHeader) {
					t.Fatalf("%v PeekEntry of %d bytes: %v", c, n, perr)
				}
			case perr != nil || size != len(full) || magic != 2:
				t.Fatalf("%v PeekEntry of %d bytes: %d %d %v", c, n, size, magic, perr)
			}
		}
		// Truncating the record section but fixing length and CRC leaves
		// a well-framed batch whose records are cut: iteration fails.
		for n := HeaderSize; n < len(full); n++ {
			cut := append(Batch(nil), full[:n]...)
			binary.BigEndian.PutUint32(cut[offBatchLength:], uint32(n-LogOverhead))
			fixCRC(cut)
			if err := parse(cut); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v records cut at %d: %v, want corruption", c, n, err)
			}
		}
	}
}

// TestDamagedRecords feeds hand-made record sections with one framing
// error each.
func TestDamagedRecords(t *testing.T) {
	good := rec(0, 0, 0, 0x02, 'k', 0x02, 'v', 0) // key "k", value "v", no headers
	cases := []struct {
		name    string
		count   int32
		section []byte
		want    error
		pos     int64
	}{
		{"good", 1, good, nil, -1},
		{"good, null key and value", 1, rec(0, 0, 0, 1, 1, 0), nil, -1},
		{"count too high", 2, good, ErrCorrupt, HeaderSize + int64(len(good))},
		{"count too low", 1, append(append([]byte{}, good...), good...), ErrCorrupt, HeaderSize + int64(len(good))},
		{"trailing garbage", 1, append(append([]byte{}, good...), 0), ErrCorrupt, HeaderSize + int64(len(good))},
		{"length overlong varint", 1, append([]byte{0x90, 0x80, 0x80, 0x80, 0x80, 0x00}, good[1:]...), ErrCorrupt, HeaderSize},
		{"length 5-byte varint overflows", 1, append([]byte{0x90, 0x80, 0x80, 0x80, 0x10}, good[1:]...), ErrCorrupt, HeaderSize},
		{"timestamp overlong varlong", 1, rec(0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 1, 1, 0), ErrCorrupt, HeaderSize + 2},
		{"offset overlong varint", 1, rec(0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 1, 1, 0), ErrCorrupt, HeaderSize + 3},
		{"record length negative", 1, append([]byte{0x01}, good[1:]...), ErrCorrupt, HeaderSize},
		{"record length past end", 1, append([]byte{0x40}, good[1:]...), ErrCorrupt, HeaderSize},
		{"record length longer than fields", 1, rec(0, 0, 0, 0x02, 'k', 0x02, 'v', 0, 0), ErrCorrupt, HeaderSize},
		{"record length shorter than fields", 1, append([]byte{0x0c}, good[1:]...), ErrCorrupt, -1},
		{"key length -2", 1, rec(0, 0, 0, 0x03, 'k', 0x02, 'v', 0), ErrCorrupt, HeaderSize + 4},
		{"key length past record", 1, rec(0, 0, 0, 0x20, 'k', 0x02, 'v', 0), ErrCorrupt, HeaderSize + 4},
		{"value length past record", 1, rec(0, 0, 0, 0x02, 'k', 0x20, 'v', 0), ErrCorrupt, HeaderSize + 6},
		{"value length negative", 1, rec(0, 0, 0, 0x02, 'k', 0x05, 'v', 0), ErrCorrupt, HeaderSize + 6},
		{"header count negative", 1, rec(0, 0, 0, 1, 1, 0x01), ErrCorrupt, HeaderSize + 6},
		{"header count past record", 1, rec(0, 0, 0, 1, 1, 0x7e), ErrCorrupt, HeaderSize + 6},
		{"header key length negative", 1, rec(0, 0, 0, 1, 1, 0x02, 0x01, 1), ErrCorrupt, HeaderSize + 7},
		{"header key length past record", 1, rec(0, 0, 0, 1, 1, 0x02, 0x10, 1), ErrCorrupt, HeaderSize + 7},
		{"header value length past record", 1, rec(0, 0, 0, 1, 1, 0x02, 0x02, 'h', 0x10), ErrCorrupt, HeaderSize + 9},
		{"record body too short", 1, rec(0, 0, 0), ErrCorrupt, HeaderSize},
	}
	for _, c := range cases {
		wantErr(t, c.name, parse(withSection(None, c.count, c.section)), c.want, c.pos)
	}
}

// TestDecompressionBomb checks every codec refuses a record section that
// expands past the limit, without allocating far past it.
func TestDecompressionBomb(t *testing.T) {
	zeros := make([]byte, DefaultMaxDecompressed+1<<20)
	for _, c := range Codecs[1:] {
		section, err := compress(nil, c, zeros)
		if err != nil {
			t.Fatal(err)
		}
		b := withSection(c, 1, section)
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		var it Iterator
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err = it.Reset(b)
		runtime.ReadMemStats(&after)
		wantErr(t, c.String()+" bomb", err, ErrDecompressLimit, -1)
		if errors.Is(err, ErrCorrupt) {
			t.Errorf("%v: limit error also matches ErrCorrupt", c)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*DefaultMaxDecompressed {
			t.Errorf("%v: %d bytes allocated for a %d-byte limit", c, alloc, DefaultMaxDecompressed)
		}
		// A smaller configured limit applies too, and a batch under it
		// still decodes with the same iterator.
		it.MaxDecompressed = 1 << 16
		small, _ := compress(nil, c, zeros[:1<<17])
		wantErr(t, c.String()+" small limit", it.Reset(withSection(c, 1, small)), ErrDecompressLimit, -1)
		bld := NewBuilder(c)
		if err := bld.Add(Record{Value: zeros[:1000]}); err != nil {
			t.Fatal(err)
		}
		ok, _ := bld.Build()
		if err := it.Reset(ok); err != nil || !it.Next() || len(it.Record().Value) != 1000 {
			t.Errorf("%v: batch under the limit: %v %v", c, err, it.Err())
		}
	}
	// A raw snappy block whose preamble claims 4 GiB is refused before
	// anything is allocated for it.
	wantErr(t, "snappy preamble", parse(withSection(Snappy, 1, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0})), ErrDecompressLimit, -1)
}

// TestDamagedCompressed checks broken compressed streams are corruption at
// the start of the record section.
func TestDamagedCompressed(t *testing.T) {
	for _, c := range Codecs[1:] {
		bld := NewBuilder(c)
		for i := range 20 {
			if err := bld.Add(Record{Offset: int64(i), Value: bytes.Repeat([]byte("payload "), 20)}); err != nil {
				t.Fatal(err)
			}
		}
		good, _ := bld.Build()
		section := append([]byte{}, good[HeaderSize:]...)
		damaged := [][]byte{
			section[:len(section)/2],
			{0xde, 0xad, 0xbe, 0xef},
		}
		flipped := append([]byte{}, section...)
		flipped[len(flipped)/2] ^= 0xff
		damaged = append(damaged, flipped)
		for i, d := range damaged {
			err := parse(withSection(c, 20, d))
			if err == nil && i == 2 {
				continue // a flipped literal byte can decode; the record check may still pass
			}
			wantErr(t, c.String()+" damaged", err, ErrCorrupt, -1)
		}
	}
	// A xerial block length that runs past the end.
	x := append(append([]byte{}, xerialHeader[:]...), 0, 0, 1, 0, 1, 2)
	wantErr(t, "xerial block length", parse(withSection(Snappy, 1, x)), ErrCorrupt, HeaderSize)
}

// TestPeekEntry checks framing of legacy and damaged entries.
func TestPeekEntry(t *testing.T) {
	entry := func(length int32, magic byte) []byte {
		b := make([]byte, PeekSize)
		binary.BigEndian.PutUint32(b[8:], uint32(length))
		b[16] = magic
		return b
	}
	cases := []struct {
		hdr   []byte
		size  int
		magic int8
		want  error
	}{
		{entry(14, 0), 26, 0, nil},
		{entry(22, 1), 34, 1, nil},
		{entry(49, 2), 61, 2, nil},
		{entry(13, 0), 0, 0, ErrCorrupt},
		{entry(-5, 1), 0, 1, ErrCorrupt},
		{entry(48, 2), 0, 2, ErrCorrupt},
		{entry(100, 7), 112, 7, ErrUnsupportedMagic},
		{entry(100, 0x80), 112, -128, ErrUnsupportedMagic},
		{entry(49, 2)[:16], 0, 0, ErrShortHeader},
	}
	for i, c := range cases {
		size, magic, err := PeekEntry(c.hdr)
		if size != c.size || magic != c.magic || (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("case %d: %d %d %v, want %d %d %v", i, size, magic, err, c.size, c.magic, c.want)
		}
	}
	// A legacy entry is refused by Validate as unsupported, not corrupt,
	// so scanners can skip it by size.
	legacy := make([]byte, 26)
	binary.BigEndian.PutUint32(legacy[8:], 14)
	legacy[16] = 1
	err := Batch(legacy).Validate()
	if !errors.Is(err, ErrUnsupportedMagic) || errors.Is(err, ErrCorrupt) {
		t.Errorf("legacy entry: %v", err)
	}
}

// TestCorruptionError checks the error type's contract.
func TestCorruptionError(t *testing.T) {
	b := sampleBatch(t)
	b[17] ^= 1
	err := b.Validate()
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Pos != 17 {
		t.Fatalf("%v", err)
	}
	moved := Offset(err, "00000000000000000000.log", 4096)
	if !errors.As(moved, &ce) || ce.Pos != 4096+17 || ce.File != "00000000000000000000.log" || !errors.Is(moved, ErrCorrupt) {
		t.Fatalf("Offset: %v", moved)
	}
	if !bytes.Contains([]byte(moved.Error()), []byte("00000000000000000000.log at byte 4113")) {
		t.Fatalf("message %q", moved.Error())
	}
	if Offset(ErrTooLarge, "f", 1) != ErrTooLarge {
		t.Fatal("Offset changed a non-corruption error")
	}
	// The package is named once, whatever the reason's own prefix, and
	// the reason still matches through the error.
	for _, e := range []*CorruptionError{{File: "x.log", Pos: 9, Reason: ErrTooLarge}, {Pos: 9, Reason: ErrUnknownCodec}, {Pos: 1, Reason: errors.New("odd")}} {
		if msg := e.Error(); strings.Count(msg, "record:") != 1 || !strings.Contains(msg, "at byte") {
			t.Errorf("message %q: want the package named once and the position", msg)
		}
		if !errors.Is(e, e.Reason) || !errors.Is(e, ErrCorrupt) {
			t.Errorf("%v does not match its reason and ErrCorrupt", e)
		}
	}
}
