package compaction

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// kv is a test record: offset, key, value (nil strings as "<nil>").
type kv struct {
	off        int64
	key, value string
}

const null = "<nil>"

func orNil(s string) []byte {
	if s == null {
		return nil
	}
	return []byte(s)
}

// testLegacy encodes one legacy message, independently of the package's
// encoder.
func testLegacy(magic int8, off int64, attrs int8, ts int64, key, value []byte) []byte {
	body := []byte{byte(magic), byte(attrs)}
	if magic == 1 {
		body = binary.BigEndian.AppendUint64(body, uint64(ts))
	}
	for _, f := range [][]byte{key, value} {
		if f == nil {
			body = binary.BigEndian.AppendUint32(body, 0xffffffff)
		} else {
			body = binary.BigEndian.AppendUint32(body, uint32(len(f)))
			body = append(body, f...)
		}
	}
	e := binary.BigEndian.AppendUint64(nil, uint64(off))
	e = binary.BigEndian.AppendUint32(e, uint32(4+len(body)))
	e = binary.BigEndian.AppendUint32(e, crc32.ChecksumIEEE(body))
	return append(e, body...)
}

func testCompress(t *testing.T, c record.Codec, src []byte) []byte {
	var buf bytes.Buffer
	switch c {
	case record.Gzip:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			t.Fatal(err)
		}
		w.Close()
	case record.Snappy:
		buf.Write(xerialHeader)
		enc := s2.EncodeSnappy(nil, src)
		binary.Write(&buf, binary.BigEndian, uint32(len(enc)))
		buf.Write(enc)
	case record.LZ4:
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			t.Fatal(err)
		}
		w.Close()
	default:
		t.Fatalf("codec %v", c)
	}
	return buf.Bytes()
}

func testDecompress(t *testing.T, c record.Codec, src []byte) []byte {
	var r io.Reader
	switch c {
	case record.Gzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case record.Snappy:
		if !bytes.HasPrefix(src, xerialHeader) {
			t.Fatal("snappy without xerial framing")
		}
		var out []byte
		for src = src[16:]; len(src) > 0; {
			n := binary.BigEndian.Uint32(src)
			d, err := s2.Decode(nil, src[4:4+n])
			if err != nil {
				t.Fatal(err)
			}
			out, src = append(out, d...), src[4+n:]
		}
		return out
	case record.LZ4:
		r = lz4.NewReader(bytes.NewReader(src))
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testWrapper encodes a compressed wrapper of msgs, v0 inner offsets
// absolute, v1 relative.
func testWrapper(t *testing.T, magic int8, c record.Codec, msgs []kv) []byte {
	var inner []byte
	for i, m := range msgs {
		off := m.off
		if magic == 1 {
			off = int64(i)
		}
		inner = append(inner, testLegacy(magic, off, 0, 1000+m.off, orNil(m.key), orNil(m.value))...)
	}
	return testLegacy(magic, msgs[len(msgs)-1].off, int8(c), 2000, nil, testCompress(t, c, inner))
}

// decodeSegments reads every record of the log's segment files with
// kmsg for legacy messages and record for v2 batches, and the offsets
// each entry ends at.
func decodeSegments(t *testing.T, fsys vfs.FS, l *seglog.Log) (recs []kv, ends []int64) {
	t.Helper()
	for _, s := range l.Segments() {
		f, err := fsys.Open(fmt.Sprintf("/log/%020d.log", s.BaseOffset))
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(io.NewSectionReader(f, 0, s.Size))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			n := int(binary.BigEndian.Uint32(data[8:])) + 12
			e := data[:n]
			data = data[n:]
			if e[16] == 2 {
				b := record.Batch(e)
				ends = append(ends, b.LastOffset())
				for r, err := range b.Records() {
					if err != nil {
						t.Fatal(err)
					}
					recs = append(recs, kvOf(r.Offset, r.Key, r.Value))
				}
				continue
			}
			msgs, last := decodeLegacy(t, e)
			ends = append(ends, last)
			recs = append(recs, msgs...)
		}
	}
	return recs, ends
}

func kvOf(off int64, k, v []byte) kv {
	m := kv{off: off, key: string(k), value: string(v)}
	if k == nil {
		m.key = null
	}
	if v == nil {
		m.value = null
	}
	return m
}

func decodeLegacy(t *testing.T, e []byte) ([]kv, int64) {
	t.Helper()
	var m kmsg.MessageV1
	if e[16] == 0 {
		var m0 kmsg.MessageV0
		if err := m0.ReadFrom(e); err != nil {
			t.Fatal(err)
		}
		m = kmsg.MessageV1{Offset: m0.Offset, Magic: 0, Attributes: m0.Attributes, Key: m0.Key, Value: m0.Value}
	} else if err := m.ReadFrom(e); err != nil {
		t.Fatal(err)
	}
	if crc32.ChecksumIEEE(e[16:]) != uint32(binary.BigEndian.Uint32(e[12:])) {
		t.Fatalf("legacy entry at %d: bad CRC", m.Offset)
	}
	c := record.Codec(m.Attributes & 7)
	if c == record.None {
		return []kv{kvOf(m.Offset, m.Key, m.Value)}, m.Offset
	}
	data := testDecompress(t, c, m.Value)
	var out []kv
	for len(data) > 0 {
		n := int(binary.BigEndian.Uint32(data[8:])) + 12
		in, _ := decodeLegacy(t, data[:n])
		data = data[n:]
		out = append(out, in...)
	}
	if m.Magic == 1 {
		if out[0].off != 0 {
			// Kafka writes them relative to the first inner message.
			t.Fatalf("v1 wrapper at %d: first inner offset %d", m.Offset, out[0].off)
		}
		base := m.Offset - out[len(out)-1].off
		for i := range out {
			out[i].off += base
		}
	}
	return out, m.Offset
}

// TestLegacyCompaction compacts a segment of legacy messages (plain and
// compressed wrappers, in every legacy codec, both magics) followed by v2
// batches: superseded and keyless messages go, wrappers are recompressed
// with what they keep in their own magic and codec, the kept messages'
// offsets are unchanged, a wrapper losing its last message at the end of
// a group leaves an empty v2 batch there, and fsck finds the result clean.
func TestLegacyCompaction(t *testing.T) {
	for _, magic := range []int8{0, 1} {
		for _, c := range []record.Codec{record.Gzip, record.Snappy, record.LZ4} {
			t.Run(fmt.Sprintf("v%d-%v", magic, c), func(t *testing.T) {
				fsys := vfs.NewMem()
				var data []byte
				data = append(data, testLegacy(magic, 0, 0, 1000, []byte("a"), []byte("a0"))...)
				data = append(data, testLegacy(magic, 1, 0, 1001, []byte("b"), []byte("b0"))...)
				data = append(data, testLegacy(magic, 2, 0, 1002, nil, []byte("x"))...)
				data = append(data, testWrapper(t, magic, c, []kv{{3, "c", "c0"}, {4, "a", "a1"}, {5, "d", "d0"}, {6, "b", "b1"}})...)
				data = append(data, testWrapper(t, magic, c, []kv{{7, "e", "e0"}, {8, "f", "f0"}})...)
				data = append(data, testLegacy(magic, 9, 0, 1009, []byte("c"), nil)...)
				data = append(data, testWrapper(t, magic, c, []kv{{10, "g", "g0"}, {11, "a", "a1b"}})...)
				l := openLegacy(t, fsys, data)
				defer fscktest.CheckCleanAtEnd(t, fsys, "/log")
				defer l.Close()
				if l.EndOffset() != 12 {
					t.Fatalf("end %d", l.EndOffset())
				}
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
				for _, r := range []kv{{12, "f", "f1"}, {13, "a", "a2"}, {14, "h", "h0"}} {
					if _, err := l.Append(record.Record{Key: []byte(r.key), Value: []byte(r.value)}); err != nil {
						t.Fatal(err)
					}
				}
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
				res, err := Clean(l, NewOffsetMap(1<<20, 0), 0, l.EndOffset(), Options{SegmentBytes: int64(len(data))})
				if err != nil {
					t.Fatal(err)
				}
				if res.End != 15 || res.KeylessRemoved != 1 || res.SegmentsWritten < 1 {
					t.Fatalf("result %+v", res)
				}
				got, ends := decodeSegments(t, fsys, l)
				want := []kv{{5, "d", "d0"}, {6, "b", "b1"}, {7, "e", "e0"}, {9, "c", null}, {10, "g", "g0"},
					{12, "f", "f1"}, {13, "a", "a2"}, {14, "h", "h0"}}
				if !slices.Equal(got, want) {
					t.Fatalf("records after compaction:\n got %v\nwant %v", got, want)
				}
				// Entries end at: wrapper 6, wrapper 7, 9, wrapper 10,
				// the empty batch 11, then the v2 batches.
				if wantEnds := []int64{6, 7, 9, 10, 11, 12, 13, 14}; !slices.Equal(ends, wantEnds) {
					t.Fatalf("entries end at %v, want %v", ends, wantEnds)
				}
				if segs := l.Segments(); segs[0].NextOffset != 12 {
					t.Fatalf("the legacy segment now ends at %d", segs[0].NextOffset)
				}
				// A second round changes nothing.
				before := fmt.Sprint(l.Segments()[0].Size)
				if _, err := Clean(l, NewOffsetMap(1<<20, 0), 0, l.EndOffset(), Options{SegmentBytes: int64(len(data))}); err != nil {
					t.Fatal(err)
				}
				if again, _ := decodeSegments(t, fsys, l); !slices.Equal(again, want) || fmt.Sprint(l.Segments()[0].Size) != before {
					t.Fatalf("second round changed the log: %v", again)
				}
			})
		}
	}
}

// TestLegacyDamage: a legacy message whose CRC-32 does not match stops
// the round with a corruption error naming the file and position, and
// changes nothing.
func TestLegacyDamage(t *testing.T) {
	fsys := vfs.NewMem()
	first := testLegacy(1, 0, 0, 1000, []byte("a"), []byte("a0"))
	data := append(slices.Clone(first), testLegacy(1, 1, 0, 1001, []byte("a"), []byte("a1"))...)
	l := openLegacy(t, fsys, data)
	defer l.Close()
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	data[len(first)+30] ^= 1 // the second message's value
	vfstest.WriteFile(t, fsys, "/log/00000000000000000000.log", data)
	_, err := Clean(l, NewOffsetMap(1<<20, 0), 0, l.EndOffset(), Options{})
	var ce *record.CorruptionError
	if !errors.As(err, &ce) || !strings.HasSuffix(ce.File, "00000000000000000000.log") || ce.Pos != int64(len(first))+12 {
		t.Fatalf("Clean: %v, want a CRC error at %d", err, len(first)+12)
	}
	if got, _ := decodeRaw(t, fsys); !bytes.Equal(got, data) {
		t.Fatal("the damaged segment was changed")
	}
}

// openLegacy opens a log at /log whose one segment holds data as written
// by an old broker.
func openLegacy(t *testing.T, fsys *vfs.MemFS, data []byte) *seglog.Log {
	t.Helper()
	if err := fsys.MkdirAll("/log"); err != nil {
		t.Fatal(err)
	}
	vfstest.WriteFile(t, fsys, "/log/00000000000000000000.log", data)
	l, err := seglog.Open("/log", testOptions(fsys))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func decodeRaw(t *testing.T, fsys vfs.FS) ([]byte, error) {
	f, err := fsys.Open("/log/00000000000000000000.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
}

// TestLegacyTombstoneHorizon: a legacy tombstone follows Kafka's legacy
// rule: it stays while its segment was modified after the last clean
// segment's mtime less delete.retention.ms, and goes after.
func TestLegacyTombstoneHorizon(t *testing.T) {
	for _, tc := range []struct {
		retention time.Duration
		kept      bool
	}{{time.Hour, false}, {3 * time.Hour, true}} {
		t.Run(tc.retention.String(), func(t *testing.T) {
			fsys := vfs.NewMem()
			// The Log's flusher stamps files from its own goroutine: the
			// clock is read there while the test moves it.
			var nowMs atomic.Int64
			nowMs.Store(1_800_000_000_000)
			fsys.SetClock(func() time.Time { return time.UnixMilli(nowMs.Load()) })
			var data []byte
			data = append(data, testLegacy(1, 0, 0, 1000, []byte("k"), []byte("v"))...)
			data = append(data, testLegacy(1, 1, 0, 1001, []byte("t"), nil)...)
			l := openLegacy(t, fsys, data)
			defer l.Close()
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			nowMs.Add((2 * time.Hour).Milliseconds()) // the next segment is two hours younger
			if _, err := l.Append(record.Record{Key: []byte("x"), Value: []byte("x0")}); err != nil {
				t.Fatal(err)
			}
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			// Everything is clean: the last clean segment is the young one.
			end := l.EndOffset()
			res, err := Clean(l, NewOffsetMap(1<<12, 0), end, end, Options{Force: true, DeleteRetention: tc.retention})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := decodeSegments(t, fsys, l)
			want := []kv{{0, "k", "v"}, {2, "x", "x0"}}
			if tc.kept {
				want = []kv{{0, "k", "v"}, {1, "t", null}, {2, "x", "x0"}}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("records %v, want %v (result %+v)", got, want, res)
			}
			if removed := res.TombstonesRemoved; (removed == 1) == tc.kept {
				t.Fatalf("%d tombstones removed", removed)
			}
		})
	}
}
