package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/vfs"
)

// DurableConfig is the durable workload: Sync=always appends of Batch
// records of RecordSize bytes by 1, 2, 4, … MaxWriters concurrent writers,
// each level run for Duration per side (split over Rounds). It shows group
// commit: with N writers waiting, one fdatasync acknowledges all of them.
type DurableConfig struct {
	// Options configures the Log; Sync is forced to SyncAlways.
	Options seglog.Options
	// RecordSize and Batch shape each append. Defaults 1024 and 1.
	RecordSize, Batch int
	// MaxWriters is the last writer count of the sweep. Default 64.
	MaxWriters int
	// Writers, when set, replaces the doubling sweep with these counts.
	Writers []int
	// Duration is each level's timed time per side. Default 1.5 s.
	Duration time.Duration
	// Rounds is the number of timed rounds of each side per level.
	// Default 3.
	Rounds int
	// Floor is the baseline of each level (WriteConfig.Floor).
	Floor string
	// Paired replaces the sweep with one result: MaxWriters writers
	// against seglog's own single writer, in alternating rounds, so the
	// ratio is the group-commit speedup measured under the same machine
	// conditions (RunPaired).
	Paired bool
}

// RunDurable runs the sweep and returns one Result per writer count, each
// with its Speedup over the 1-writer level (when the sweep has one).
func RunDurable(ctx context.Context, env Env, cfg DurableConfig) ([]*Result, error) {
	if cfg.Batch == 0 {
		cfg.Batch = 1
	}
	if cfg.MaxWriters == 0 {
		cfg.MaxWriters = 64
	}
	if cfg.Duration == 0 {
		cfg.Duration = 1500 * time.Millisecond
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = 3
	}
	if cfg.MaxWriters < 0 {
		return nil, invalid("max writers %d", cfg.MaxWriters)
	}
	levels := cfg.Writers
	for _, w := range levels {
		if w < 1 {
			return nil, invalid("writers %d", w)
		}
	}
	if len(levels) == 0 {
		for w := 1; w <= cfg.MaxWriters; w *= 2 {
			levels = append(levels, w)
		}
		if levels[len(levels)-1] != cfg.MaxWriters {
			levels = append(levels, cfg.MaxWriters)
		}
	}
	cfg.Options.Sync = seglog.SyncAlways
	if cfg.Paired {
		res, err := runPaired(ctx, env, cfg)
		if err != nil {
			return nil, err
		}
		return []*Result{res}, nil
	}
	var out []*Result
	var one float64
	for _, w := range levels {
		wc := WriteConfig{
			Options: cfg.Options, RecordSize: cfg.RecordSize, Batch: cfg.Batch,
			Duration: cfg.Duration, Writers: w, Rounds: cfg.Rounds, Floor: cfg.Floor,
		}
		if err := wc.setDefaults(); err != nil {
			return nil, err
		}
		r := newRunner(env)
		res, err := runWrite(ctx, r, env, wc, "durable")
		if err != nil {
			return nil, err
		}
		res.Samples = r.takeSamples()
		if w == 1 {
			one = res.RecordsPerSec
		}
		if one > 0 {
			res.Speedup = res.RecordsPerSec / one
		}
		out = append(out, res)
	}
	return out, nil
}

// runPaired runs MaxWriters SyncAlways writers against one, both through
// the engine, in alternating rounds of Duration/Rounds each: the result's
// Ratio (and Speedup) is the many-writer rate over the single-writer rate
// of the neighbouring round, and its baseline columns are the single
// writer's.
func runPaired(ctx context.Context, env Env, cfg DurableConfig) (*Result, error) {
	many := WriteConfig{Options: cfg.Options, RecordSize: cfg.RecordSize, Batch: cfg.Batch,
		Duration: cfg.Duration, Writers: cfg.MaxWriters, Rounds: cfg.Rounds}
	if err := many.setDefaults(); err != nil {
		return nil, err
	}
	many.stop = ctx.Done() // as runWrite does: Ctrl-C ends the round under way
	one := many
	one.Writers = 1
	dir, err := env.tempDir("durable")
	if err != nil {
		return nil, err
	}
	defer vfs.RemoveAll(fs, dir)
	pool := valuePool(many.RecordSize, 1)
	curs := make([]*valueCursor, many.Writers)
	batches := make([][][]byte, many.Writers)
	for w := range many.Writers {
		curs[w] = &valueCursor{pool: pool, size: many.RecordSize, pos: (w * 7919 * (many.RecordSize + 1)) % poolBytes}
	}
	res := &Result{
		Workload: "durable", Mode: "append", RecordBytes: many.RecordSize, Batch: many.Batch,
		Writers: many.Writers, Sync: many.Options.Sync.String(), Compression: many.Options.Compression.String(),
		Baseline: "seglog itself with 1 writer, in the rounds between",
	}
	r := newRunner(env)
	r.begin(fmt.Sprintf("durable %d B × %d, %d writers against 1", many.RecordSize, many.Batch, many.Writers),
		2*int64(many.Rounds+1)*(many.Duration/time.Duration(many.Rounds)).Milliseconds(), true)
	defer r.end()
	manyLat, oneLat := newRecorder(), newRecorder()
	run := func(c WriteConfig, lat *recorder, name string) func(int) (roundStat, error) {
		return func(round int) (roundStat, error) {
			st, v, err := engineWriteRound(r, c, filepath.Join(dir, fmt.Sprintf("%s-%d", name, round+1)), curs[:c.Writers], batches[:c.Writers], lat, round >= 0)
			res.Verified += v
			return st, err
		}
	}
	a, b, err := r.interleave(ctx, many.Rounds, run(many, manyLat, "many"), run(one, oneLat, "one"))
	if err != nil {
		return nil, err
	}
	summarize(res, a, b)
	res.Latency, res.BaselineLatency = manyLat.summary(), oneLat.summary()
	res.Samples = r.takeSamples()
	res.Speedup = res.Ratio
	return res, nil
}
