package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// RetentionConfig is the retention workload: a cleaner over many logs of
// sealed segments, timed looking (nothing to delete) and deleting (one
// segment per log), and appends' latency with and without passes running.
type RetentionConfig struct {
	// Logs and Segments shape the set: Logs logs of Segments segments
	// each (the last one active). Defaults 1,000 and 10.
	Logs, Segments int
	// Workers is the cleaner's worker count. Default 1.
	Workers int
	// Rounds is how many timed looking passes, and append rounds of each
	// side, are run (medians are reported). Default 5.
	Rounds int
	// Appends is how many appends each append round times. Default 20,000.
	Appends int
	// Memory runs on the in-memory FS instead of files below Env.Dir.
	Memory bool
}

// RetentionResult is what RunRetention measured.
type RetentionResult struct {
	Workload string `json:"workload"` // "retention"
	Logs     int    `json:"logs"`
	Segments int    `json:"segments"`
	Workers  int    `json:"workers"`
	Memory   bool   `json:"memory"`
	// LookPass is the median time of a pass that looks at every segment
	// and deletes nothing; QuietPass of the pass right after it, which
	// skips the logs where nothing that decides has changed; DeletePass
	// the time of the pass that deletes one segment from every log.
	LookPass   time.Duration `json:"look_pass_ns"`
	QuietPass  time.Duration `json:"quiet_pass_ns"`
	DeletePass time.Duration `json:"delete_pass_ns"`
	Deleted    int64         `json:"segments_deleted"`
	// AppendP99Baseline is appends' p99 latency with no pass running;
	// AppendP99DuringPasses while passes run back to back under a time
	// policy (appends do not make a log worth a new look), and
	// AppendP99DuringFullPasses under a size policy (each append does, so
	// every pass looks at every segment). Medians over the rounds; Ratio
	// and RatioFull are each ÷ the baseline.
	AppendP99Baseline         time.Duration `json:"append_p99_baseline_ns"`
	AppendP99DuringPasses     time.Duration `json:"append_p99_during_passes_ns"`
	AppendP99DuringFullPasses time.Duration `json:"append_p99_during_full_passes_ns"`
	Ratio                     float64       `json:"ratio"`
	RatioFull                 float64       `json:"ratio_full"`
}

func (c *RetentionConfig) defaults() error {
	if c.Logs == 0 {
		c.Logs = 1000
	}
	if c.Segments == 0 {
		c.Segments = 10
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Rounds == 0 {
		c.Rounds = 5
	}
	if c.Appends == 0 {
		c.Appends = 20_000
	}
	if c.Logs < 1 || c.Segments < 2 || c.Workers < 1 || c.Rounds < 1 || c.Appends < 1 {
		return invalid("retention: logs %d, segments %d (at least 2), workers %d, rounds %d, appends %d must be positive",
			c.Logs, c.Segments, c.Workers, c.Rounds, c.Appends)
	}
	return nil
}

// RunRetention runs the retention workload. The first segment of every log
// holds records eight days old, the others records from now: a pass under
// a 30-day retention.ms finds nothing to delete, one under Kafka's default
// 7 days deletes exactly that segment from each log.
func RunRetention(ctx context.Context, env Env, cfg RetentionConfig) (*RetentionResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	setup, err := setupRetention(ctx, env, cfg)
	if setup != nil {
		defer setup.close()
	}
	if err != nil {
		return nil, err
	}
	c, logs := setup.c, setup.logs
	res := &RetentionResult{Workload: "retention", Logs: cfg.Logs, Segments: cfg.Segments, Workers: cfg.Workers, Memory: cfg.Memory}
	pass := func() (time.Duration, error) {
		start := time.Now()
		err := c.RunOnce(ctx)
		return time.Since(start), err
	}
	// keep deletes nothing: retention.ms 30 days, nudged by a millisecond
	// per call so the cleaner cannot reuse its last look; keepBySize adds
	// a retention.bytes far above the logs' size, which makes every append
	// a reason to look again.
	nudge := time.Duration(0)
	keep := func(bySize bool) error {
		nudge += time.Millisecond
		p := cleaner.DefaultPolicy()
		p.Retention, p.FileDeleteDelay = 30*24*time.Hour+nudge, 0
		if bySize {
			p.RetentionBytes = 1 << 40
		}
		for _, l := range logs {
			if err := c.SetPolicy(cleaner.Wrap(l), p); err != nil {
				return err
			}
		}
		return nil
	}
	var looks, quiets []time.Duration
	for range cfg.Rounds + 1 { // the first round warms up
		if err := keep(false); err != nil {
			return nil, err
		}
		d, err := pass()
		if err != nil {
			return nil, err
		}
		q, err := pass()
		if err != nil {
			return nil, err
		}
		looks, quiets = append(looks, d), append(quiets, q)
	}
	if m := c.Metrics(); m.SegmentsDeleted != 0 || m.Failures != 0 {
		return nil, verifyErr("retention: looking passes deleted %d segments, %d failures", m.SegmentsDeleted, m.Failures)
	}
	res.LookPass, res.QuietPass = medianDuration(looks[1:]), medianDuration(quiets[1:])

	// Appends alone, with passes running under the time policy, and with
	// passes running under the size policy, in rotating order.
	var base, during, full []time.Duration
	for r := range cfg.Rounds {
		for k := range 3 {
			side := (r + k) % 3
			if side > 0 {
				if err := keep(side == 2); err != nil {
					return nil, err
				}
			}
			p99, err := appendRound(ctx, c, logs, cfg.Appends, side > 0)
			if err != nil {
				return nil, err
			}
			switch side {
			case 0:
				base = append(base, p99)
			case 1:
				during = append(during, p99)
			case 2:
				full = append(full, p99)
			}
		}
	}
	res.AppendP99Baseline, res.AppendP99DuringPasses, res.AppendP99DuringFullPasses = medianDuration(base), medianDuration(during), medianDuration(full)
	res.Ratio = float64(res.AppendP99DuringPasses) / float64(max(res.AppendP99Baseline, 1))
	res.RatioFull = float64(res.AppendP99DuringFullPasses) / float64(max(res.AppendP99Baseline, 1))

	week := cleaner.DefaultPolicy()
	week.FileDeleteDelay = 0
	for _, l := range logs {
		if err := c.SetPolicy(cleaner.Wrap(l), week); err != nil {
			return nil, err
		}
	}
	if res.DeletePass, err = pass(); err != nil {
		return nil, err
	}
	m := c.Metrics()
	res.Deleted = m.SegmentsDeleted
	if m.SegmentsDeleted != int64(cfg.Logs) || m.Failures != 0 {
		return nil, verifyErr("retention: the deleting pass removed %d segments of %d logs, %d failures", m.SegmentsDeleted, cfg.Logs, m.Failures)
	}
	return res, nil
}

// retentionSetup is the workload's logs under a cleaner whose policy
// deletes nothing (retention.ms 30 days).
type retentionSetup struct {
	c    *cleaner.Cleaner
	logs []*seglog.Log
	fs   vfs.FS
	dir  string // removed by close; empty in memory
}

func (s *retentionSetup) close() {
	for _, l := range s.logs {
		l.Close()
	}
	if s.dir != "" {
		vfs.RemoveAll(fs, s.dir)
	}
}

func setupRetention(ctx context.Context, env Env, cfg RetentionConfig) (*retentionSetup, error) {
	s := &retentionSetup{fs: fs}
	dir := "/bench"
	if cfg.Memory {
		s.fs = vfs.NewMem()
	} else {
		var err error
		if dir, err = env.tempDir("retention"); err != nil {
			return nil, err
		}
		s.dir = dir
	}
	opts := seglog.Options{FS: s.fs, LogConfig: seglog.LogConfig{MaxIndexBytes: 4 << 10}, MaxMappedIndexes: 16, Logger: discardLogger}
	var err error
	s.logs, err = buildRetentionLogs(ctx, env, s.fs, dir, opts, cfg)
	if err != nil {
		return s, err
	}
	s.c = cleaner.New(cleaner.Options{Workers: cfg.Workers, Logger: discardLogger})
	keep := cleaner.DefaultPolicy()
	keep.Retention, keep.FileDeleteDelay = 30*24*time.Hour, 0
	for _, l := range s.logs {
		if err := s.c.Add(cleaner.Wrap(l), keep); err != nil {
			return s, err
		}
	}
	return s, nil
}

// buildRetentionLogs makes the logs; on disk they are then reopened, so
// their sealed segments are not open (as after a broker restart) and the
// workload fits the descriptor limit.
func buildRetentionLogs(ctx context.Context, env Env, fsys vfs.FS, dir string, opts seglog.Options, cfg RetentionConfig) ([]*seglog.Log, error) {
	old := time.Now().Add(-8 * 24 * time.Hour).UnixMilli()
	value := make([]byte, 100)
	recs := make([]record.Record, 10)
	logs := make([]*seglog.Log, 0, cfg.Logs)
	if env.Progress != nil {
		env.Progress.Start("retention setup", int64(cfg.Logs), "logs")
		defer env.Progress.Finish()
	}
	for i := range cfg.Logs {
		if err := ctx.Err(); err != nil {
			return logs, err
		}
		path := filepath.Join(dir, fmt.Sprintf("topic-%d", i))
		l, err := seglog.Open(path, opts)
		if err != nil {
			return logs, err
		}
		for s := range cfg.Segments {
			ts := int64(0) // now
			if s == 0 {
				ts = old
			}
			for j := range recs {
				recs[j] = record.Record{Value: value, Timestamp: ts}
			}
			if _, err := l.Append(recs...); err != nil {
				l.Close()
				return logs, err
			}
			if s < cfg.Segments-1 {
				if err := l.Roll(); err != nil {
					l.Close()
					return logs, err
				}
			}
		}
		if !cfg.Memory {
			if err := l.Close(); err != nil {
				return logs, err
			}
			if l, err = seglog.Open(path, opts); err != nil {
				return logs, err
			}
		}
		logs = append(logs, l)
		if env.Progress != nil {
			env.Progress.Set(int64(i + 1))
		}
	}
	return logs, nil
}

// appendRound times n single-record appends spread over the logs, with
// cleaner passes running back to back meanwhile if withPasses, and
// returns their p99 latency.
func appendRound(ctx context.Context, c *cleaner.Cleaner, logs []*seglog.Log, n int, withPasses bool) (time.Duration, error) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	var passErr error
	if withPasses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := c.RunOnce(ctx); err != nil {
					passErr = err
					return
				}
			}
		}()
	}
	rec := newRecorder()
	value := make([]byte, 100)
	var err error
	for i := range n {
		start := time.Now()
		if _, err = logs[i%len(logs)].Append(record.Record{Value: value}); err != nil {
			break
		}
		rec.record(time.Since(start))
	}
	stop.Store(true)
	wg.Wait()
	if err == nil {
		err = passErr
	}
	return time.Duration(rec.summary().P99 * 1e3), err
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// WriteRetention prints the result as a short table.
func WriteRetention(w io.Writer, r *RetentionResult) error {
	where := "files"
	if r.Memory {
		where = "in memory"
	}
	_, err := fmt.Fprintf(w, `retention: %d logs × %d segments (%s), %d worker(s)
  pass, nothing to delete, looking at every segment  %10.2f ms   (median)
  pass, nothing to delete, nothing changed           %10.2f ms   (median)
  pass, one segment per log                          %10.2f ms   (%d segments deleted)
  append p99, no pass running                        %10.1f µs   (baseline)
  append p99, passes running, retention.ms           %10.1f µs   %.2f× the baseline
  append p99, passes running, retention.bytes        %10.1f µs   %.2f× the baseline
`, r.Logs, r.Segments, where, r.Workers,
		float64(r.LookPass)/1e6, float64(r.QuietPass)/1e6, float64(r.DeletePass)/1e6, r.Deleted,
		float64(r.AppendP99Baseline)/1e3, float64(r.AppendP99DuringPasses)/1e3, r.Ratio,
		float64(r.AppendP99DuringFullPasses)/1e3, r.RatioFull)
	return err
}
