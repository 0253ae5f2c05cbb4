package ui

import (
	"sync"
	"time"

	"github.com/seglog/seglog"
)

// SimClock is the playground's simulated clock, a seglog.Clock: it stands
// still until Advance moves it. It is the store's clock
// (store.Options.Clock: record and commit times and the cleaner's) and
// the UI's (Options.Clock), so moving it ages records exactly as time
// would.
type SimClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []simWaiter
}

var _ seglog.Clock = (*SimClock)(nil)

type simWaiter struct {
	at time.Time
	ch chan time.Time
}

// NewSimClock returns a clock standing at start.
func NewSimClock(start time.Time) *SimClock { return &SimClock{now: start} }

// Now returns the simulated time.
func (c *SimClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After delivers the simulated time once Advance has moved it d forward.
func (c *SimClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, simWaiter{c.now.Add(d), ch})
	return ch
}

// Advance moves the clock forward by d (a negative d is ignored: time
// does not go back) and fires the waiters whose time has come.
func (c *SimClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.now = c.now.Add(d)
	}
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	clear(c.waiters[len(kept):])
	c.waiters = kept
	return c.now
}
