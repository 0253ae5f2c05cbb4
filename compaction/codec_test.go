package compaction

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// decompress undoes a codec without the record package, so a batch is
// checked by code that did not write it.
func decompress(t *testing.T, codec record.Codec, data []byte) []byte {
	t.Helper()
	var r io.Reader
	switch codec {
	case record.None:
		return data
	case record.Gzip:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case record.Zstd:
		zr, err := zstd.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	case record.LZ4:
		r = lz4.NewReader(bytes.NewReader(data))
	case record.Snappy:
		xerial := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}
		if !bytes.HasPrefix(data, xerial) {
			out, err := snappy.Decode(nil, data)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		var out []byte
		for p := 16; p < len(data); {
			n := int(binary.BigEndian.Uint32(data[p:]))
			block, err := snappy.Decode(nil, data[p+4:p+4+n])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, block...)
			p += 4 + n
		}
		return out
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%v: %v", codec, err)
	}
	return out
}

// kmsgDecode reads a batch with franz-go's kmsg and an independent
// decompressor and returns its records.
func kmsgDecode(t *testing.T, b record.Batch) []record.Record {
	t.Helper()
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if uint32(kb.CRC) != crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)) {
		t.Fatalf("batch at %d: CRC mismatch", kb.FirstOffset)
	}
	if kb.FirstOffset != b.BaseOffset() || kb.LastOffsetDelta != b.LastOffsetDelta() || kb.NumRecords != b.NumRecords() {
		t.Fatalf("kmsg header %+v disagrees", kb)
	}
	section := decompress(t, record.Codec(kb.Attributes&7), kb.Records)
	var out []record.Record
	for len(section) > 0 {
		n, w := binary.Varint(section)
		if w <= 0 || n < 0 || int(n) > len(section)-w {
			t.Fatalf("batch at %d: bad record length", kb.FirstOffset)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(section[:w+int(n)]); err != nil {
			t.Fatal(err)
		}
		out = append(out, record.Record{Offset: kb.FirstOffset + int64(kr.OffsetDelta), Key: kr.Key, Value: kr.Value})
		section = section[w+int(n):]
	}
	if len(out) != int(kb.NumRecords) {
		t.Fatalf("batch at %d: kmsg found %d records, header says %d", kb.FirstOffset, len(out), kb.NumRecords)
	}
	return out
}

// TestEveryCodec compacts the corpus of each codec, as a producer sent it,
// and checks that the rewritten batches keep their codec, read back as the
// model says, pass fsck and decode with franz-go's kmsg.
func TestEveryCodec(t *testing.T) {
	for _, codec := range corpusCodecs {
		t.Run(codec, func(t *testing.T) {
			// The broker's log of what the client produced (offsets
			// assigned; for zstd with transaction markers), in segments
			// of 8 batches, the last one active.
			batches := corpusBatches(t, codec+".broker-log")
			fsys := vfs.NewMem()
			writeSegments(t, fsys, batches, func(i int) bool { return i%8 == 0 })
			o := testOptions(fsys)
			o.SegmentBytes = 128 << 10
			o.MaxBatchBytes = 128 << 10
			l, err := seglogOpen(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			want, err := record.ParseCodec(codec)
			if err != nil {
				t.Fatal(err)
			}
			codecAt := map[int64]record.Codec{}
			m := model{}
			aborted := map[int64]bool{}
			corpus := corpusRecords(t, codec)
			n := 0
			for _, b := range batches {
				codecAt[b.BaseOffset()] = b.Codec()
				if b.IsControl() {
					continue
				}
				for r, err := range b.Records() {
					if err != nil {
						t.Fatal(err)
					}
					c := corpus[n]
					n++
					if !bytes.Equal(r.Key, c.bytes(c.Key)) {
						t.Fatalf("broker log and corpus differ at offset %d", r.Offset)
					}
					m[r.Offset] = record.Record{Offset: r.Offset, Key: c.bytes(c.Key), Value: c.bytes(c.Value)}
					aborted[r.Offset] = c.Aborted
				}
			}
			now := time.UnixMilli(1_800_000_000_000)
			res, err := Clean(l, NewOffsetMap(1<<16, 0), 0, l.EndOffset(), Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if res.End != l.EndOffset() || res.RecordsRemoved == 0 || res.SegmentsRead == 0 {
				t.Fatalf("clean: %+v", res)
			}
			for off := range m {
				if aborted[off] && off < res.End {
					delete(m, off)
				}
			}
			expect := m.expect(0, res.End, l.EndOffset())
			if err := testutil.CompareRecords(testutil.ReadRecords(t, l, l.StartOffset()), expect); err != nil {
				t.Fatal(err)
			}
			// Every stored batch: its own codec, and kmsg reads what we do.
			var viaKmsg []record.Record
			run := logView(l).AcquireSealed(0, l.EndOffset())
			rewritten, ownCodec := 0, 0
			for i := range run.Len() {
				for b, err := range run.Batches(i) {
					if err != nil {
						t.Fatal(err)
					}
					if c, ok := codecAt[b.BaseOffset()]; !ok || b.Codec() != c {
						t.Fatalf("batch at %d has codec %v, was %v", b.BaseOffset(), b.Codec(), c)
					}
					if b.NumRecords() > 0 && b.Codec() == want {
						ownCodec++
					}
					if int(b.NumRecords()) != int(b.LastOffsetDelta())+1 {
						rewritten++
					}
					recs := kmsgDecode(t, b)
					if b.IsControl() {
						continue // markers, which reading skips
					}
					for _, r := range recs {
						viaKmsg = append(viaKmsg, record.Record{Offset: r.Offset, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)})
					}
				}
			}
			run.Release()
			if rewritten == 0 || ownCodec == 0 {
				t.Fatalf("%d batches rewritten, %d in %v", rewritten, ownCodec, want)
			}
			if err := testutil.CompareRecords(viaKmsg, expect); err != nil {
				t.Fatalf("via kmsg: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			fscktest.CheckClean(t, fsys, "/log")
		})
	}
}
