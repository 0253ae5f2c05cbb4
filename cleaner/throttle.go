package cleaner

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/seglog/seglog"
)

// Throttle bounds the I/O rate of every worker that shares it, as Kafka's
// log.cleaner.io.max.bytes.per.second does: each Wait charges bytes and
// blocks long enough that the bytes charged so far, over time, stay at the
// rate, allowing a burst of one Window. Retention only renames and unlinks
// files, so its passes charge nothing; the compaction pass charges what it
// reads and writes through the same Throttle.
type Throttle struct {
	rate  float64 // bytes per second; +Inf for none
	clock seglog.Clock

	mu sync.Mutex
	// due is when the bytes charged so far would have been done at the
	// rate; a Wait sleeps until due - Window.
	due time.Time
}

// Window is the burst a Throttle allows: Kafka samples its rate over 300 ms.
const Window = 300 * time.Millisecond

// NewThrottle returns a Throttle at bytesPerSecond (<= 0 or +Inf: no
// limit) on clock (nil: the wall clock).
func NewThrottle(bytesPerSecond float64, clock seglog.Clock) *Throttle {
	if bytesPerSecond <= 0 || math.IsNaN(bytesPerSecond) {
		bytesPerSecond = math.Inf(1)
	}
	if clock == nil {
		clock = seglog.RealClock
	}
	return &Throttle{rate: bytesPerSecond, clock: clock}
}

// Rate returns the limit in bytes per second (+Inf for none).
func (t *Throttle) Rate() float64 { return t.rate }

// Wait charges n bytes and blocks until the rate allows them, or ctx ends
// (then it returns ctx's error; the bytes stay charged). A nil Throttle
// never blocks.
func (t *Throttle) Wait(ctx context.Context, n int64) error {
	if t == nil || math.IsInf(t.rate, 1) || n <= 0 {
		return ctx.Err()
	}
	now := t.clock.Now()
	t.mu.Lock()
	if t.due.Before(now) {
		t.due = now
	}
	t.due = t.due.Add(time.Duration(float64(n) / t.rate * float64(time.Second)))
	wait := t.due.Sub(now) - Window
	t.mu.Unlock()
	if wait <= 0 {
		return ctx.Err()
	}
	select {
	case <-t.clock.After(wait):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
