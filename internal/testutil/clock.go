package testutil

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// Clock is a fake clock that moves only when a test advances it, so a
// test states exactly how much time passed. It serves both shapes of
// timer the code uses: AfterFunc (the server's coordinator) and After
// (the cleaner and its throttle).
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*Timer
}

// Timer is a call or a channel send scheduled on a Clock.
type Timer struct {
	c       *Clock
	at      time.Time
	f       func()           // AfterFunc's call
	ch      chan<- time.Time // After's channel
	stopped bool
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run once the clock is advanced d or more.
func (c *Clock) AfterFunc(d time.Duration, f func()) *Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &Timer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// After returns a channel that receives the clock's time once the clock
// is advanced d or more, like time.After; for d <= 0 it already holds it.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, &Timer{c: c, at: c.now.Add(d), ch: ch})
	return ch
}

// Stop cancels t, reporting whether it had not yet fired or been stopped.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the clock forward by d. The AfterFunc calls that fall due
// run synchronously, in deadline order, each with the clock at its own
// deadline; then the clock reaches its new time and the After channels
// that fell due receive it (their receivers run concurrently, so they
// would see the new time anyway).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *Timer
		for _, t := range c.timers {
			if t.f != nil && !t.stopped && !t.at.After(target) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			break
		}
		next.stopped = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
	defer c.mu.Unlock()
	c.now = target
	kept := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case t.ch != nil && !t.at.After(c.now):
			t.stopped = true
			t.ch <- c.now
		default:
			kept = append(kept, t)
		}
	}
	clear(c.timers[len(kept):])
	c.timers = kept
}

// Pending returns the deadlines of the timers armed and not yet fired or
// stopped, in the order they were armed.
func (c *Clock) Pending() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at []time.Time
	for _, t := range c.timers {
		if !t.stopped {
			at = append(at, t.at)
		}
	}
	return at
}

// WaitForTimers yields until at least n timers are pending: the code under
// test has reached the point where it waits on the clock.
func (c *Clock) WaitForTimers(tb testing.TB, n int) {
	tb.Helper()
	WaitFor(tb, "timers armed on the fake clock", func() bool {
		runtime.Gosched()
		return len(c.Pending()) >= n
	})
}

// NowFunc is a clock that reads f, for a test whose time is computed (a
// counter, an atomic, a fixed instant) rather than advanced by hand. Its
// After waits on the wall clock: the code such tests drive reads the
// time but does not wait on it.
type NowFunc func() time.Time

// Now returns f().
func (f NowFunc) Now() time.Time { return f() }

// After is time.After.
func (f NowFunc) After(d time.Duration) <-chan time.Time { return time.After(d) }
