package main

import (
	"encoding/json"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/bench"
)

func newBenchCompactCmd() *cobra.Command {
	var cfg bench.CompactConfig
	var keys string
	var asJSON bool
	var dir string
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Time a compaction round over an uncompressed log, with its peak heap",
		Long: `For each --keys count, write a log of --records uncompressed records whose
keys are drawn at random among that many, seal it, and measure:

  - a plain sequential read of its .log files (the baseline, page cache warm);
  - one compaction round over all of it: input MB/s, the ratio to the
    baseline, the process's CPU seconds during the round and the input per
    CPU second (what the round costs, whatever else shares the machine),
    and the peak heap in use above what it was before the offset map (of
    --map-bytes) was allocated;
  - single-record appends' p99 latency with no round running (the
    baseline: --idle before the round and as long again after it) and
    while the round runs, and the ratio.

The log is in a temporary directory below --dir, removed at the end.`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&keys, "keys", "10000,1000000", "comma-separated distinct key counts, one run each")
	fl.IntVar(&cfg.Records, "records", 1_000_000, "records in the log")
	fl.IntVar(&cfg.ValueBytes, "value-bytes", 100, "value size")
	fl.IntVar(&cfg.BatchRecords, "batch", 100, "records per batch")
	fl.Int64Var(&cfg.SegmentBytes, "segment-bytes", 64<<20, "segment.bytes of the log")
	fl.IntVar(&cfg.MapBytes, "map-bytes", 128<<20, "offset map size (log.cleaner.dedupe.buffer.size)")
	fl.DurationVar(&cfg.Idle, "idle", time.Second, "least time appends are measured with no round running, before the round and after it")
	fl.StringVar(&dir, "dir", "", "make the run's temporary directory below this one, which must exist (default: the system's temporary directory)")
	fl.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	// The workload reads a zero or negative value as its default: each
	// is refused here instead.
	limitFlag(cmd, "records", 1, math.MaxInt32)
	limitFlag(cmd, "value-bytes", 1, math.MaxInt32)
	limitFlag(cmd, "batch", 1, math.MaxInt32)
	limitFlag(cmd, "map-bytes", 1, math.MaxInt)
	limitDuration(cmd, "idle", 1, math.MaxInt64)
	checkedBy(cmd, "seglog.Options.Validate", "segment-bytes")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var err error
		if cfg.Keys, err = bench.ParseKeys(keys); err != nil {
			return usageErrorf(cmd, "invalid --keys %q: %v", keys, err)
		}
		if err := (seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: cfg.SegmentBytes}}).Validate(); err != nil || cfg.SegmentBytes <= 0 {
			return usageErrorf(cmd, "invalid --segment-bytes %d: a log's segment.bytes (%v)", cfg.SegmentBytes, err)
		}
		ctx, cancel := benchContext(cmd)
		defer cancel()
		res, err := bench.RunCompact(ctx, bench.Env{Dir: dir}, cfg)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		}
		return bench.WriteCompact(cmd.OutOrStdout(), res)
	}
	return cmd
}
