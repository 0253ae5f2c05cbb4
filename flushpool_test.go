package seglog

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Logs sharing a FlushPool start no goroutine of their own, and their
// background flushes (after a roll, and SyncPeriodic's interval) still
// happen.
func TestFlushPoolShared(t *testing.T) {
	fs := vfs.NewMem()
	pool := newFlushPool(2, time.Millisecond)
	defer pool.Close()
	before := runtime.NumGoroutine()
	var logs []*Log
	for i := range 50 {
		o := Options{FS: fs, flushPool: pool, lockHeld: true, LogConfig: LogConfig{SegmentBytes: 1 << 10, MaxIndexBytes: 1 << 10}}
		if i%2 == 1 {
			o.Sync, o.SyncInterval = SyncPeriodic, time.Millisecond
		}
		l, err := Open(fmt.Sprintf("/d/t-%d", i), o)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	if g := runtime.NumGoroutine(); g > before+2 {
		t.Errorf("50 pooled logs started %d goroutines", g-before)
	}
	if names, _ := fs.List("/d/t-0"); len(names) > 0 {
		for _, n := range names {
			if n == LockFile {
				t.Errorf("LockHeld log took its own lock file")
			}
		}
	}
	val := make([]byte, 100)
	for _, l := range logs {
		for range 30 { // several rolls
			if _, err := l.Append(record.Record{Value: val}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every log's recovery point advances: the rolled segments (all) and
	// the periodic ones' tails (odd) are flushed by the pool.
	for i, l := range logs {
		want := l.Segments()[len(l.Segments())-1].BaseOffset
		if i%2 == 1 {
			want = l.EndOffset()
		}
		testutil.WaitFor(t, fmt.Sprintf("the pool flushed log %d to %d", i, want), func() bool { return l.RecoveryPoint() >= want })
	}
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
