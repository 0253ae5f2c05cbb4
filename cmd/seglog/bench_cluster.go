//go:build benchextras

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/bench/benchcluster"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// seglog bench cluster: the flags and the output; the workload is package
// bench/benchcluster, which links franz-go's kgo, so this file is one of
// the bench extras (bench_extras.go), like bench serve.

func newBenchClusterCmd() *cobra.Command {
	var cfg benchcluster.Config
	var asJSON, keep bool
	var dir string
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Three seglog serve nodes, replication factor 3, against one node: produce, consume, failover",
		Long: `Measure a replicated cluster with a real client, against a single node with
the same workload in the same run:

  - 1 node: seglog serve DIR, topics of replication factor 1;
  - 1 node, synced: the same node, topics of flush.messages=1 (each batch
    fsynced before it is acknowledged, as each replica of the cluster
    fsyncs what it acknowledges; the first leaves writeback to the
    kernel, Kafka's default);
  - 3 nodes: three seglog serve processes started with
      seglog serve DIR --node-id N --listen HOST:KPORT --raft-listen HOST:RPORT \
          --voters 1@HOST:RPORT1,2@HOST:RPORT2,3@HOST:RPORT3
    on free loopback ports, topics of replication factor 3.

Each round, each system gets a new topic of --partitions partitions, a kgo
producer (idempotent, acks=all, no compression) writes --records records
of --record-size bytes to it as fast as acknowledgments come, and a kgo
consumer reads them back from the partitions' leaders. The systems
take turns, each round starting with the next (--rounds); the rates are
medians and the ratios (3 nodes / 1 node, and 3 nodes / 1 node synced)
medians of the rounds' ratios. The server
processes' CPU time (every node's) is read from /proc. A record not
acknowledged within a minute fails the run, with the end of each node's
log (a system that cannot store, say on a full disk, does not hang it).

Then the failover: a producer writes small records with acks=all to a
topic replicated on the three nodes (--failover-rate records a second),
and --kills times the leader of a partition is killed with SIGKILL; the
time from the kill to the first record acknowledged on that partition is
measured (and to the first Metadata naming a new leader), the killed node
is started again with the same command, and the next kill waits until
every replica is back in sync. At the end every record acknowledged is
read back from the leaders and checked: each exactly once, at the offset
its acknowledgment gave. A broken rule fails the run (exit status 1)
after the figures are printed.

The servers run as child processes (this binary's serve command), their
stores in a temporary directory below --dir.`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Records, "records", 100_000, "records produced and consumed per system per round")
	fl.IntVar(&cfg.RecordSize, "record-size", 1024, "value bytes per record")
	fl.IntVar(&cfg.Partitions, "partitions", 6, "partitions of each topic")
	fl.IntVar(&cfg.Rounds, "rounds", 3, "rounds of each system, alternating")
	fl.IntVar(&cfg.Kills, "kills", 5, "partition leaders killed in the failover phase (0: none)")
	fl.IntVar(&cfg.FailoverRate, "failover-rate", 1000, "records a second the failover phase's producer offers (0: as fast as acknowledged)")
	fl.DurationVar(&cfg.MetadataMinAge, "metadata-min-age", 100*time.Millisecond, "the clients' least time between metadata refreshes (kgo's MetadataMinAge; kgo's default is 5s, the Java client refreshes after its retry.backoff.ms of 100ms)")
	fl.StringVar(&dir, "dir", "", "make the run's temporary directory below this one, which must exist (default: the system's temporary directory)")
	fl.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	fl.BoolVar(&keep, "keep", false, "keep the nodes' directories when the run fails, and say where (to look into a failure of the cluster)")
	for _, n := range []string{"record-size", "rounds"} {
		limitFlag(cmd, n, 1, math.MaxInt32)
	}
	for _, n := range []string{"kills", "failover-rate"} {
		limitFlag(cmd, n, 0, math.MaxInt32)
	}
	limitDuration(cmd, "metadata-min-age", time.Millisecond, time.Hour)
	limitFlag(cmd, "partitions", 1, store.MaxPartitions)
	checkedBy(cmd, "bench cluster", "records")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if cfg.Records < cfg.Partitions {
			return usageErrorf(cmd, "invalid --records %d: must be at least --partitions %d", cfg.Records, cfg.Partitions)
		}
		ctx, cancel := benchContext(cmd)
		defer cancel()
		tmp, err := bench.MakeRunDir(dir, "cluster")
		if err != nil {
			return err
		}
		sc, err := serveCommand()
		if err != nil {
			vfs.RemoveAll(vfs.Default, tmp)
			return err
		}
		res, err := benchcluster.Run(ctx, cmd.ErrOrStderr(), tmp, cfg, sc)
		if err != nil && keep {
			fmt.Fprintf(cmd.ErrOrStderr(), "bench cluster: the run failed; its directories are kept in %s\n", tmp)
		} else {
			vfs.RemoveAll(vfs.Default, tmp)
		}
		if res == nil {
			return err
		}
		if asJSON {
			if werr := json.NewEncoder(cmd.OutOrStdout()).Encode(res); werr != nil {
				return werr
			}
		} else if werr := benchcluster.Write(cmd.OutOrStdout(), res); werr != nil {
			return werr
		}
		return err
	}
	return cmd
}
