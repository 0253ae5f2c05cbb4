package record

import (
	"bytes"
	"encoding/binary"
	"flag"
	"hash/crc32"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestBuildMatchesSpec assembles a batch by hand from the format
// description, field by field, and checks the Builder produces the same
// bytes.
func TestBuildMatchesSpec(t *testing.T) {
	const ts = int64(1_700_000_000_000)
	bld := NewBuilder(None)
	bld.SetBaseOffset(100)
	bld.SetPartitionLeaderEpoch(5)
	bld.SetProducer(1234, 2, 77)
	bld.SetTransactional(true)
	if err := bld.Add(Record{Offset: 100, Timestamp: ts, Key: []byte("k"), Value: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	if err := bld.Add(Record{Offset: 102, Timestamp: ts - 3, Key: nil, Value: []byte{}, Headers: []Header{{Key: "h"}}}); err != nil {
		t.Fatal(err)
	}
	got, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}

	// Records: length, attributes, zig-zag varints, fields.
	r0 := []byte{0x18, 0x00, 0x00, 0x00, 0x02, 'k', 0x0a, 'h', 'e', 'l', 'l', 'o', 0x00}
	r1 := []byte{0x12, 0x00, 0x05, 0x04, 0x01, 0x00, 0x02, 0x02, 'h', 0x01}
	be := binary.BigEndian
	var w []byte
	w = be.AppendUint64(w, 100)
	w = be.AppendUint32(w, uint32(49+len(r0)+len(r1)))
	w = be.AppendUint32(w, 5)
	w = append(w, 2)
	w = be.AppendUint32(w, 0) // CRC, filled below
	w = be.AppendUint16(w, 0x0010)
	w = be.AppendUint32(w, 2)
	w = be.AppendUint64(w, uint64(ts))
	w = be.AppendUint64(w, uint64(ts))
	w = be.AppendUint64(w, 1234)
	w = be.AppendUint16(w, 2)
	w = be.AppendUint32(w, 77)
	w = be.AppendUint32(w, 2)
	w = append(append(w, r0...), r1...)
	be.PutUint32(w[17:], crc32.Checksum(w[21:], crc32.MakeTable(crc32.Castagnoli)))
	if !bytes.Equal(got, w) {
		t.Fatalf("built\n% x\nwant\n% x", []byte(got), w)
	}
}

// goldenRecords is the fixed content of the golden batch.
func goldenRecords() []Record {
	return []Record{
		{Offset: 0, Timestamp: 1_600_000_000_000, Key: []byte("user-1"), Value: []byte(`{"n":1}`)},
		{Offset: 1, Timestamp: 1_600_000_000_250, Key: nil, Value: []byte("no key")},
		{Offset: 2, Timestamp: 1_599_999_999_000, Key: []byte("user-1"), Value: nil},
		{Offset: 3, Timestamp: 1_600_000_001_000, Key: []byte{}, Value: []byte{},
			Headers: []Header{{Key: "trace", Value: []byte("abc")}, {Key: "empty", Value: []byte{}}, {Key: "null", Value: nil}}},
		{Offset: 4, Timestamp: 1_600_000_000_500, Key: []byte("k"), Value: bytes.Repeat([]byte{0xff, 0x00}, 100)},
	}
}

// TestGolden pins the bytes of a fixed uncompressed batch. Run with
// -update to rewrite testdata/golden-none.batch after a deliberate change.
func TestGolden(t *testing.T) {
	bld := NewBuilder(None)
	bld.SetProducer(42, 1, 1000)
	for _, r := range goldenRecords() {
		if err := bld.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "golden-none.batch")
	if *update {
		writeFile(t, path, got)
	}
	want := readFile(t, path)
	if !bytes.Equal(got, want) {
		t.Fatalf("built batch differs from %s (run with -update if intended)\ngot  % x\nwant % x", path, []byte(got), want)
	}
	// The golden file must also mean what it should.
	recs, err := decodeAll(Batch(want))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range goldenRecords() {
		if d := diffRecord(recs[i], r); d != "" || recs[i].Offset != r.Offset {
			t.Fatalf("golden record %d: %s (offset %d)", i, d, recs[i].Offset)
		}
	}
	if b := Batch(want); b.MaxTimestamp() != 1_600_000_001_000 || b.BaseTimestamp() != 1_600_000_000_000 {
		t.Fatalf("golden timestamps base %d max %d", b.BaseTimestamp(), b.MaxTimestamp())
	}
}

// TestCodecFraming checks the compressed record sections start the way
// Kafka's own writers start them.
func TestCodecFraming(t *testing.T) {
	section := func(c Codec, value []byte) []byte {
		bld := NewBuilder(c)
		if err := bld.Add(Record{Value: value}); err != nil {
			t.Fatal(err)
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		return b[HeaderSize:]
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // > 64 KiB, several LZ4 blocks and xerial blocks

	lz := section(LZ4, big)
	// Magic 0x184D2204 little-endian, FLG 0x60, BD 0x40, header checksum
	// 0x82 (second byte of xxHash32 of 60 40), then a zero EndMark and no
	// content checksum.
	if want := []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82}; !bytes.HasPrefix(lz, want) {
		t.Errorf("lz4 frame starts % x, want % x", lz[:7], want)
	}
	if !bytes.HasSuffix(lz, []byte{0, 0, 0, 0}) {
		t.Errorf("lz4 frame ends % x, want a zero EndMark", lz[len(lz)-4:])
	}
	// Walk the blocks: each at most 64 KiB, until the EndMark.
	p, blocks := 7, 0
	for {
		n := binary.LittleEndian.Uint32(lz[p:])
		p += 4
		if n == 0 {
			break
		}
		n &^= 1 << 31
		if n > 64<<10 {
			t.Fatalf("lz4 block of %d bytes", n)
		}
		p += int(n)
		blocks++
	}
	if p != len(lz) || blocks < 2 {
		t.Errorf("lz4: %d blocks, ended at %d of %d", blocks, p, len(lz))
	}

	sn := section(Snappy, big)
	wantHdr := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	if !bytes.HasPrefix(sn, wantHdr) {
		t.Errorf("snappy starts % x, want xerial header % x", sn[:16], wantHdr)
	}
	p, blocks = 16, 0
	for p < len(sn) {
		p += 4 + int(binary.BigEndian.Uint32(sn[p:]))
		blocks++
	}
	if p != len(sn) || blocks < 2 {
		t.Errorf("snappy: %d xerial blocks, ended at %d of %d", blocks, p, len(sn))
	}

	if gz := section(Gzip, big); !bytes.HasPrefix(gz, []byte{0x1f, 0x8b, 8}) {
		t.Errorf("gzip starts % x", gz[:3])
	}
	if zs := section(Zstd, big); !bytes.HasPrefix(zs, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		t.Errorf("zstd starts % x", zs[:4])
	}
}
