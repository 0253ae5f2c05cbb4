package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
)

// BenchmarkScan is the micro-level view of the scan workload, for
// profiling (go test -bench Scan -cpuprofile): every record of a warm
// 64 MiB log through Records, through Read + parse, and through pread +
// record.Iterator of the same files, with and without a CRC check.
func BenchmarkScan(b *testing.B) {
	for _, size := range []int{100, 1024} {
		dir := b.TempDir()
		l, err := seglog.Open(filepath.Join(dir, "log"), seglog.Options{Logger: discardLogger, LogConfig: seglog.LogConfig{SegmentBytes: 32 << 20}})
		if err != nil {
			b.Fatal(err)
		}
		r := newRunner(Env{})
		if _, err := fillLog(context.Background(), l, size, 100, 64<<20, r); err != nil {
			b.Fatal(err)
		}
		want := l.EndOffset()
		b.Run(fmt.Sprintf("records/%dB", size), func(b *testing.B) {
			b.SetBytes(want * int64(size))
			b.ReportAllocs()
			for b.Loop() {
				var n int64
				for _, err := range l.Records(0) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != want {
					b.Fatalf("%d records, want %d", n, want)
				}
			}
		})
		b.Run(fmt.Sprintf("read/%dB", size), func(b *testing.B) {
			b.SetBytes(want * int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if n, _, err := scanRead(l, 1<<20, r); err != nil || n != want {
					b.Fatal(n, err)
				}
			}
		})
		for _, crc := range []bool{false, true} {
			name := "raw"
			if crc {
				name = "raw+crc"
			}
			b.Run(fmt.Sprintf("%s/%dB", name, size), func(b *testing.B) {
				b.SetBytes(want * int64(size))
				b.ReportAllocs()
				buf := make([]byte, scanChunk+record.DefaultMaxBatchSize)
				var it record.Iterator
				for b.Loop() {
					var n int64
					for _, s := range l.Segments() {
						f, err := fs.Open(filepath.Join(l.Dir(), segment.FileName(s.BaseOffset, segment.LogSuffix)))
						if err != nil {
							b.Fatal(err)
						}
						c, _, err := rawScanCRC(f, buf, &it, r, crc)
						f.Close()
						if err != nil {
							b.Fatal(err)
						}
						n += c
					}
					if n != want {
						b.Fatalf("%d records, want %d", n, want)
					}
				}
			})
		}
		l.Close()
	}
}
