package main

import (
	"encoding/json"
	"math"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/bench"
)

func newBenchRetentionCmd() *cobra.Command {
	var cfg bench.RetentionConfig
	var asJSON bool
	var dir string
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Time retention passes over many logs, and appends while they run",
		Long: `Build --logs logs of --segments segments each (the first segment of every
log eight days old, the rest new), put them under one cleaner, and measure:

  - a pass that finds nothing to delete (retention.ms 30 days): the cost of
    looking at every segment, median of --rounds passes;
  - the pass that deletes one segment from every log (retention.ms 7 days);
  - appends' p99 latency with no pass running (the baseline) and with passes
    running back to back, in alternating rounds, and the ratio.

The logs are files in a temporary directory (below --dir), reopened after
they are built as after a restart; --memory uses the in-memory filesystem.`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Logs, "logs", 1000, "logs under the cleaner")
	fl.IntVar(&cfg.Segments, "segments", 10, "segments per log (at least 2)")
	fl.IntVar(&cfg.Workers, "workers", 1, "cleaner workers")
	fl.IntVar(&cfg.Rounds, "rounds", 5, "timed looking passes, and append rounds of each side")
	fl.IntVar(&cfg.Appends, "appends", 20000, "appends timed per append round")
	fl.BoolVar(&cfg.Memory, "memory", false, "use the in-memory filesystem instead of files")
	fl.StringVar(&dir, "dir", "", "make the run's temporary directory below this one, which must exist (default: the system's temporary directory)")
	fl.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	// The workload reads zero as its default: refused here instead.
	limitFlag(cmd, "logs", 1, math.MaxInt32)
	limitFlag(cmd, "segments", 2, math.MaxInt32)
	limitFlag(cmd, "workers", 1, math.MaxInt32)
	limitFlag(cmd, "rounds", 1, math.MaxInt32)
	limitFlag(cmd, "appends", 1, math.MaxInt32)
	notWith(cmd, "memory", "dir") // nothing is made on disk
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, cancel := benchContext(cmd)
		defer cancel()
		env := bench.Env{Dir: dir}
		if isTerminalFile(cmd.ErrOrStderr()) {
			env.Progress = &barProgress{w: cmd.ErrOrStderr()}
		}
		res, err := bench.RunRetention(ctx, env, cfg)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		}
		return bench.WriteRetention(cmd.OutOrStdout(), res)
	}
	return cmd
}
