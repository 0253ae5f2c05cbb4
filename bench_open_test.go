package seglog

import (
	"fmt"
	"testing"
	"time"

	"github.com/seglog/seglog/vfs"
)

// openBenchSegments is how many segments BenchmarkOpen's log has (100 under
// -benchtime=1x).
const openBenchSegments = 10_000

// openBenchOptions make every batch of one small record fill a segment, so
// each Append rolls; small index files keep the 10,000 preallocations cheap.
var openBenchOptions = Options{LogConfig: LogConfig{SegmentBytes: 128, MaxBatchBytes: 128, MaxIndexBytes: 1024}}

// buildManySegments writes a log of n one-batch segments into dir and
// closes it cleanly.
func buildManySegments(b *testing.B, dir string, n int) {
	l, err := Open(dir, openBenchOptions)
	if err != nil {
		b.Fatal(err)
	}
	recs := benchRecords(1, 8)
	for range n {
		if _, err := l.Append(recs...); err != nil {
			b.Fatal(err)
		}
	}
	if got := l.NumSegments(); got != n {
		b.Fatalf("built %d segments, want %d", got, n)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOpen: Open of a cleanly closed log of 10,000 segments, timed
// without the Close that follows (Close rewrites checkpoints and the
// clean-shutdown marker). Target: <= 200 ms. Baseline: listing the
// directory, which any Open has to do.
func BenchmarkOpen(b *testing.B) {
	n := openBenchSegments
	if benchSmoke() {
		n = 100
	}
	dir := b.TempDir()
	start := time.Now()
	buildManySegments(b, dir, n)
	b.Logf("built %d segments in %v", n, time.Since(start))
	b.Run(fmt.Sprintf("segments=%d", n), func(b *testing.B) {
		b.ReportAllocs()
		var lat latencies
		for b.Loop() {
			t0 := time.Now()
			l, err := Open(dir, openBenchOptions)
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if got := l.NumSegments(); got != n {
				b.Fatalf("opened %d segments, want %d", got, n)
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		lat.report(b)
	})
	b.Run("list-dir", func(b *testing.B) {
		b.ReportAllocs()
		var lat latencies
		for b.Loop() {
			t0 := time.Now()
			names, err := vfs.Default.List(dir)
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			if len(names) < 3*n {
				b.Fatalf("listed %d names for %d segments", len(names), n)
			}
		}
		lat.report(b)
	})
}
