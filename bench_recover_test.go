package seglog

import (
	"flag"
	"math"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

var recoverBytes = flag.Int64("recover.bytes", 256<<20, "size of the active segment BenchmarkRecoverActive recovers")

// BenchmarkRecoverActive is issue 17's recovery target: an unclean Open of
// a log whose one active segment holds -recover.bytes of 1 KiB records (in
// the page cache), which scans, checks and re-indexes all of it, against
// the CRC-only scan of the same bytes by fsck's scanner. Report the ratio
// of the two ns/op.
func BenchmarkRecoverActive(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "log")
	opts := Options{LogConfig: LogConfig{SegmentBytes: math.MaxInt32}, Logger: discardLogger()}
	l, err := Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]record.Record, 100)
	val := make([]byte, 1024)
	for l.Size() < *recoverBytes {
		for i := range recs {
			val[i%len(val)]++
			recs[i].Value = val
		}
		if _, err := l.Append(recs...); err != nil {
			b.Fatal(err)
		}
	}
	if l.NumSegments() != 1 {
		b.Fatalf("%d segments; the benchmark wants one active segment", l.NumSegments())
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	logPath := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
	unclean := func(b *testing.B) {
		if err := vfs.Default.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil && !isNotExist(err) {
			b.Fatal(err)
		}
		if err := writeOffsetCheckpoint(vfs.Default, dir, RecoveryPointFile, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("open", func(b *testing.B) {
		b.SetBytes(*recoverBytes)
		for b.Loop() {
			b.StopTimer()
			unclean(b)
			b.StartTimer()
			l, err := Open(dir, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			l.Close()
			b.StartTimer()
		}
	})
	b.Run("crc-scan", func(b *testing.B) {
		b.SetBytes(*recoverBytes)
		for b.Loop() {
			f, err := vfs.Default.Open(logPath)
			if err != nil {
				b.Fatal(err)
			}
			size, _ := f.Size()
			sc := fsck.NewScanner(f, size, 0)
			for {
				e, ok, err := sc.Next()
				if err != nil || (ok && e.Damaged()) {
					b.Fatal(err, e.Err)
				}
				if !ok {
					break
				}
			}
			f.Close()
		}
	})
}
