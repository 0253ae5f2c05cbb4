package bench

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// BenchmarkAppend is the micro-level view of the write workload, for
// profiling (go test -bench Append -cpuprofile): Log.Append of batches of
// 100 records against one write(2) of the same pre-built batch bytes, and
// against the payload floor (the values gathered per call and pwritten
// into blocks reserved ahead, as seglog's active segment reserves them). A
// fresh log (or file) every 64 MiB keeps the page cache's state steady.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 1024} {
		pool := valuePool(size, 1)
		b.Run(fmt.Sprintf("seglog/%dB", size), func(b *testing.B) {
			cur := &valueCursor{pool: pool, size: size}
			recs := make([]record.Record, 100)
			b.SetBytes(int64(100 * size))
			b.ReportAllocs()
			var l *seglog.Log
			dir := b.TempDir()
			written := int64(1 << 62)
			for i := 0; b.Loop(); i++ {
				if written > 64<<20 {
					b.StopTimer()
					if l != nil {
						l.Close()
						vfs.RemoveAll(fs, l.Dir())
					}
					var err error
					if l, err = seglog.Open(filepath.Join(dir, fmt.Sprint(i)), seglog.Options{Logger: discardLogger}); err != nil {
						b.Fatal(err)
					}
					written = 0
					b.StartTimer()
				}
				for j := range recs {
					recs[j].Value = cur.next()
				}
				info, err := l.Append(recs...)
				if err != nil {
					b.Fatal(err)
				}
				written += int64(info.Bytes)
			}
			l.Close()
		})
		b.Run(fmt.Sprintf("raw/%dB", size), func(b *testing.B) {
			cur := &valueCursor{pool: pool, size: size}
			batches, err := buildBatches(cur, batchesFor(1, 100, size), 100, record.None)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(100 * size))
			b.ReportAllocs()
			dir := b.TempDir()
			written := int64(1 << 62)
			var path string
			var f interface {
				Write([]byte) (int, error)
				Close() error
			}
			for i := 0; b.Loop(); i++ {
				if written > 64<<20 {
					b.StopTimer()
					if f != nil {
						f.Close()
						fs.Remove(path)
					}
					path = filepath.Join(dir, fmt.Sprint(i))
					if f, err = fs.Create(path); err != nil {
						b.Fatal(err)
					}
					written = 0
					b.StartTimer()
				}
				bt := batches[i%len(batches)]
				if _, err := f.Write(bt); err != nil {
					b.Fatal(err)
				}
				written += int64(len(bt))
			}
			f.Close()
		})
		b.Run(fmt.Sprintf("payload/%dB", size), func(b *testing.B) {
			cur := &valueCursor{pool: pool, size: size}
			buf := make([]byte, 0, 100*size)
			b.SetBytes(int64(100 * size))
			b.ReportAllocs()
			dir := b.TempDir()
			var ff *floorFile
			var path string
			for i := 0; b.Loop(); i++ {
				if ff == nil || ff.pos > 64<<20 {
					b.StopTimer()
					if ff != nil {
						ff.f.Close()
						fs.Remove(path)
					}
					path = filepath.Join(dir, fmt.Sprint(i))
					f, err := fs.Create(path)
					if err != nil {
						b.Fatal(err)
					}
					ff = &floorFile{f: f, floor: FloorPayload}
					b.StartTimer()
				}
				buf = buf[:0]
				for range 100 {
					buf = append(buf, cur.next()...)
				}
				if err := ff.write(buf); err != nil {
					b.Fatal(err)
				}
			}
			ff.f.Close()
		})
	}
}
