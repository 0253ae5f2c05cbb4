package main

import (
	"encoding/json"
	"math"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/store"
)

func newBenchStoreCmd() *cobra.Command {
	var cfg bench.StoreConfig
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Produce by key over a topic against plain Logs, open a store of many partitions, commit for many groups",
		Long: `Three measurements of a store (package store, docs/store.md), in a temporary
directory (below --dir) removed at the end:

  produce  --records keyed records of --value-bytes over a topic of
           --partitions partitions, --batch records per Produce call (one
           batch per partition touched), against the same records appended
           to as many Logs directly, the same batches; the two take turns
           call by call; rates are medians over --rounds rounds, the ratio
           the median of the rounds' ratios (store rate ÷ Logs' rate)
  open     a store of --open-partitions partitions (every --fill-every-th
           holding records), closed cleanly, then opened: the median of
           --rounds opens, and describing every partition after one
  commit   one commit of every partition of the produce topic for each of
           --groups groups (each fsynced, as the offsets topic has
           flush.messages=1), against fsynced appends of a batch of as many
           records, each to the Log standing for its group's offsets
           partition (50 Logs)`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Records, "records", 24000, "keyed records per produce round")
	fl.IntVar(&cfg.ValueBytes, "value-bytes", 1024, "bytes of each record's value")
	fl.IntVar(&cfg.Batch, "batch", 1200, "records per Produce call")
	fl.IntVar(&cfg.Partitions, "partitions", 12, "partitions of the produce topic")
	fl.IntVar(&cfg.Rounds, "rounds", 5, "timed rounds of each side (after a warm-up round each), and timed opens")
	fl.IntVar(&cfg.OpenParts, "open-partitions", 10000, "partitions of the store the open workload opens")
	fl.IntVar(&cfg.FillEvery, "fill-every", 50, "every N-th partition of the open workload holds records")
	fl.IntVar(&cfg.Groups, "groups", 1000, "groups of the commit workload")
	fl.StringVar(&cfg.Dir, "dir", "", "make the run's temporary directory below this one, which must exist (default: the system's temporary directory)")
	fl.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	for _, n := range []string{"records", "batch", "rounds", "fill-every", "groups"} {
		limitFlag(cmd, n, 1, math.MaxInt32)
	}
	limitFlag(cmd, "value-bytes", 1, 512<<10)
	limitFlag(cmd, "partitions", 1, store.MaxPartitions)
	limitFlag(cmd, "open-partitions", 1, store.MaxPartitions)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, cancel := benchContext(cmd)
		defer cancel()
		res, err := bench.RunStore(ctx, cfg)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		}
		return bench.WriteStore(cmd.OutOrStdout(), res)
	}
	return cmd
}
