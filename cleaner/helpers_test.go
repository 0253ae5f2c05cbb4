package cleaner

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// fakeClock is a Clock that moves only when a test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// waitForTimers yields until n timers are armed (the scheduler is waiting).
func (c *fakeClock) waitForTimers(t *testing.T, n int) {
	t.Helper()
	for i := 0; ; i++ {
		c.mu.Lock()
		got := len(c.waiters)
		c.mu.Unlock()
		if got >= n {
			return
		}
		if i > 10_000_000 {
			t.Fatalf("%d timers armed, want %d", got, n)
		}
		runtime.Gosched()
	}
}

// openLog opens a log on fs at dir with tiny segments and the fake clock.
// SyncAlways syncs a segment as it rolls, in the caller's goroutine: no
// background flush then holds a segment when a test counts its files.
func openLog(t testing.TB, fs vfs.FS, dir string, clock *fakeClock) *seglog.Log {
	t.Helper()
	l, err := seglog.Open(dir, seglog.Options{FS: fs, SegmentBytes: 1 << 10, MaxIndexBytes: 1 << 10, Now: clock.Now, Sync: seglog.SyncAlways})
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
func segmentsOf(t testing.TB, l *seglog.Log, clock *fakeClock, ages ...time.Duration) {
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
