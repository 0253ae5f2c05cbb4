package seglog

import (
	"testing"

	"github.com/seglog/seglog/vfs"
)

// Options.Stats counts across the Logs sharing it: every roll, a flush
// for a Sync that had records to make durable, every Open, and as a
// recovery only the Open after a crash, with the segments it scanned; a
// clean Close's reopen recovers nothing.
func TestStatsCount(t *testing.T) {
	mem := vfs.NewMem()
	stats := new(Stats)
	opts := Options{FS: mem, LogConfig: LogConfig{SegmentBytes: 1 << 10, MaxIndexBytes: 1 << 10}, Stats: stats, Logger: discardLogger()}
	l, err := Open("/log", opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); l.NumSegments() < 4; i += 3 {
		if _, err := l.Append(recordsAt(i, 3)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil { // an explicit roll counts too
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil { // on an empty active segment, nothing
		t.Fatal(err)
	}
	if _, err := l.Append(recordsAt(l.EndOffset(), 3)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	s := stats.Snapshot()
	if want := int64(l.NumSegments() - 1); s.Rolls != want || s.RollTime <= 0 {
		t.Errorf("%d rolls in %v, want %d (%s)", s.Rolls, s.RollTime, want, l.debugSegments())
	}
	if s.Flushes < 1 || s.FlushTime <= 0 {
		t.Errorf("%d flushes in %v after Sync", s.Flushes, s.FlushTime)
	}
	if s.Opens != 1 || s.Recoveries != 0 || s.SegmentsRecovered != 0 || s.OpenTime <= 0 {
		t.Errorf("after creating the log: %+v", s)
	}

	crashed := mem.CrashClone()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open("/log", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if s := stats.Snapshot(); s.Opens != 2 || s.Recoveries != 0 || s.SegmentsRecovered != 0 {
		t.Errorf("a clean reopen counted as a recovery: %+v", s)
	}

	opts.FS = crashed
	l, err = Open("/log", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s = stats.Snapshot()
	if s.Opens != 3 || s.Recoveries != 1 || s.SegmentsRecovered < 1 || s.RecoveryTime <= 0 || s.RecoveryTime > s.OpenTime {
		t.Errorf("after the crash's reopen: %+v", s)
	}
	var none *Stats
	if got := none.Snapshot(); got != (StatsSnapshot{}) {
		t.Errorf("a nil Stats' snapshot: %+v", got)
	}
}
