package seglog

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestSegments: the view lists every segment in order with its offsets,
// size, largest timestamp, modification and creation times and which one
// is active, and follows rolls, retention and a reopen.
func TestSegments(t *testing.T) {
	mem := vfs.NewMem()
	// The background flusher stamps files too, so the clock is atomic.
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	mem.SetClock(func() time.Time { return time.Unix(0, clock.Load()).UTC() })
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	l, err := Open("/log", Options{FS: mem, LogConfig: LogConfig{SegmentBytes: 1024}, Logger: discardLogger(), Clock: testutil.NowFunc(now)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	if got := l.Segments(); len(got) != 1 || !got[0].Active || got[0].NextOffset != 0 || got[0].Size != 0 || got[0].LargestTimestamp != -1 {
		t.Fatalf("empty log: %+v", got)
	}
	for l.NumSegments() < 4 {
		clock.Add(int64(time.Minute))
		off := l.EndOffset()
		ts := 5_000 + off*10
		if _, err := l.Append(record.Record{Value: crashValue(off, 200), Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
	}
	// A segment is created by the append that rolls to it, in that
	// append's minute: not before its predecessor's last write, and
	// minutes after its predecessor was created. A reopen creates none:
	// each is as old as the Log that opened it.
	check := func(label string, opened time.Time) {
		t.Helper()
		segs := l.Segments()
		if len(segs) != l.NumSegments() {
			t.Fatalf("%s: %d segments listed, the log has %d", label, len(segs), l.NumSegments())
		}
		var total int64
		for i, s := range segs {
			total += s.Size
			last := i == len(segs)-1
			if s.Active != last {
				t.Fatalf("%s: segment %d active=%v", label, i, s.Active)
			}
			if !last && s.NextOffset != segs[i+1].BaseOffset {
				t.Fatalf("%s: segment %d ends at %d, next starts at %d", label, i, s.NextOffset, segs[i+1].BaseOffset)
			}
			if s.Modified.IsZero() || (i > 0 && s.Modified.Before(segs[i-1].Modified)) {
				t.Fatalf("%s: segment %d modified %v", label, i, s.Modified)
			}
			switch {
			case !opened.IsZero() && !s.Created.Equal(opened):
				t.Fatalf("%s: segment %d created %v, want %v (when the log was opened)", label, i, s.Created, opened)
			case opened.IsZero() && i > 0 && s.Created.Before(segs[i-1].Modified):
				t.Fatalf("%s: segment %d created %v, before its predecessor's last append %v", label, i, s.Created, segs[i-1].Modified)
			case opened.IsZero() && i > 0 && !s.Created.After(segs[i-1].Created):
				t.Fatalf("%s: segment %d created %v, not after its predecessor %v", label, i, s.Created, segs[i-1].Created)
			case opened.IsZero() && s.Created.After(s.Modified) && s.Size > 0:
				t.Fatalf("%s: segment %d created %v, after its last append %v", label, i, s.Created, s.Modified)
			}
			if want := 5_000 + (s.NextOffset-1)*10; s.NextOffset > s.BaseOffset && s.LargestTimestamp != want {
				t.Fatalf("%s: segment %d largest timestamp %d, want %d", label, i, s.LargestTimestamp, want)
			}
		}
		if segs[0].BaseOffset > l.StartOffset() || segs[len(segs)-1].NextOffset != l.EndOffset() || total != l.Size() {
			t.Fatalf("%s: %+v does not cover [%d, %d) in %d bytes", label, segs, l.StartOffset(), l.EndOffset(), l.Size())
		}
	}
	check("after rolls", time.Time{})
	second := l.Segments()[1].BaseOffset
	if _, err := l.DeleteBefore(second); err != nil {
		t.Fatal(err)
	}
	if segs := l.Segments(); segs[0].BaseOffset != second {
		t.Fatalf("after retention the first segment starts at %d, want %d", segs[0].BaseOffset, second)
	}
	check("after retention", time.Time{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	clock.Add(int64(time.Hour))
	if l, err = Open("/log", Options{FS: mem, LogConfig: LogConfig{SegmentBytes: 1024}, Logger: discardLogger(), Clock: testutil.NowFunc(now)}); err != nil {
		t.Fatal(err)
	}
	check("after reopen", now())
}
