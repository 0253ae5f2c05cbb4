//go:build benchextras

package main

import (
	"encoding/json"
	"math"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/bench/benchserve"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// seglog bench serve: the flags and the output; the workload is package
// bench/benchserve, which links franz-go's kgo and kfake, so this file is
// one of the bench extras (bench_extras.go).

func newBenchServeCmd() *cobra.Command {
	var cfg benchserve.Config
	var asJSON bool
	var dir string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Produce and consume through seglog serve with kgo, against direct append and kfake",
		Long: `Measure the Kafka-protocol server with a real client, in one run:

  - direct: the store's own append rate (ProduceTo, --batch records per
    batch, one goroutine per partition), no network: the ceiling;
  - seglog: a kgo producer (idempotent, acks=all, no compression) writes
    --records records of --record-size bytes to --partitions partitions of
    a seglog serve process over loopback as fast as it can; then
    --latency-records single records are produced one at a time
    (ProduceSync) for the p50/p99 produce latency; then kgo consumers read
    every record back --consume-rounds times; then a raw fetcher (hand-made
    Fetch requests on one connection, batches counted, not decoded) reads
    everything --consume-rounds times, to show what the server delivers when
    the client does not limit; then a raw producer (hand-made Produce
    requests, acks=all, carrying batches of --batch records built once, on 4
    pipelined connections) writes --records records to another topic, to
    show the server's produce rate when the client does not limit. The
    server's CPU time during each phase is read from /proc, the clients'
    (and the direct append's) from getrusage;
  - copy: the same consumes from a server started with --fetch-copy (fetched
    records read and written, as over TLS, instead of sendfile);
  - kfake: franz-go's in-process broker serving the same workload.

The server runs as a child process (this binary's serve command) with its
store in a temporary directory below --dir.`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Records, "records", 200_000, "records produced and consumed per system")
	fl.IntVar(&cfg.RecordSize, "record-size", 1024, "value bytes per record")
	fl.IntVar(&cfg.Partitions, "partitions", 12, "partitions of the topic")
	fl.IntVar(&cfg.Batch, "batch", 64, "records per batch for the direct-append baseline")
	fl.IntVar(&cfg.Latency, "latency-records", 1000, "single-record produces timed for the latency figures")
	fl.IntVar(&cfg.ConsumeRounds, "consume-rounds", 5, "times every record is consumed")
	fl.IntVar(&cfg.Consumers, "consumers", 2, "kgo consumers sharing the partitions in each round, reading at the same time")
	fl.StringVar(&dir, "dir", "", "make the run's temporary directory below this one, which must exist (default: the system's temporary directory)")
	fl.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	for _, n := range []string{"record-size", "batch", "latency-records", "consume-rounds", "consumers"} {
		limitFlag(cmd, n, 1, math.MaxInt32)
	}
	limitFlag(cmd, "partitions", 1, store.MaxPartitions)
	checkedBy(cmd, "bench serve", "records")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if cfg.Records < cfg.Partitions {
			return usageErrorf(cmd, "invalid --records %d: must be at least --partitions %d", cfg.Records, cfg.Partitions)
		}
		ctx, cancel := benchContext(cmd)
		defer cancel()
		tmp, err := bench.MakeRunDir(dir, "serve")
		if err != nil {
			return err
		}
		defer vfs.RemoveAll(vfs.Default, tmp)
		sc, err := serveCommand()
		if err != nil {
			return err
		}
		res, err := benchserve.Run(ctx, cmd.ErrOrStderr(), tmp, cfg, sc)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		}
		return benchserve.Write(cmd.OutOrStdout(), res)
	}
	return cmd
}
