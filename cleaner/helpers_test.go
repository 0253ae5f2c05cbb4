package cleaner

import (
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// newFakeClock returns a fake clock reading now.
func newFakeClock() *testutil.Clock { return testutil.NewClock(now) }

// openLog opens a log on fs at dir with tiny segments and the fake clock.
// SyncAlways syncs a segment as it rolls, in the caller's goroutine: no
// background flush then holds a segment when a test counts its files.
func openLog(t testing.TB, fs vfs.FS, dir string, clock *testutil.Clock) *seglog.Log {
	t.Helper()
	l, err := seglog.Open(dir, seglog.Options{FS: fs, LogConfig: seglog.LogConfig{SegmentBytes: 1 << 10, MaxIndexBytes: 1 << 10, Sync: seglog.SyncAlways}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// appendAt appends n records stamped ts, one batch.
func appendAt(t testing.TB, l *seglog.Log, ts int64, n int) seglog.AppendInfo {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Key: []byte("k"), Value: []byte("value-0123456789"), Timestamp: ts}
	}
	info, err := l.Append(recs...)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// segmentsOf builds a log of segments whose records are stamped with the
// given ages (one segment per age, sealed by Roll), plus an empty active one.
func segmentsOf(t testing.TB, l *seglog.Log, clock *testutil.Clock, ages ...time.Duration) {
	t.Helper()
	for _, age := range ages {
		appendAt(t, l, clock.Now().Add(-age).UnixMilli(), 5)
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
}

// retention returns a delete policy by time with no file deletion delay.
func retention(d time.Duration) Policy {
	p := DefaultPolicy()
	p.Retention, p.FileDeleteDelay = d, 0
	return p
}
