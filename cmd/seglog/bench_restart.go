package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// restartBenchConfig is the workload of seglog bench restart.
type restartBenchConfig struct {
	Partitions   int   // partitions of the topic (the offsets topic has its default 50)
	StoreBytes   int64 // record value bytes written when the store is built
	RecordSize   int   // value bytes per record
	ProduceBytes int64 // record value bytes produced through the server before each stop
	Rounds       int
}

// restartBenchResult is the run's figures; times in milliseconds, medians
// over the timed rounds.
type restartBenchResult struct {
	Workload string `json:"workload"` // "restart"
	// Partitions counts every partition of the store, the offsets topic's
	// included.
	Partitions int `json:"partitions"`
	// TopicPartitions is the topic's share of them.
	TopicPartitions int   `json:"topic_partitions"`
	StoreBytes      int64 `json:"store_bytes"`
	RecordBytes     int   `json:"record_bytes"`
	ProduceBytes    int64 `json:"produced_bytes_per_round"`
	// Records is how many restarts of each side were timed.
	Records int `json:"records"`
	// ListenMs is the time from starting seglog serve to its "listening
	// on" line after a SIGKILL; BaselineListenMs the same after a clean
	// stop (SIGINT).
	ListenMs         float64 `json:"listen_ms"`
	BaselineListenMs float64 `json:"baseline_listen_ms"`
	// ReadyMs is the time from the start until a ListOffsets of every
	// partition is answered: every partition opened, so recovered.
	ReadyMs         float64 `json:"ready_ms"`
	BaselineReadyMs float64 `json:"baseline_ready_ms"`
	// RecordsPerSec and BaselineRecordsPerSec are restarts (to listening)
	// per second, and Ratio their ratio (after a crash ÷ after a clean
	// stop, median of the rounds' ratios): 1 is as fast, 0.1 ten times
	// slower. TimeRatio is its inverse for reading: listen time after a
	// crash ÷ after a clean stop; ReadyRatio the same for ReadyMs.
	RecordsPerSec         float64 `json:"records_per_sec"`
	BaselineRecordsPerSec float64 `json:"baseline_records_per_sec"`
	Ratio                 float64 `json:"ratio"`
	TimeRatio             float64 `json:"time_ratio"`
	ReadyRatio            float64 `json:"ready_time_ratio"`
	// RoundListenMs and friends are the timed rounds' figures.
	RoundListenMs         []float64 `json:"round_listen_ms"`
	RoundBaselineListenMs []float64 `json:"round_baseline_listen_ms"`
	RoundReadyMs          []float64 `json:"round_ready_ms"`
	RoundBaselineReadyMs  []float64 `json:"round_baseline_ready_ms"`
	// LoadBefore and LoadAfter are the machine's 1-minute load average
	// when the run started and ended: the figures of a busy machine are
	// slower and noisier.
	LoadBefore float64 `json:"load_avg_before"`
	LoadAfter  float64 `json:"load_avg_after"`
	// Verified is how many records the store held at the end, every one
	// produced and acknowledged (SIGKILL keeps the page cache).
	Verified int64  `json:"verified_records"`
	Baseline string `json:"baseline"`
}

func newBenchRestartCmd() *cobra.Command {
	var cfg restartBenchConfig
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
		defer removeAll(vfs.Default, tmp)
		res, err := runRestartBench(ctx, cmd.ErrOrStderr(), filepath.Join(tmp, "store"), cfg)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		}
		return writeRestartBench(cmd.OutOrStdout(), res)
	}
	return cmd
}

const restartTopic = "events"

func runRestartBench(ctx context.Context, progress io.Writer, dir string, cfg restartBenchConfig) (*restartBenchResult, error) {
	say := func(format string, args ...any) { fmt.Fprintf(progress, "bench restart: "+format+"\n", args...) }
	res := &restartBenchResult{Workload: "restart", StoreBytes: cfg.StoreBytes, RecordBytes: cfg.RecordSize,
		ProduceBytes: cfg.ProduceBytes, LoadBefore: loadAverage(),
		Baseline: "the same restart after a clean stop (SIGINT) instead of a SIGKILL"}
	say("building the store")
	offsetsParts, records, err := buildRestartStore(dir, cfg)
	if err != nil {
		return nil, err
	}
	res.Partitions, res.TopicPartitions = cfg.Partitions+offsetsParts, cfg.Partitions
	perRound := cfg.ProduceBytes / int64(cfg.RecordSize)
	topics := map[string]int32{restartTopic: int32(cfg.Partitions), store.OffsetsTopic: int32(offsetsParts)}
	type times struct{ listen, ready time.Duration }
	round := func(crash bool) (times, error) {
		if err := ctx.Err(); err != nil {
			return times{}, err
		}
		listen, ready, err := restartRound(ctx, dir, topics, cfg, perRound, crash)
		records += perRound
		return times{listen, ready}, err
	}
	var crashed, clean []times
	for i := -1; i < cfg.Rounds; i++ {
		order := []bool{true, false}
		if i%2 != 0 {
			order = []bool{false, true}
		}
		for _, crash := range order {
			if i < 0 {
				say("warm-up round, after %s", stopName(crash))
			} else {
				say("round %d of %d, after %s", i+1, cfg.Rounds, stopName(crash))
			}
			t, err := round(crash)
			if err != nil {
				return nil, err
			}
			switch {
			case i < 0:
			case crash:
				crashed = append(crashed, t)
			default:
				clean = append(clean, t)
			}
		}
	}
	res.LoadAfter = loadAverage()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var rates, timeRatios, readyRatios []float64
	for i := range crashed {
		res.RoundListenMs = append(res.RoundListenMs, ms(crashed[i].listen))
		res.RoundBaselineListenMs = append(res.RoundBaselineListenMs, ms(clean[i].listen))
		res.RoundReadyMs = append(res.RoundReadyMs, ms(crashed[i].ready))
		res.RoundBaselineReadyMs = append(res.RoundBaselineReadyMs, ms(clean[i].ready))
		rates = append(rates, clean[i].listen.Seconds()/crashed[i].listen.Seconds())
		timeRatios = append(timeRatios, crashed[i].listen.Seconds()/clean[i].listen.Seconds())
		readyRatios = append(readyRatios, crashed[i].ready.Seconds()/clean[i].ready.Seconds())
	}
	res.Records = len(crashed)
	res.ListenMs, res.BaselineListenMs = medianOf(res.RoundListenMs), medianOf(res.RoundBaselineListenMs)
	res.ReadyMs, res.BaselineReadyMs = medianOf(res.RoundReadyMs), medianOf(res.RoundBaselineReadyMs)
	res.RecordsPerSec, res.BaselineRecordsPerSec = 1000/res.ListenMs, 1000/res.BaselineListenMs
	res.Ratio, res.TimeRatio, res.ReadyRatio = medianOf(rates), medianOf(timeRatios), medianOf(readyRatios)

	say("checking the store")
	if res.Verified, err = countRecords(dir, topics[restartTopic]); err != nil {
		return nil, err
	}
	if res.Verified != records {
		return nil, fmt.Errorf("bench restart: the store holds %d records of %s, %d were acknowledged", res.Verified, restartTopic, records)
	}
	return res, nil
}

// quietLogger keeps the store's recovery messages out of the output.
var quietLogger = slog.New(slog.DiscardHandler)

func stopName(crash bool) string {
	if crash {
		return "SIGKILL"
	}
	return "a clean stop"
}

// buildRestartStore makes the store, closed cleanly, and returns the
// offsets topic's partition count and the records written.
func buildRestartStore(dir string, cfg restartBenchConfig) (offsetsParts int, records int64, err error) {
	st, err := store.Open(dir, store.Options{Logger: quietLogger})
	if err != nil {
		return 0, 0, err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	if err := st.CreateTopic(restartTopic, cfg.Partitions, store.DefaultTopicConfig()); err != nil {
		return 0, 0, err
	}
	value := make([]byte, cfg.RecordSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	const batch = 100
	recs := make([]record.Record, batch)
	for i := range recs {
		recs[i] = record.Record{Value: value}
	}
	n := cfg.StoreBytes / int64(cfg.RecordSize)
	for p := int32(0); records < n; p = (p + 1) % int32(cfg.Partitions) {
		k := min(int64(batch), n-records)
		if _, err := st.ProduceTo(restartTopic, p, recs[:k]...); err != nil {
			return 0, 0, err
		}
		records += k
	}
	for g, every := range []int32{1, 2} {
		offsets := make(map[int32]int64)
		for p := int32(0); p < int32(cfg.Partitions); p += every {
			l, release, err := st.AcquireLog(restartTopic, p)
			if err != nil {
				return 0, 0, err
			}
			offsets[p] = l.EndOffset() / 2
			release()
		}
		if err := st.Commit(fmt.Sprintf("bench-restart-%d", g), restartTopic, offsets); err != nil {
			return 0, 0, err
		}
	}
	n32, err := st.Partitions(store.OffsetsTopic)
	return n32, records, err
}

// restartRound runs one round: start, produce, stop (SIGKILL if crash),
// then the timed start, and a clean stop.
func restartRound(ctx context.Context, dir string, topics map[string]int32, cfg restartBenchConfig, records int64, crash bool) (listen, ready time.Duration, err error) {
	c, err := startServeChild(ctx, dir, 1, false)
	if err != nil {
		return 0, 0, err
	}
	if err := produceRestartRecords(ctx, c.addr, cfg.RecordSize, records, topics[restartTopic]); err != nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		return 0, 0, err
	}
	if crash {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	} else if err := c.stopChecked(); err != nil {
		return 0, 0, err
	}
	// What the last server left dirty is written back now, not during
	// the timed start.
	flushDirtyPages()
	t0 := time.Now()
	c, err = startServeChild(ctx, dir, 1, false)
	if err != nil {
		return 0, 0, err
	}
	listen = time.Since(t0)
	err = listAllOffsets(ctx, c.addr, topics)
	ready = time.Since(t0)
	if err != nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		return 0, 0, err
	}
	return listen, ready, c.stopChecked()
}

// stopChecked stops the child with SIGINT and fails unless it exited 0
// (its store closed cleanly).
func (c *serveChild) stopChecked() error {
	c.cmd.Process.Signal(os.Interrupt)
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("seglog serve did not stop cleanly: %w", err)
	}
	return nil
}

// produceRestartRecords produces n records through the server at addr,
// round robin over the topic's partitions, each acknowledged.
func produceRestartRecords(ctx context.Context, addr string, size int, n int64, partitions int32) error {
	if n == 0 {
		return nil
	}
	c, err := dialServer(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	value := make([]byte, size)
	recs := make([]record.Record, n)
	parts := make([]int32, n)
	for i := range recs {
		recs[i] = record.Record{Value: value}
		parts[i] = int32(i) % partitions
	}
	_, err = produceViaServer(ctx, c, restartTopic, recs, parts)
	return err
}

// listAllOffsets asks the server at addr for the end offset of every
// partition of topics, which opens each of them.
func listAllOffsets(ctx context.Context, addr string, topics map[string]int32) error {
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

// countRecords opens the store read-only and counts the topic's records.
func countRecords(dir string, partitions int32) (int64, error) {
	st, err := store.Open(dir, store.Options{ReadOnly: true, Logger: quietLogger})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	var total int64
	for p := range partitions {
		l, release, err := st.AcquireLog(restartTopic, p)
		if err != nil {
			return 0, err
		}
		for _, err := range l.Records(l.StartOffset()) {
			if err != nil {
				release()
				return 0, err
			}
			total++
		}
		release()
	}
	return total, nil
}

// loadAverage is the machine's 1-minute load average, 0 if unknown.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg") //vfs:allow a /proc file says size 0, so ReadFileLimit reads nothing
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func writeRestartBench(w io.Writer, r *restartBenchResult) error {
	fmt.Fprintf(w, "seglog serve restarted on a store of %d partitions (%d of %s, %d of %s), %.1f MB of %d-byte records,\n",
		r.Partitions, r.TopicPartitions, restartTopic, r.Partitions-r.TopicPartitions, store.OffsetsTopic, float64(r.StoreBytes)/1e6, r.RecordBytes)
	fmt.Fprintf(w, "%d KiB produced before each stop; medians of %d rounds; load average %.1f at the start, %.1f at the end\n\n",
		r.ProduceBytes>>10, r.Records, r.LoadBefore, r.LoadAfter)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tlistening (ms)\tevery partition served (ms)\t")
	fmt.Fprintf(tw, "after SIGKILL\t%.1f\t%.1f\t\n", r.ListenMs, r.ReadyMs)
	fmt.Fprintf(tw, "after a clean stop\t%.1f\t%.1f\t\n", r.BaselineListenMs, r.BaselineReadyMs)
	fmt.Fprintf(tw, "SIGKILL ÷ clean stop\t%.2f\t%.2f\t\n", r.TimeRatio, r.ReadyRatio)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d records read back from the store at the end, as many as were acknowledged.\n", r.Verified)
	return err
}
