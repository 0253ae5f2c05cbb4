package segment

import (
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

var benchSegmentBytes = flag.Int64("segment.benchbytes", 1<<30, "size of the segment BenchmarkFindPosition builds")

// batchOfSize builds a one-record batch of exactly size bytes.
func batchOfSize(tb testing.TB, size int) []byte {
	tb.Helper()
	b := record.NewBuilder(record.None)
	v := size - record.HeaderSize
	for {
		b.Reset()
		if err := b.Add(record.Record{Offset: 0, Timestamp: 1_700_000_000_000, Value: make([]byte, v)}); err != nil {
			tb.Fatal(err)
		}
		out, err := b.Build()
		if err != nil {
			tb.Fatal(err)
		}
		if len(out) == size {
			return append([]byte(nil), out...)
		}
		v += size - len(out)
	}
}

// BenchmarkAppend compares Segment.Append of 16 KiB batches with a plain
// vfs file append of the same bytes (one Write per batch), on the real
// filesystem, no fsync. Both start a new file every 64 MiB so the disk use
// stays bounded.
func BenchmarkAppend(b *testing.B) {
	const size = 16 << 10
	const rotate = 64 << 20
	batch := batchOfSize(b, size)
	fsys := vfs.OS()

	b.Run("segment-16KiB", func(b *testing.B) {
		dir := b.TempDir()
		var s *Segment
		var next int64
		open := func() {
			var err error
			if s, err = Create(fsys, dir, next, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		drop := func() {
			if err := s.Remove(); err != nil {
				b.Fatal(err)
			}
			s.Release()
		}
		open()
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if s.Size()+size > rotate {
				b.StopTimer()
				drop()
				open()
				b.StartTimer()
			}
			record.Batch(batch).SetBaseOffset(next)
			if err := s.Append(batch); err != nil {
				b.Fatal(err)
			}
			next++
		}
		b.StopTimer()
		drop()
	})

	b.Run("file-16KiB", func(b *testing.B) {
		dir := b.TempDir()
		path := dir + "/plain.log"
		var f vfs.File
		var written int64
		open := func() {
			var err error
			if f, err = fsys.Create(path); err != nil {
				b.Fatal(err)
			}
			written = 0
		}
		drop := func() {
			f.Close()
			if err := fsys.Remove(path); err != nil {
				b.Fatal(err)
			}
		}
		open()
		b.SetBytes(size)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if written+size > rotate {
				b.StopTimer()
				drop()
				open()
				b.StartTimer()
			}
			if _, err := f.Write(batch); err != nil {
				b.Fatal(err)
			}
			written += size
		}
		b.StopTimer()
		drop()
	})
}

// BenchmarkFindPosition looks up offsets in a segment of
// -segment.benchbytes (default 1 GiB) on the real filesystem, built once:
// 16 KiB batches (every batch indexed at the default interval) and 1 KiB
// batches (a lookup scans about four headers). "tail" targets the last
// 1% of offsets, as in-sync followers and tailing consumers do; "random" the
// whole segment.
func BenchmarkFindPosition(b *testing.B) {
	for _, bs := range []int{16 << 10, 1 << 10} {
		dir := b.TempDir()
		s, err := Create(vfs.OS(), dir, 0, Options{})
		if err != nil {
			b.Fatal(err)
		}
		batch := batchOfSize(b, bs)
		n := *benchSegmentBytes / int64(bs)
		for i := int64(0); i < n; i++ {
			record.Batch(batch).SetBaseOffset(i)
			if err := s.Append(batch); err != nil {
				b.Fatal(err)
			}
		}
		name := "16KiB"
		if bs == 1<<10 {
			name = "1KiB"
		}
		for _, mode := range []string{"tail", "random"} {
			b.Run(name+"-"+mode, func(b *testing.B) {
				rnd := rand.New(rand.NewPCG(1, 2))
				lo := int64(0)
				if mode == "tail" {
					lo = n - n/100
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					off := lo + rnd.Int64N(n-lo)
					bp, ok, err := s.FindPosition(off)
					if err != nil || !ok || bp.BaseOffset != off {
						b.Fatalf("FindPosition(%d) = %+v, %v, %v", off, bp, ok, err)
					}
				}
			})
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenSealed opens 10,000 sealed segments (one batch each, trimmed
// indexes) on the real filesystem and closes them again; one op is all
// 10,000.
func BenchmarkOpenSealed(b *testing.B) {
	const count = 10000
	fsys := vfs.OS()
	dir := b.TempDir()
	batch := batchOfSize(b, 200)
	e := env{"os", fsys, dir}
	for i := int64(0); i < count; i++ {
		base := i * 10
		record.Batch(batch).SetBaseOffset(base)
		writeFile(b, fsys, e.path(base, LogSuffix), batch)
		writeFile(b, fsys, e.path(base, IndexSuffix), nil)
		writeFile(b, fsys, e.path(base, TimeIndexSuffix), decodeTimeEntry(record.Batch(batch).MaxTimestamp()))
	}
	segs := make([]*Segment, count)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range segs {
			s, err := Open(fsys, dir, int64(j)*10, false, Options{})
			if err != nil {
				b.Fatal(err)
			}
			segs[j] = s
		}
		b.StopTimer()
		for _, s := range segs {
			s.Close()
		}
		b.StartTimer()
	}
}

// decodeTimeEntry encodes a time-index entry (ts, relative offset 0).
func decodeTimeEntry(ts int64) []byte {
	e := make([]byte, 12)
	for i := 0; i < 8; i++ {
		e[i] = byte(ts >> (56 - 8*i))
	}
	return e
}
