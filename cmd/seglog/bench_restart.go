package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// seglog bench restart: the flags and the output; the workload is
// bench.RunRestart, which talks to the server through restartClient.

func newBenchRestartCmd() *cobra.Command {
	var cfg bench.RestartConfig
	var asJSON bool
	var dir string
	cmd := &cobra.Command{
		Use:   "restart",
		Short: "Time seglog serve's restart after a SIGKILL against its restart after a clean stop",
		Long: `Build a store like that of issue 26 item 9 in a temporary directory (below
--dir): a topic of --partitions partitions holding --store-bytes of
records of --record-size bytes, two consumer groups' commits, and the
offsets topic's 50 partitions. Then, in rounds, for each side:

  start seglog serve (a child process, this binary), produce
  --produce-bytes through it with kgo (acks=all), then stop it: with
  SIGKILL (the measured side), or SIGINT and a clean shutdown (the
  baseline); then start it again and time
    listening  until it prints "listening on" (the store opened, the
               groups' commits replayed from the offsets topic, whose
               partitions are recovered there after a crash);
    ready      until a ListOffsets of every partition is answered (every
               partition opened: the others are recovered on first use);
  and stop it cleanly for the next round.

A real SIGKILL of a real process, not an unclean close in memory: what is
measured is what a crashed broker costs, page cache, process start and
preallocated files included. Every side has a warm-up round, then the
sides alternate for --rounds rounds; the figures are medians and the
ratios the medians of each round's ratio. The machine's load average is
printed: on a shared machine the times move with it. Ctrl-C stops the
round under way (the child is killed) and removes the directory.`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Partitions, "partitions", 6, "partitions of the topic")
	fl.Int64Var(&cfg.StoreBytes, "store-bytes", 2_000_000, "record value bytes in the store before the first round")
	fl.IntVar(&cfg.RecordSize, "record-size", 100, "value bytes per record")
	fl.Int64Var(&cfg.ProduceBytes, "produce-bytes", 256<<10, "record value bytes produced through the server before each stop (0: none)")
	fl.IntVar(&cfg.Rounds, "rounds", 5, "timed rounds of each side (after one warm-up round each)")
	fl.StringVar(&dir, "dir", "", "make the run's temporary directory below this one, which must exist (default: the system's temporary directory)")
	fl.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	limitFlag(cmd, "partitions", 1, math.MaxInt32)
	limitFlag(cmd, "record-size", 1, math.MaxInt32)
	limitFlag(cmd, "store-bytes", 0, math.MaxInt64)
	limitFlag(cmd, "produce-bytes", 0, math.MaxInt64)
	limitFlag(cmd, "rounds", 1, math.MaxInt32)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, cancel := benchContext(cmd)
		defer cancel()
		tmp, err := bench.MakeRunDir(dir, "restart")
		if err != nil {
			return err
		}
		defer vfs.RemoveAll(vfs.Default, tmp)
		srv, err := serveCommand()
		if err != nil {
			return err
		}
		res, err := bench.RunRestart(ctx, cmd.ErrOrStderr(), filepath.Join(tmp, "store"), cfg, srv, restartClient{})
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		}
		return bench.WriteRestart(cmd.OutOrStdout(), res)
	}
	return cmd
}

// restartClient is bench restart's bench.RestartClient: the CLI's own
// connection to a server (serverConn), as produce and the store commands
// use it.
type restartClient struct{}

// Produce sends recs to topic through the server at addr, record i to
// partition parts[i], each acknowledged.
func (restartClient) Produce(ctx context.Context, addr, topic string, recs []record.Record, parts []int32) error {
	c, err := dialServer(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = produceViaServer(ctx, c, topic, recs, parts)
	return err
}

// ListOffsets asks the server at addr for the end offset of every
// partition of topics, which opens each of them.
func (restartClient) ListOffsets(ctx context.Context, addr string, topics map[string]int32) error {
	c, err := dialServer(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	for name, n := range topics {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = name
		for p := range n {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	r, err := c.request(ctx, req)
	if err != nil {
		return fmt.Errorf("ListOffsets: %w", err)
	}
	resp := r.(*kmsg.ListOffsetsResponse)
	answered := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return fmt.Errorf("ListOffsets of %s-%d: error code %d", t.Topic, p.Partition, p.ErrorCode)
			}
			answered++
		}
	}
	want := 0
	for _, n := range topics {
		want += int(n)
	}
	if answered != want {
		return fmt.Errorf("ListOffsets answered %d partitions of %d", answered, want)
	}
	return nil
}
