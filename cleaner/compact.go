package cleaner

import (
	"cmp"
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/seglog/seglog/compaction"
)

// Compactable is a Log the cleaner can compact. Wrap's adapter for
// *seglog.Log is one; logs that are not are only retained.
type Compactable interface {
	Log
	// CleanerCheckpoint returns the cleaner-offset checkpoint (ok false
	// when there is none).
	CleanerCheckpoint() (offset int64, ok bool, err error)
	// SetCleanerCheckpoint writes it durably.
	SetCleanerCheckpoint(offset int64) error
	// Compact runs one compaction round (compaction.Clean).
	Compact(m *compaction.OffsetMap, firstDirty, upper int64, o compaction.Options) (compaction.Result, error)
}

// CompactionOptions configures the compaction the cleaner runs for logs
// whose policy says compact.
type CompactionOptions struct {
	// DedupeBufferBytes is log.cleaner.dedupe.buffer.size, shared by the
	// workers (each gets an equal part, as Kafka's threads do). Zero
	// means compaction.DefaultMapBytes (128 MiB). The maps are allocated
	// on the first compaction and kept.
	DedupeBufferBytes int
	// LoadFactor is log.cleaner.io.buffer.load.factor (0: 0.9).
	LoadFactor float64
	// SegmentBytes is segment.bytes, the size merged segments stay within
	// (0: 1 GiB).
	SegmentBytes int64
	// LogCompacted, if set, is called after each compaction round.
	LogCompacted func(LogCompacted)
}

// LogCompacted describes one compaction round of a log.
type LogCompacted struct {
	Dir string
	// Ratio is the dirty ratio that made the round run.
	Ratio float64
	compaction.Result
}

// CompactionMetrics is one log's compaction record.
type CompactionMetrics struct {
	Dir string
	// Rounds, BytesRead, BytesWritten and RecordsRemoved add up every
	// round; MapFill, Duration and Checkpoint are the last round's (-1
	// before one succeeded); Ratio is the last pass's, round or not.
	Rounds                  int64
	BytesRead, BytesWritten int64
	RecordsRemoved          int64
	MapFill                 float64
	Duration                time.Duration
	Ratio                   float64
	Checkpoint              int64
	LastRun                 time.Time
	Failures                int64
	Err                     error
}

// compactState is the Cleaner's compaction side.
type compactState struct {
	mu      sync.Mutex
	opts    CompactionOptions
	lso     map[string]int64
	metrics map[string]*CompactionMetrics
	// removed adds up the records of removed logs (Remove), so that the
	// totals never go down while a log added again under the same
	// directory (a topic deleted and created again) starts from zero.
	removed CompactionMetrics
	// maps is the pool of offset maps, one per worker at most.
	maps      chan *compaction.OffsetMap
	allocated int
}

// SetCompaction sets the compaction options; call it before Start.
func (c *Cleaner) SetCompaction(o CompactionOptions) {
	c.comp.mu.Lock()
	defer c.comp.mu.Unlock()
	c.comp.opts = o
}

// SetLastStableOffset sets the offset compaction never cleans at or past
// (Kafka's last stable offset: the first offset of a transaction still
// open); negative means none. The upper bound of SetUpperBound applies too.
func (c *Cleaner) SetLastStableOffset(l Log, offset int64) error {
	if err := c.update(l, func(*logState) error { return nil }); err != nil {
		return err
	}
	c.comp.mu.Lock()
	defer c.comp.mu.Unlock()
	if c.comp.lso == nil {
		c.comp.lso = map[string]int64{}
	}
	c.comp.lso[l.Dir()] = offset
	return nil
}

// CompactionMetrics returns a snapshot of every log's compaction record,
// sorted by Dir.
func (c *Cleaner) CompactionMetrics() []CompactionMetrics {
	c.comp.mu.Lock()
	defer c.comp.mu.Unlock()
	return c.compactionMetricsLocked()
}

func (c *Cleaner) compactionMetricsLocked() []CompactionMetrics {
	out := make([]CompactionMetrics, 0, len(c.comp.metrics))
	for _, m := range c.comp.metrics {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b CompactionMetrics) int { return cmp.Compare(a.Dir, b.Dir) })
	return out
}

// CompactionTotals returns CompactionMetrics' records and, read at the
// same moment, the sums of the records of the logs removed so far
// (Rounds, BytesRead, BytesWritten, RecordsRemoved, Failures; the other
// fields are zero): together, the cleaner's totals since it was made,
// each record counted once.
func (c *Cleaner) CompactionTotals() (logs []CompactionMetrics, removed CompactionMetrics) {
	c.comp.mu.Lock()
	defer c.comp.mu.Unlock()
	return c.compactionMetricsLocked(), c.comp.removed
}

// forgetCompaction moves dir's compaction record into the removed sums;
// the log is being removed, with its logState's mu held, so no round
// records into it afterwards.
func (c *Cleaner) forgetCompaction(dir string) {
	c.comp.mu.Lock()
	defer c.comp.mu.Unlock()
	if m := c.comp.metrics[dir]; m != nil {
		r := &c.comp.removed
		r.Rounds += m.Rounds
		r.BytesRead += m.BytesRead
		r.BytesWritten += m.BytesWritten
		r.RecordsRemoved += m.RecordsRemoved
		r.Failures += m.Failures
		delete(c.comp.metrics, dir)
	}
	delete(c.comp.lso, dir)
}

// getMap takes an offset map from the pool, allocating one while fewer
// than Workers exist.
func (c *Cleaner) getMap() *compaction.OffsetMap {
	c.comp.mu.Lock()
	if c.comp.maps == nil {
		c.comp.maps = make(chan *compaction.OffsetMap, c.opts.Workers)
	}
	select {
	case m := <-c.comp.maps:
		c.comp.mu.Unlock()
		return m
	default:
	}
	if c.comp.allocated < c.opts.Workers {
		c.comp.allocated++
		size := c.comp.opts.DedupeBufferBytes
		if size <= 0 {
			size = compaction.DefaultMapBytes
		}
		lf := c.comp.opts.LoadFactor
		c.comp.mu.Unlock()
		return compaction.NewOffsetMap(size/c.opts.Workers, lf)
	}
	ch := c.comp.maps
	c.comp.mu.Unlock()
	return <-ch
}

func (c *Cleaner) putMap(m *compaction.OffsetMap) { c.comp.maps <- m }

// compactionPlan decides for one log; ok is false when the log is not
// compacted at all.
func (c *Cleaner) compactionPlan(st *logState, p Policy, upper int64, force bool) (Compactable, CompactionPlan, bool, error) {
	cl, ok := st.log.(Compactable)
	if !ok || p.CleanupPolicy == Delete {
		return nil, CompactionPlan{}, false, nil
	}
	cp, haveCP, err := cl.CleanerCheckpoint()
	if err != nil {
		return cl, CompactionPlan{}, true, err
	}
	if !haveCP {
		cp = -1
	}
	c.comp.mu.Lock()
	lso, haveLSO := c.comp.lso[st.dir]
	c.comp.mu.Unlock()
	bound := upper
	if haveLSO && lso >= 0 && (bound < 0 || lso < bound) {
		bound = lso
	}
	plan := DecideCompaction(CompactionInput{
		Segments:    cl.Segments(),
		Policy:      p,
		Now:         c.opts.Clock.Now(),
		StartOffset: cl.StartOffset(),
		EndOffset:   cl.EndOffset(),
		Checkpoint:  cp,
		UpperBound:  bound,
		Force:       force,
	})
	return cl, plan, true, nil
}

// compactLog runs a log's compaction round if its plan says so, after
// its retention pass. A failure is the log's alone.
func (c *Cleaner) compactLog(ctx context.Context, st *logState, p Policy, upper int64) {
	res, ratio, ran, err := c.compactOnce(ctx, st, p, upper, false)
	if err != nil && stoppedBy(ctx, err) {
		// Stop cut the round short (its swap never happened): not a
		// failure; the next round starts it again.
		return
	}
	c.recordCompaction(st.dir, res, ratio, ran, err)
}

// compactOnce decides and, if the plan says so (or force), runs a round.
func (c *Cleaner) compactOnce(ctx context.Context, st *logState, p Policy, upper int64, force bool) (res compaction.Result, ratio float64, ran bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	cl, plan, ok, err := c.compactionPlan(st, p, upper, force)
	if !ok || err != nil || !plan.Clean || ctx.Err() != nil {
		return res, plan.Ratio, false, err
	}
	m := c.getMap()
	defer c.putMap(m)
	o := compaction.Options{
		DeleteRetention: p.DeleteRetention,
		SegmentBytes:    c.comp.opts.SegmentBytes,
		Now:             c.opts.Clock.Now,
		Throttle:        func(n int64) error { return c.opts.Throttle.Wait(ctx, n) },
		Force:           force,
	}
	if o.DeleteRetention == 0 {
		o.DeleteRetention = -1 // 0 ms, not compaction's default
	}
	res, err = cl.Compact(m, plan.FirstDirty, plan.FirstUncleanable, o)
	if err != nil {
		return res, plan.Ratio, true, err
	}
	if err := cl.SetCleanerCheckpoint(res.End); err != nil {
		return res, plan.Ratio, true, fmt.Errorf("cleaner: writing the cleaner checkpoint of %s: %w", st.dir, err)
	}
	return res, plan.Ratio, true, nil
}

func (c *Cleaner) recordCompaction(dir string, res compaction.Result, ratio float64, ran bool, err error) {
	c.comp.mu.Lock()
	if c.comp.metrics == nil {
		c.comp.metrics = map[string]*CompactionMetrics{}
	}
	m := c.comp.metrics[dir]
	if m == nil {
		m = &CompactionMetrics{Dir: dir, Checkpoint: -1}
		c.comp.metrics[dir] = m
	}
	m.Ratio = ratio
	if ran {
		m.Rounds++
		m.BytesRead += res.BytesRead
		m.BytesWritten += res.BytesWritten
		m.RecordsRemoved += res.RecordsRemoved
		m.MapFill, m.Duration, m.LastRun = res.MapFill, res.Duration, c.opts.Clock.Now()
		if err == nil {
			m.Checkpoint = res.End
		}
	}
	m.Err = err
	if err != nil {
		m.Failures++
	}
	event := c.comp.opts.LogCompacted
	c.comp.mu.Unlock()
	if err != nil {
		c.logger.Warn("cleaner: compaction failed", "dir", dir, "err", err)
		if f := c.opts.Events.Failure; f != nil {
			f(Failure{Dir: dir, Err: err})
		}
		return
	}
	if ran && event != nil {
		event(LogCompacted{Dir: dir, Ratio: ratio, Result: res})
	}
}

// filthiestFirst orders a round's logs so that those due for compaction
// come first, the highest dirty ratio first (Kafka's
// grabFilthiestCompactedLog), the rest in their order.
func (c *Cleaner) filthiestFirst(states []*logState) {
	ratio := make(map[*logState]float64, len(states))
	for _, st := range states {
		c.mu.Lock()
		p, upper := st.policy, st.upper
		c.mu.Unlock()
		if _, plan, ok, err := c.compactionPlan(st, p, upper, false); ok && err == nil && plan.Clean {
			ratio[st] = plan.Ratio
		}
	}
	if len(ratio) == 0 {
		return
	}
	slices.SortStableFunc(states, func(a, b *logState) int {
		ra, oka := ratio[a]
		rb, okb := ratio[b]
		switch {
		case oka && okb:
			return cmp.Compare(rb, ra)
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
}

// Compact runs a compaction round on l now, whatever its dirty ratio and
// compaction lag, also rewriting segments that only hold records to drop
// (seglog clean --compact). p's compaction settings apply.
func (c *Cleaner) Compact(ctx context.Context, l Log, p Policy) (LogCompacted, error) {
	c.mu.Lock()
	st, ok := c.logs[l.Dir()]
	c.mu.Unlock()
	if !ok {
		return LogCompacted{}, fmt.Errorf("%w: %s", ErrUnknownLog, l.Dir())
	}
	if p.CleanupPolicy == Delete {
		p.CleanupPolicy = Compact
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	c.mu.Lock()
	upper, removed := st.upper, st.removed
	c.mu.Unlock()
	if removed {
		return LogCompacted{}, fmt.Errorf("%w: %s", ErrUnknownLog, l.Dir())
	}
	res, ratio, ran, err := c.compactOnce(ctx, st, p, upper, true)
	c.recordCompaction(st.dir, res, ratio, ran, err)
	if err == nil && !ran {
		if _, ok := l.(Compactable); !ok {
			err = fmt.Errorf("cleaner: %s cannot be compacted", l.Dir())
		}
	}
	return LogCompacted{Dir: st.dir, Ratio: ratio, Result: res}, err
}
