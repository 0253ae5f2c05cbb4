package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// RestartConfig is the workload of seglog bench restart (RunRestart).
type RestartConfig struct {
	Partitions   int   // partitions of the topic (the offsets topic has its default 50)
	StoreBytes   int64 // record value bytes written when the store is built
	RecordSize   int   // value bytes per record
	ProduceBytes int64 // record value bytes produced through the server before each stop
	Rounds       int
}

// RestartResult is bench restart's figures; times in milliseconds, medians
// over the timed rounds.
type RestartResult struct {
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

const restartTopic = "events"

// RunRestart builds a store in dir and times seglog serve's restart on it
// after a SIGKILL against its restart after a clean stop, srv being the
// command that starts seglog serve and client how to talk to it; progress
// gets a line per phase. The store is built like that of issue 26 item 9:
// a topic of cfg.Partitions partitions, two consumer groups' commits and
// the offsets topic. After the rounds every acknowledged record must be in
// the store.
func RunRestart(ctx context.Context, progress io.Writer, dir string, cfg RestartConfig, srv ServeCommand, client RestartClient) (*RestartResult, error) {
	say := func(format string, args ...any) { fmt.Fprintf(progress, "bench restart: "+format+"\n", args...) }
	res := &RestartResult{Workload: "restart", StoreBytes: cfg.StoreBytes, RecordBytes: cfg.RecordSize,
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
		listen, ready, err := restartRound(ctx, srv, client, dir, topics, cfg, perRound, crash)
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
	res.ListenMs, res.BaselineListenMs = Median(res.RoundListenMs), Median(res.RoundBaselineListenMs)
	res.ReadyMs, res.BaselineReadyMs = Median(res.RoundReadyMs), Median(res.RoundBaselineReadyMs)
	res.RecordsPerSec, res.BaselineRecordsPerSec = 1000/res.ListenMs, 1000/res.BaselineListenMs
	res.Ratio, res.TimeRatio, res.ReadyRatio = Median(rates), Median(timeRatios), Median(readyRatios)

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
func buildRestartStore(dir string, cfg RestartConfig) (offsetsParts int, records int64, err error) {
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
func restartRound(ctx context.Context, srv ServeCommand, client RestartClient, dir string, topics map[string]int32, cfg RestartConfig, records int64, crash bool) (listen, ready time.Duration, err error) {
	c, err := StartServe(ctx, srv, dir, 1, false)
	if err != nil {
		return 0, 0, err
	}
	if err := produceRestartRecords(ctx, client, c.Addr, cfg.RecordSize, records, topics[restartTopic]); err != nil {
		c.Kill()
		return 0, 0, err
	}
	if crash {
		c.Kill()
	} else if err := c.StopChecked(); err != nil {
		return 0, 0, err
	}
	// What the last server left dirty is written back now, not during
	// the timed start.
	FlushDirtyPages()
	t0 := time.Now()
	c, err = StartServe(ctx, srv, dir, 1, false)
	if err != nil {
		return 0, 0, err
	}
	listen = time.Since(t0)
	err = client.ListOffsets(ctx, c.Addr, topics)
	ready = time.Since(t0)
	if err != nil {
		c.Kill()
		return 0, 0, err
	}
	return listen, ready, c.StopChecked()
}

// RestartClient is what bench restart asks of a running seglog serve. The
// CLI passes its own Kafka client (cmd/seglog's server connection), so the
// benchmark drives the server as produce and the store commands do.
type RestartClient interface {
	// Produce sends recs to topic through the server at addr, record i to
	// partition parts[i], each acknowledged (acks=all).
	Produce(ctx context.Context, addr, topic string, recs []record.Record, parts []int32) error
	// ListOffsets asks the server at addr for the end offset of every
	// partition of topics, which opens each of them, and fails unless
	// every one is answered without an error.
	ListOffsets(ctx context.Context, addr string, topics map[string]int32) error
}

// produceRestartRecords produces n records through the server at addr,
// round robin over the topic's partitions, each acknowledged.
func produceRestartRecords(ctx context.Context, client RestartClient, addr string, size int, n int64, partitions int32) error {
	if n == 0 {
		return nil
	}
	value := make([]byte, size)
	recs := make([]record.Record, n)
	parts := make([]int32, n)
	for i := range recs {
		recs[i] = record.Record{Value: value}
		parts[i] = int32(i) % partitions
	}
	return client.Produce(ctx, addr, restartTopic, recs, parts)
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

// WriteRestart prints r as seglog bench restart's table.
func WriteRestart(w io.Writer, r *RestartResult) error {
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
