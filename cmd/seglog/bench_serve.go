//go:build benchextras

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// serveBenchConfig is the workload of seglog bench serve.
type serveBenchConfig struct {
	Records    int
	RecordSize int
	Partitions int
	Batch      int // records per batch of the direct-append baseline
	// Latency is how many single-record ProduceSync calls the latency
	// figures come from.
	Latency int
	// ConsumeRounds is how many times the records are consumed.
	ConsumeRounds int
	// Consumers is how many kgo clients share each round's partitions.
	Consumers int
}

// serveBenchSide is one system's result.
type serveBenchSide struct {
	Name           string
	ProduceRecsSec float64
	ProduceMBs     float64
	P50Ms, P99Ms   float64 // produce latency, per record
	ConsumeMBs     float64
	// FetchCPUSecPerGB and ProduceCPUSecPerGB are the server process's
	// CPU time (user+system) per GB consumed or produced, for seglog serve
	// only (its own process); for the direct append, ProduceCPUSecPerGB
	// is this process's, which does the appending.
	FetchCPUSecPerGB   float64 `json:",omitempty"`
	ProduceCPUSecPerGB float64 `json:",omitempty"`
	// ClientCPUSecPerGB is the kgo producer's own CPU time per GB (this
	// process, seglog serve only): with the server's, what a produce
	// costs the machine, against the cores it has.
	ClientCPUSecPerGB float64 `json:",omitempty"`
	// ConsumeClientCPUSecPerGB is the kgo consumers' own CPU per GB.
	ConsumeClientCPUSecPerGB float64 `json:",omitempty"`
	// RawFetchMBs is the rate of hand-made Fetch requests whose batches
	// are counted, not decoded (seglog serve only), and RawFetchCPUSecPerGB
	// the server's CPU per GB for them: the server's capacity when the
	// client is not what limits.
	RawFetchMBs         float64 `json:",omitempty"`
	RawFetchCPUSecPerGB float64 `json:",omitempty"`
	// RawProduceRecsSec is the rate of hand-made Produce requests carrying
	// batches built once (seglog serve only), and RawProduceCPUSecPerGB
	// the server's CPU per GB for them: the server's produce capacity when
	// the client is not what limits.
	RawProduceRecsSec     float64 `json:",omitempty"`
	RawProduceCPUSecPerGB float64 `json:",omitempty"`
	// RawProduceClientCPUSecPerGB is the raw producer's own CPU per GB.
	RawProduceClientCPUSecPerGB float64 `json:",omitempty"`
}

type serveBenchResult struct {
	Config serveBenchConfig
	Direct serveBenchSide // the store's own append, no network
	Seglog serveBenchSide // seglog serve, sendfile fetch path
	Copy   serveBenchSide // seglog serve --fetch-copy (consume only)
	Kfake  serveBenchSide
}

func newBenchServeCmd() *cobra.Command {
	var cfg serveBenchConfig
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
		defer removeAll(vfs.Default, tmp)
		res, err := runServeBench(ctx, cmd.ErrOrStderr(), tmp, cfg)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		}
		return writeServeBench(cmd.OutOrStdout(), res)
	}
	return cmd
}

func runServeBench(ctx context.Context, progress io.Writer, tmp string, cfg serveBenchConfig) (*serveBenchResult, error) {
	res := &serveBenchResult{Config: cfg}
	say := func(s string) { fmt.Fprintln(progress, "bench serve:", s) }
	value := make([]byte, cfg.RecordSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	say("direct append")
	flushDirtyPages()
	var err error
	if res.Direct, err = benchDirect(filepath.Join(tmp, "direct"), cfg, value); err != nil {
		return nil, err
	}
	res.Direct.Name = "direct append"

	say("seglog serve (sendfile)")
	srv, err := startServeChild(ctx, filepath.Join(tmp, "serve"), cfg.Partitions, false)
	if err != nil {
		return nil, err
	}
	flushDirtyPages()
	res.Seglog, err = benchKafka(ctx, srv.addr, cfg, value, srv.cpu)
	if err == nil {
		res.Seglog.RawFetchMBs, res.Seglog.RawFetchCPUSecPerGB, err = benchRawFetch(ctx, srv.addr, cfg, srv.cpu)
	}
	if err == nil {
		say("seglog serve, raw producer")
		flushDirtyPages()
		res.Seglog.RawProduceRecsSec, res.Seglog.RawProduceCPUSecPerGB, res.Seglog.RawProduceClientCPUSecPerGB, err = benchRawProduce(ctx, srv.addr, cfg, value, srv.cpu)
	}
	srv.stop()
	if err != nil {
		return nil, fmt.Errorf("seglog serve: %w", err)
	}
	res.Seglog.Name = "seglog serve"

	say("seglog serve --fetch-copy (consume the same store)")
	srv, err = startServeChild(ctx, filepath.Join(tmp, "serve"), cfg.Partitions, true)
	if err != nil {
		return nil, err
	}
	res.Copy, err = benchConsume(ctx, srv.addr, cfg, srv.cpu)
	if err == nil {
		res.Copy.RawFetchMBs, res.Copy.RawFetchCPUSecPerGB, err = benchRawFetch(ctx, srv.addr, cfg, srv.cpu)
	}
	srv.stop()
	if err != nil {
		return nil, fmt.Errorf("seglog serve --fetch-copy: %w", err)
	}
	res.Copy.Name = "seglog serve, copy fetch"

	say("kfake")
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(cfg.Partitions), "bench", "bench-latency"))
	if err != nil {
		return nil, err
	}
	res.Kfake, err = benchKafka(ctx, kf.ListenAddrs()[0], cfg, value, nil)
	kf.Close()
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	res.Kfake.Name = "kfake"
	return res, nil
}

// benchDirect appends the workload straight to a store: the rate the
// server's produce path is compared with.
func benchDirect(dir string, cfg serveBenchConfig, value []byte) (serveBenchSide, error) {
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		return serveBenchSide{}, err
	}
	defer st.Close()
	if err := st.CreateTopic("bench", cfg.Partitions, store.DefaultTopicConfig()); err != nil {
		return serveBenchSide{}, err
	}
	per := cfg.Records / cfg.Partitions
	var wg sync.WaitGroup
	errs := make([]error, cfg.Partitions)
	self0 := selfCPU()
	start := time.Now()
	for p := range cfg.Partitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs := make([]record.Record, cfg.Batch)
			for i := range recs {
				recs[i].Value = value
			}
			for done := 0; done < per; done += cfg.Batch {
				n := min(cfg.Batch, per-done)
				if _, err := st.ProduceTo("bench", int32(p), recs[:n]...); err != nil {
					errs[p] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	if err := errors.Join(errs...); err != nil {
		return serveBenchSide{}, err
	}
	n := float64(per * cfg.Partitions)
	gb := n * float64(cfg.RecordSize) / 1e9
	return serveBenchSide{ProduceRecsSec: n / el, ProduceMBs: n * float64(cfg.RecordSize) / el / 1e6,
		ProduceCPUSecPerGB: (selfCPU() - self0).Seconds() / gb}, nil
}

// benchKafka produces the workload to addr with kgo as fast as it goes,
// then measures produce latency with one record at a time (ProduceSync,
// so the latency is a request's round trip, not time queued behind the
// throughput phase), then consumes.
func benchKafka(ctx context.Context, addr string, cfg serveBenchConfig, value []byte, cpu func() (time.Duration, error)) (serveBenchSide, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("bench"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return serveBenchSide{}, err
	}
	defer cl.Close()
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	var cpu0 time.Duration
	if cpu != nil {
		if cpu0, err = cpu(); err != nil {
			return serveBenchSide{}, err
		}
	}
	self0 := selfCPU()
	start := time.Now()
	for range cfg.Records {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	self := selfCPU() - self0
	if e := failed.Load(); e != nil {
		return serveBenchSide{}, *e
	}
	n := float64(cfg.Records)
	side := serveBenchSide{ProduceRecsSec: n / el, ProduceMBs: n * float64(cfg.RecordSize) / el / 1e6}
	if cpu != nil {
		side.ClientCPUSecPerGB = self.Seconds() / (n * float64(cfg.RecordSize) / 1e9)
		cpu1, err := cpu()
		if err != nil {
			return serveBenchSide{}, err
		}
		side.ProduceCPUSecPerGB = (cpu1 - cpu0).Seconds() / (n * float64(cfg.RecordSize) / 1e9)
	}
	lat := make([]time.Duration, cfg.Latency)
	for i := range lat {
		t0 := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bench-latency", Value: value}).FirstErr(); err != nil {
			return serveBenchSide{}, err
		}
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	side.P50Ms, side.P99Ms = ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100])
	c, err := benchConsume(ctx, addr, cfg, cpu)
	side.ConsumeMBs, side.FetchCPUSecPerGB, side.ConsumeClientCPUSecPerGB = c.ConsumeMBs, c.FetchCPUSecPerGB, c.ConsumeClientCPUSecPerGB
	return side, err
}

// benchConsume reads every partition of topic bench from the start,
// --consume-rounds times (new clients each time), so the server's CPU
// time is large enough to measure in /proc's 10 ms ticks. Each round's
// --consumers clients split the partitions between them, as the members
// of a consumer group do, and read at the same time.
func benchConsume(ctx context.Context, addr string, cfg serveBenchConfig, cpu func() (time.Duration, error)) (serveBenchSide, error) {
	consumers := max(1, min(cfg.Consumers, cfg.Partitions))
	var cpu0 time.Duration
	var err error
	if cpu != nil {
		if cpu0, err = cpu(); err != nil {
			return serveBenchSide{}, err
		}
	}
	ends, err := partitionEndOffsets(ctx, addr, "bench", cfg.Partitions)
	if err != nil {
		return serveBenchSide{}, err
	}
	self0 := selfCPU()
	start := time.Now()
	var bytes atomic.Int64
	for range cfg.ConsumeRounds {
		var wg sync.WaitGroup
		errs := make([]error, consumers)
		for c := range consumers {
			offsets := make(map[int32]kgo.Offset)
			var want int64
			for p := c; p < cfg.Partitions; p += consumers {
				offsets[int32(p)] = kgo.NewOffset().AtStart()
				want += ends[int32(p)]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := consumeAll(ctx, addr, offsets, want)
				bytes.Add(n)
				errs[c] = err
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return serveBenchSide{}, err
		}
	}
	el := time.Since(start).Seconds()
	total := float64(bytes.Load())
	side := serveBenchSide{ConsumeMBs: total / el / 1e6}
	if cpu != nil {
		side.ConsumeClientCPUSecPerGB = (selfCPU() - self0).Seconds() / (total / 1e9)
		cpu1, err := cpu()
		if err != nil {
			return serveBenchSide{}, err
		}
		side.FetchCPUSecPerGB = (cpu1 - cpu0).Seconds() / (total / 1e9)
	}
	return side, nil
}

// partitionEndOffsets asks addr for the latest offsets of topic's
// partitions (their record counts: nothing is deleted in the bench).
func partitionEndOffsets(ctx context.Context, addr, topic string, partitions int) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range int32(partitions) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	ends := make(map[int32]int64, partitions)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return nil, fmt.Errorf("list offsets: %s-%d: error %d", t.Topic, p.Partition, p.ErrorCode)
			}
			ends[p.Partition] = p.Offset
		}
	}
	if len(ends) != partitions {
		return nil, fmt.Errorf("list offsets: %d partitions answered, want %d", len(ends), partitions)
	}
	return ends, nil
}

// consumeAll reads want records of topic bench from offsets with one kgo
// client and returns the value bytes it read.
func consumeAll(ctx context.Context, addr string, offsets map[int32]kgo.Offset, want int64) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": offsets}),
		kgo.FetchMaxPartitionBytes(8<<20))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var bytes, got int64
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return bytes, fmt.Errorf("consumed %d of %d records: %w", got, want, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return bytes, errs[0].Err
		}
		fs.EachRecord(func(r *kgo.Record) { got++; bytes += int64(len(r.Value)) })
	}
	return bytes, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpu is the child's user+system CPU time so far, from /proc/PID/stat
// (in clock ticks of 1/100 s, Linux's USER_HZ).
func (c *serveChild) cpu() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid)) //vfs:allow a /proc file says size 0, so ReadFileLimit reads nothing
	if err != nil {
		return 0, fmt.Errorf("server CPU time: %w", err)
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("server CPU time: short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("server CPU time: bad /proc stat")
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

func (c *serveChild) stop() {
	c.cmd.Process.Signal(os.Interrupt)
	c.cmd.Wait()
}

func writeServeBench(w io.Writer, r *serveBenchResult) error {
	c := r.Config
	fmt.Fprintf(w, "%d records of %d bytes to %d partitions, kgo over loopback (idempotent, acks=all, no compression);\n", c.Records, c.RecordSize, c.Partitions)
	fmt.Fprintf(w, "latency of %d single-record produces; every record consumed %d times, by %d kgo consumers at once\n\n", c.Latency, c.ConsumeRounds, max(1, min(c.Consumers, c.Partitions)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tproduce rec/s\tproduce MB/s\tp50 ms\tp99 ms\tconsume MB/s\tCPU s/GB produced\tserver CPU s/GB fetched\traw fetch MB/s\tits CPU s/GB\traw produce rec/s\tits CPU s/GB\t")
	for _, s := range []serveBenchSide{r.Direct, r.Seglog, r.Copy, r.Kfake} {
		cpu := "-"
		if s.FetchCPUSecPerGB > 0 {
			cpu = fmt.Sprintf("%.2f", s.FetchCPUSecPerGB)
		}
		dash := func(v float64, f string) string {
			if v == 0 {
				return "-"
			}
			return fmt.Sprintf(f, v)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Name, dash(s.ProduceRecsSec, "%.0f"), dash(s.ProduceMBs, "%.1f"),
			dash(s.P50Ms, "%.2f"), dash(s.P99Ms, "%.2f"), dash(s.ConsumeMBs, "%.0f"), dash(s.ProduceCPUSecPerGB, "%.2f"), cpu,
			dash(s.RawFetchMBs, "%.0f"), dash(s.RawFetchCPUSecPerGB, "%.2f"), dash(s.RawProduceRecsSec, "%.0f"), dash(s.RawProduceCPUSecPerGB, "%.2f"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	fmt.Fprintf(w, "\nseglog produce / direct append: %.2fx (kgo producer), %.2fx (raw producer)\n",
		ratio(r.Seglog.ProduceRecsSec, r.Direct.ProduceRecsSec), ratio(r.Seglog.RawProduceRecsSec, r.Direct.ProduceRecsSec))
	// The sums need the server's share, which /proc counts in 10 ms
	// ticks: a run too short to show any is left without them.
	if s := r.Seglog; s.RawProduceClientCPUSecPerGB > 0 && s.RawProduceCPUSecPerGB > 0 && r.Direct.ProduceCPUSecPerGB > 0 {
		fmt.Fprintf(w, "raw produce CPU: client %.2f + server %.2f s/GB, against %.2f s/GB for the direct append (%.2fx)\n",
			s.RawProduceClientCPUSecPerGB, s.RawProduceCPUSecPerGB, r.Direct.ProduceCPUSecPerGB,
			(s.RawProduceClientCPUSecPerGB+s.RawProduceCPUSecPerGB)/r.Direct.ProduceCPUSecPerGB)
	}
	if s := r.Seglog; s.ClientCPUSecPerGB > 0 && s.ProduceCPUSecPerGB > 0 {
		// What a kgo produce costs both processes, and the rate the
		// machine's cores would allow at that cost with nothing else.
		both := s.ClientCPUSecPerGB + s.ProduceCPUSecPerGB
		fmt.Fprintf(w, "kgo produce CPU: client %.2f + server %.2f s/GB; at that cost %d cores allow %.0f MB/s (%.2fx direct)\n",
			s.ClientCPUSecPerGB, s.ProduceCPUSecPerGB, runtime.NumCPU(), float64(runtime.NumCPU())/both*1e3,
			ratio(float64(runtime.NumCPU())/both*1e9/float64(c.RecordSize), r.Direct.ProduceRecsSec))
	}
	if s := r.Seglog; s.ConsumeClientCPUSecPerGB > 0 && s.FetchCPUSecPerGB > 0 {
		both := s.ConsumeClientCPUSecPerGB + s.FetchCPUSecPerGB
		fmt.Fprintf(w, "kgo consume CPU: client %.2f + server %.2f s/GB; at that cost %d cores allow %.0f MB/s\n",
			s.ConsumeClientCPUSecPerGB, s.FetchCPUSecPerGB, runtime.NumCPU(), float64(runtime.NumCPU())/both*1e3)
	}
	fmt.Fprintf(w, "seglog / kfake: produce %.2fx, consume %.2fx\n", ratio(r.Seglog.ProduceRecsSec, r.Kfake.ProduceRecsSec), ratio(r.Seglog.ConsumeMBs, r.Kfake.ConsumeMBs))
	fmt.Fprintf(w, "fetch CPU, sendfile / copy: %.2fx (kgo consumers), %.2fx (raw fetches)\n",
		ratio(r.Seglog.FetchCPUSecPerGB, r.Copy.FetchCPUSecPerGB), ratio(r.Seglog.RawFetchCPUSecPerGB, r.Copy.RawFetchCPUSecPerGB))
	fmt.Fprintf(w, "raw fetch, sendfile / copy: %.2fx\n", ratio(r.Seglog.RawFetchMBs, r.Copy.RawFetchMBs))
	return nil
}
