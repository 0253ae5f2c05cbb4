package seglog

import (
	"testing"

	"github.com/seglog/seglog/record"
)

// BenchmarkReadToSegmentEnd: Read(offset, 1 MiB) + Close where the slice
// runs to the end of a sealed segment, whose next offset Read then takes
// as the slice's last (only when it was computed from the .log: one whose
// index names offsets a cut .log lost sends Read to the file instead). 64
// sealed segments of 1 MiB, batches of 100 records of 1 KiB.
func BenchmarkReadToSegmentEnd(b *testing.B) {
	l, err := Open(b.TempDir(), Options{LogConfig: LogConfig{SegmentBytes: 1 << 20}, Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	recs := make([]record.Record, 100)
	for i := range recs {
		recs[i] = record.Record{Key: []byte("k"), Value: make([]byte, 1024), Timestamp: 1}
	}
	for l.NumSegments() < 65 {
		if _, err := l.Append(recs...); err != nil {
			b.Fatal(err)
		}
	}
	// The first offset of each sealed segment's last batch.
	var targets []int64
	for _, s := range l.Segments() {
		if !s.Active {
			targets = append(targets, s.NextOffset-100)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := l.Read(targets[i%len(targets)], 1<<20, ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if s.LastOffset() != targets[i%len(targets)]+99 {
			b.Fatalf("Read(%d) ends at %d", targets[i%len(targets)], s.LastOffset())
		}
		s.Close()
	}
}
