package seglog

import (
	"math/rand/v2"
	"testing"
)

// TestLookupsThroughHeaderMapping: on the real filesystem, finding batches
// reads their headers through the .log mappings (so the fast path is
// really taken), and the answers stay right across rolls, a truncation
// into a mapped segment, and appends after it.
func TestLookupsThroughHeaderMapping(t *testing.T) {
	l, err := Open(t.TempDir(), Options{LogConfig: LogConfig{SegmentBytes: 256 << 10, IndexIntervalBytes: 512}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN := func(batches int) {
		t.Helper()
		for range batches {
			if _, err := l.Append(recordsAt(l.EndOffset(), 8)...); err != nil {
				t.Fatal(err)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	lookups := func() {
		t.Helper()
		start, end := l.StartOffset(), l.EndOffset()
		for range 500 {
			off := start + rng.Int64N(end-start)
			s, err := l.Read(off, 1, ReadOptions{})
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			if s.FirstOffset() > off || s.LastOffset() < off {
				t.Fatalf("Read(%d) gave batch [%d, %d]", off, s.FirstOffset(), s.LastOffset())
			}
			s.Close()
		}
	}
	appendN(600) // several segments
	if l.NumSegments() < 3 {
		t.Fatalf("only %d segments", l.NumSegments())
	}
	lookups()
	if st := l.logMaps.Stats(); st.Maps == 0 {
		t.Fatal("no .log was mapped: lookups read every header with pread")
	}
	// Into the middle of the last sealed segment: it becomes active again
	// and is cut under its mapping.
	l.mu.Lock()
	activeBase := l.segs.active.BaseOffset()
	l.mu.Unlock()
	segs := l.NumSegments()
	if err := l.TruncateTo(activeBase - 8*20); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != segs-1 {
		t.Fatalf("truncation left %d segments, want %d: %s", l.NumSegments(), segs-1, l.debugSegments())
	}
	lookups()
	appendN(300)
	lookups()
}
