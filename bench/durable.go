package bench

import (
	"context"
	"time"

	"github.com/seglog/seglog"
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
	var out []*Result
	var one float64
	for _, w := range levels {
		wc := WriteConfig{
			Options: cfg.Options, RecordSize: cfg.RecordSize, Batch: cfg.Batch,
			Duration: cfg.Duration, Writers: w, Rounds: cfg.Rounds,
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
