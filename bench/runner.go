package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// runner drives one workload: it alternates the two sides' rounds, counts
// what they do for the progress display, and samples throughput over time
// for plots. The sides' hot loops touch only two atomic counters.
type runner struct {
	env   Env
	start time.Time

	records atomic.Int64 // records done in the phase, both sides (progress)
	bytes   atomic.Int64 // bytes done by the side running now (samples)

	mu        sync.Mutex // guards the fields below
	baseline  bool
	round     int
	lastBytes int64
	lastAt    time.Duration
	samples   []Sample

	byTime   bool // progress counts milliseconds, not records
	phaseT0  time.Time
	stop     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

func newRunner(env Env) *runner { return &runner{env: env, start: time.Now()} }

// begin starts a phase shown as one progress bar of total records (or, if
// byTime, total milliseconds).
func (r *runner) begin(phase string, total int64, byTime bool) {
	r.records.Store(0)
	r.byTime = byTime
	r.phaseT0 = time.Now()
	r.stop = make(chan struct{})
	r.stopped = make(chan struct{})
	r.stopOnce = sync.Once{}
	unit := "records"
	if byTime {
		unit = "ms"
	}
	if r.env.Progress != nil {
		r.env.Progress.Start(phase, total, unit)
	}
	go r.sample()
}

func (r *runner) sample() {
	defer close(r.stopped)
	t := time.NewTicker(r.env.sampleEvery())
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.tick()
		}
	}
}

func (r *runner) tick() {
	r.mu.Lock()
	r.flushSampleLocked()
	r.mu.Unlock()
	if r.env.Progress != nil {
		if r.byTime {
			r.env.Progress.Set(time.Since(r.phaseT0).Milliseconds())
		} else {
			r.env.Progress.Set(r.records.Load())
		}
	}
}

// flushSampleLocked closes the sampling period at now for the side running.
func (r *runner) flushSampleLocked() {
	now := time.Since(r.start)
	b := r.bytes.Load()
	if dt := now - r.lastAt; dt > 0 && b > r.lastBytes {
		r.samples = append(r.samples, Sample{
			At: now, Baseline: r.baseline, Round: r.round,
			BytesPerSec: float64(b-r.lastBytes) / dt.Seconds(),
		})
	}
	r.lastBytes, r.lastAt = b, now
}

// switchTo marks the start of a side's round.
func (r *runner) switchTo(baseline bool, round int) {
	r.mu.Lock()
	r.flushSampleLocked()
	r.baseline, r.round = baseline, round
	r.mu.Unlock()
}

// idle marks the end of a side's timed section: what follows (verification,
// cleanup) is not sampled.
func (r *runner) idle() {
	r.mu.Lock()
	r.flushSampleLocked()
	r.mu.Unlock()
}

func (r *runner) add(records, bytes int64) {
	r.records.Add(records)
	r.bytes.Add(bytes)
}

// end finishes the phase.
func (r *runner) end() {
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.stopped
	if r.env.Progress != nil {
		r.env.Progress.Finish()
	}
}

// takeSamples returns the samples so far and forgets them, so each result
// of a sweep holds its own.
func (r *runner) takeSamples() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.samples
	r.samples = nil
	return s
}

// sideFunc runs one round of one side: round -1 is the untimed warm-up.
type sideFunc func(round int) (roundStat, error)

// interleave runs a warm-up round of each side and then rounds timed
// rounds of each, alternating which goes first (A B, B A, A B, …) so that
// neither side always inherits the other's page-cache and scheduler state.
func (r *runner) interleave(ctx context.Context, rounds int, engine, baseline sideFunc) (a, b []roundStat, err error) {
	runSide := func(isBase bool, round int) (roundStat, error) {
		r.switchTo(isBase, round)
		defer r.idle()
		if isBase {
			return baseline(round)
		}
		return engine(round)
	}
	for _, base := range []bool{false, true} {
		if _, err := runSide(base, -1); err != nil {
			return nil, nil, err
		}
	}
	for i := range rounds {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		var sa, sb roundStat
		for _, base := range order {
			st, err := runSide(base, i)
			if err != nil {
				return nil, nil, err
			}
			if base {
				sb = st
			} else {
				sa = st
			}
		}
		a, b = append(a, sa), append(b, sb)
	}
	return a, b, nil
}

// timed runs f and returns its wall and process CPU time.
func timed(f func() error) (wall, cpu time.Duration, err error) {
	c0, t0 := cpuTime(), time.Now()
	err = f()
	return time.Since(t0), cpuTime() - c0, err
}
