package cleaner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog"
)

// DefaultCheckInterval is Kafka's log.retention.check.interval.ms.
const DefaultCheckInterval = 5 * time.Minute

// DefaultInitialDelay is Kafka's log.initial.task.delay.ms: its
// retention task's first run comes this long after the broker starts.
const DefaultInitialDelay = 30 * time.Second

// Options configures a Cleaner. The zero value is usable.
type Options struct {
	// Workers is how many logs are cleaned at once (default 1, as Kafka's
	// log.cleaner.threads). A round never runs more goroutines than this,
	// however many logs there are.
	Workers int
	// CheckInterval is the time between the end of one round over all
	// logs and the start of the next (default 5 minutes).
	CheckInterval time.Duration
	// InitialDelay is the time from Start to the first round (default
	// 30 s, Kafka's log.initial.task.delay.ms; at most CheckInterval), so
	// that a restarted process does not wait a whole interval before
	// retention runs again.
	InitialDelay time.Duration
	// Clock is the time source (default the wall clock).
	Clock seglog.Clock
	// Throttle bounds the I/O of the cleaner's passes; share one between
	// retention and compaction. Nil means no limit.
	Throttle *Throttle
	// Events are called as logs are cleaned.
	Events Events
	// Logger receives failures and pinned segments (default slog.Default()).
	Logger *slog.Logger
}

var (
	// ErrDuplicate: Add of a log whose directory is already added.
	ErrDuplicate = errors.New("cleaner: log already added")
	// ErrUnknownLog: the log was never added or has been removed.
	ErrUnknownLog = errors.New("cleaner: unknown log")
	// ErrRunning: Start of a cleaner already started.
	ErrRunning = errors.New("cleaner: already running")
	// ErrBeyondUpperBound: DeleteRecords past the log's upper bound (its
	// high watermark, or its end), which Kafka answers OFFSET_OUT_OF_RANGE.
	ErrBeyondUpperBound = errors.New("cleaner: offset beyond the upper bound")
)

// PanicError is the error of a pass that panicked; the panic is confined
// to that log's pass.
type PanicError struct {
	Value any
	Stack []byte
}

// Error reports the panic's value; Stack holds where it happened.
func (e *PanicError) Error() string { return fmt.Sprintf("cleaner: pass panicked: %v", e.Value) }

// Cleaner applies retention to many logs from a bounded pool of workers.
// Its methods are safe for concurrent use.
type Cleaner struct {
	opts   Options
	logger *slog.Logger

	mu    sync.Mutex
	logs  map[string]*logState
	total LogMetrics // totals, removed logs included
	// passes and lastRun describe finished rounds; guarded by mu.
	passes  int64
	lastRun time.Time

	backlog atomic.Int64
	// round serializes rounds: the scheduler's and RunOnce's.
	round sync.Mutex

	runMu  sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}

	comp compactState // compact.go
}

// logState is one log under the cleaner. mu is held for the whole of its
// pass, so Remove can wait for a pass in flight.
type logState struct {
	log Log
	dir string
	mu  sync.Mutex
	// Guarded by Cleaner.mu.
	policy        Policy
	upper         int64 // -1: the log end
	deleteRecords int64 // a requested start offset, or -1
	removed       bool
	metrics       LogMetrics
	// quiet, guarded by mu, remembers a pass that found nothing to do.
	quiet quietLook
}

// quietLook is what a pass that deleted nothing saw: until the time, with
// the same inputs, another pass would decide the same (QuietUntil).
type quietLook struct {
	valid                   bool
	policy                  Policy
	upper, requested, start int64
	end                     int64
	until                   time.Time
	pinnedBy                int64
}

// New returns a stopped Cleaner with no logs.
func New(opts Options) *Cleaner {
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.InitialDelay <= 0 {
		opts.InitialDelay = DefaultInitialDelay
	}
	opts.InitialDelay = min(opts.InitialDelay, opts.CheckInterval)
	if opts.Clock == nil {
		opts.Clock = seglog.RealClock
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Cleaner{opts: opts, logger: logger, logs: make(map[string]*logState)}
}

// Throttle returns the Throttle passes charge (nil: unlimited), for a
// compaction pass to share.
func (c *Cleaner) Throttle() *Throttle { return c.opts.Throttle }

// Add puts l under policy p, from the next round on. Logs are known by
// their directory: adding one twice is ErrDuplicate. A policy Validate
// refuses is a *PolicyError (ErrInvalidPolicy).
func (c *Cleaner) Add(l Log, p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	dir := l.Dir()
	if _, ok := c.logs[dir]; ok {
		return fmt.Errorf("%w: %s", ErrDuplicate, dir)
	}
	c.logs[dir] = &logState{log: l, dir: dir, policy: p, upper: -1, deleteRecords: -1,
		metrics: LogMetrics{Dir: dir, StartOffset: l.StartOffset(), PinnedBy: -1}}
	return nil
}

// SetPolicy replaces the policy of an added log (ErrUnknownLog for one not
// added; a *PolicyError for a policy Validate refuses).
func (c *Cleaner) SetPolicy(l Log, p Policy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return c.update(l, func(st *logState) error { st.policy = p; return nil })
}

// SetUpperBound sets the offset retention never deletes at or past (a
// replication high watermark); negative means the log end, the default.
func (c *Cleaner) SetUpperBound(l Log, offset int64) error {
	return c.update(l, func(st *logState) error { st.upper = max(offset, -1); return nil })
}

// DeleteRecords asks for the log's start offset to move to offset at its
// next pass, as Kafka's DeleteRecords: the segments wholly below go, the
// records below offset in the segment holding it become unreadable. It
// fails with ErrBeyondUpperBound past the upper bound.
func (c *Cleaner) DeleteRecords(l Log, offset int64) error {
	return c.update(l, func(st *logState) error {
		bound := st.log.EndOffset()
		if st.upper >= 0 && st.upper < bound {
			bound = st.upper
		}
		if offset > bound {
			return fmt.Errorf("%w: %d past %d in %s", ErrBeyondUpperBound, offset, bound, st.log.Dir())
		}
		st.deleteRecords = max(st.deleteRecords, offset)
		return nil
	})
}

func (c *Cleaner) update(l Log, f func(*logState) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.logs[l.Dir()]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownLog, l.Dir())
	}
	return f(st)
}

// Remove takes l from the cleaner, waiting for a pass on it in flight, so
// the caller may close the log as soon as Remove returns.
func (c *Cleaner) Remove(l Log) error {
	c.mu.Lock()
	st, ok := c.logs[l.Dir()]
	if ok {
		delete(c.logs, l.Dir())
	}
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownLog, l.Dir())
	}
	st.mu.Lock()
	c.mu.Lock()
	st.removed = true
	c.mu.Unlock()
	c.forgetCompaction(st.dir)
	st.mu.Unlock()
	return nil
}

// Start runs rounds every CheckInterval until ctx ends or Stop is called.
// The first round starts InitialDelay after Start, as Kafka's retention
// task waits before its first run.
func (c *Cleaner) Start(ctx context.Context) error {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if c.cancel != nil {
		return ErrRunning
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		wait := c.opts.InitialDelay
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.opts.Clock.After(wait):
				wait = c.opts.CheckInterval
				// A round ends early only because ctx ended, caught above.
				_ = c.RunOnce(ctx)
			}
		}
	}(c.done)
	return nil
}

// Stop ends the rounds: no new log's pass starts, and Stop returns once
// the passes in flight (one per worker at most) have finished. A stopped
// Cleaner may be started again.
func (c *Cleaner) Stop() {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if c.cancel == nil {
		return
	}
	c.cancel()
	<-c.done
	c.cancel, c.done = nil, nil
}

// RunOnce runs one round over every log now, with Options.Workers workers,
// and returns when it is done or, early, when ctx ends (with ctx's error).
// A log's failure does not fail the round: it is in the log's metrics and
// the Failure event.
func (c *Cleaner) RunOnce(ctx context.Context) error {
	c.round.Lock()
	defer c.round.Unlock()
	c.mu.Lock()
	states := make([]*logState, 0, len(c.logs))
	for _, st := range c.logs {
		states = append(states, st)
	}
	c.mu.Unlock()
	// Oldest directory name first: a stable order, so a round cut short
	// by Stop does not always starve the same logs.
	slices.SortFunc(states, func(a, b *logState) int { return cmp.Compare(a.dir, b.dir) })
	c.filthiestFirst(states)
	c.backlog.Store(int64(len(states)))
	defer c.backlog.Store(0)

	work := make(chan *logState)
	var wg sync.WaitGroup
	for range min(c.opts.Workers, len(states)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for st := range work {
				// After a stop, what was handed over is dropped, not
				// failed: it simply waits for the next round.
				if ctx.Err() == nil {
					c.cleanLog(ctx, st)
				}
			}
		}()
	}
feed:
	for _, st := range states {
		if ctx.Err() != nil {
			break
		}
		// Counted out before the hand-over, not after: a worker may start
		// the pass before this goroutine runs again, and the backlog must
		// never still count a log a worker has begun (the round's end
		// resets it whatever happened).
		c.backlog.Add(-1)
		select {
		case work <- st:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.passes++
	c.lastRun = c.opts.Clock.Now()
	c.mu.Unlock()
	return nil
}

// Metrics returns a snapshot.
func (c *Cleaner) Metrics() Metrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := Metrics{
		SegmentsDeleted: c.total.SegmentsDeleted,
		BytesDeleted:    c.total.BytesDeleted,
		RecordsDeleted:  c.total.RecordsDeleted,
		Failures:        c.total.Failures,
		Passes:          c.passes,
		LastRun:         c.lastRun,
		Backlog:         int(c.backlog.Load()),
		Logs:            make([]LogMetrics, 0, len(c.logs)),
	}
	for _, st := range c.logs {
		m.Logs = append(m.Logs, st.metrics)
	}
	slices.SortFunc(m.Logs, func(a, b LogMetrics) int { return cmp.Compare(a.Dir, b.Dir) })
	return m
}
