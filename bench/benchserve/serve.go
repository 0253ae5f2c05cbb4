// Package benchserve is seglog bench serve: the Kafka-protocol server
// measured with a real client, franz-go's kgo, against the store's own
// append and against franz-go's kfake broker. It is apart from package bench
// so that only a seglog built with the benchextras tag links kgo and kfake
// (cmd/seglog/bench_extras.go; docs/benchmarks.md, "The bench extras").
package benchserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// Config is the workload of seglog bench serve (Run).
type Config struct {
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

// Side is one system's result.
type Side struct {
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

// Result is bench serve's figures, one Side per system.
type Result struct {
	Config Config
	Direct Side // the store's own append, no network
	Seglog Side // seglog serve, sendfile fetch path
	Copy   Side // seglog serve --fetch-copy (consume only)
	Kfake  Side
}

// Run measures every system on the workload cfg, with its stores below
// tmp, starting seglog serve with sc; progress gets a line per phase.
func Run(ctx context.Context, progress io.Writer, tmp string, cfg Config, sc bench.ServeCommand) (*Result, error) {
	res := &Result{Config: cfg}
	say := func(s string) { fmt.Fprintln(progress, "bench serve:", s) }
	value := make([]byte, cfg.RecordSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	say("direct append")
	bench.FlushDirtyPages()
	var err error
	if res.Direct, err = benchDirect(filepath.Join(tmp, "direct"), cfg, value); err != nil {
		return nil, err
	}
	res.Direct.Name = "direct append"

	say("seglog serve (sendfile)")
	srv, err := bench.StartServe(ctx, sc, filepath.Join(tmp, "serve"), cfg.Partitions, false)
	if err != nil {
		return nil, err
	}
	bench.FlushDirtyPages()
	res.Seglog, err = benchKafka(ctx, srv.Addr, cfg, value, srv.CPU)
	if err == nil {
		res.Seglog.RawFetchMBs, res.Seglog.RawFetchCPUSecPerGB, err = benchRawFetch(ctx, srv.Addr, cfg, srv.CPU)
	}
	if err == nil {
		say("seglog serve, raw producer")
		bench.FlushDirtyPages()
		res.Seglog.RawProduceRecsSec, res.Seglog.RawProduceCPUSecPerGB, res.Seglog.RawProduceClientCPUSecPerGB, err = benchRawProduce(ctx, srv.Addr, cfg, value, srv.CPU)
	}
	srv.Stop()
	if err != nil {
		return nil, fmt.Errorf("seglog serve: %w", err)
	}
	res.Seglog.Name = "seglog serve"

	say("seglog serve --fetch-copy (consume the same store)")
	srv, err = bench.StartServe(ctx, sc, filepath.Join(tmp, "serve"), cfg.Partitions, true)
	if err != nil {
		return nil, err
	}
	res.Copy, err = benchConsume(ctx, srv.Addr, cfg, srv.CPU)
	if err == nil {
		res.Copy.RawFetchMBs, res.Copy.RawFetchCPUSecPerGB, err = benchRawFetch(ctx, srv.Addr, cfg, srv.CPU)
	}
	srv.Stop()
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
func benchDirect(dir string, cfg Config, value []byte) (Side, error) {
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		return Side{}, err
	}
	defer st.Close()
	if err := st.CreateTopic("bench", cfg.Partitions, store.DefaultTopicConfig()); err != nil {
		return Side{}, err
	}
	per := cfg.Records / cfg.Partitions
	var wg sync.WaitGroup
	errs := make([]error, cfg.Partitions)
	self0 := bench.CPUTime()
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
		return Side{}, err
	}
	n := float64(per * cfg.Partitions)
	gb := n * float64(cfg.RecordSize) / 1e9
	return Side{ProduceRecsSec: n / el, ProduceMBs: n * float64(cfg.RecordSize) / el / 1e6,
		ProduceCPUSecPerGB: (bench.CPUTime() - self0).Seconds() / gb}, nil
}

// benchKafka produces the workload to addr with kgo as fast as it goes,
// then measures produce latency with one record at a time (ProduceSync,
// so the latency is a request's round trip, not time queued behind the
// throughput phase), then consumes.
func benchKafka(ctx context.Context, addr string, cfg Config, value []byte, cpu func() (time.Duration, error)) (Side, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("bench"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return Side{}, err
	}
	defer cl.Close()
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	var cpu0 time.Duration
	if cpu != nil {
		if cpu0, err = cpu(); err != nil {
			return Side{}, err
		}
	}
	self0 := bench.CPUTime()
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
	self := bench.CPUTime() - self0
	if e := failed.Load(); e != nil {
		return Side{}, *e
	}
	n := float64(cfg.Records)
	side := Side{ProduceRecsSec: n / el, ProduceMBs: n * float64(cfg.RecordSize) / el / 1e6}
	if cpu != nil {
		side.ClientCPUSecPerGB = self.Seconds() / (n * float64(cfg.RecordSize) / 1e9)
		cpu1, err := cpu()
		if err != nil {
			return Side{}, err
		}
		side.ProduceCPUSecPerGB = (cpu1 - cpu0).Seconds() / (n * float64(cfg.RecordSize) / 1e9)
	}
	lat := make([]time.Duration, cfg.Latency)
	for i := range lat {
		t0 := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "bench-latency", Value: value}).FirstErr(); err != nil {
			return Side{}, err
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
func benchConsume(ctx context.Context, addr string, cfg Config, cpu func() (time.Duration, error)) (Side, error) {
	consumers := max(1, min(cfg.Consumers, cfg.Partitions))
	var cpu0 time.Duration
	var err error
	if cpu != nil {
		if cpu0, err = cpu(); err != nil {
			return Side{}, err
		}
	}
	ends, err := partitionEndOffsets(ctx, addr, "bench", cfg.Partitions)
	if err != nil {
		return Side{}, err
	}
	self0 := bench.CPUTime()
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
			return Side{}, err
		}
	}
	el := time.Since(start).Seconds()
	total := float64(bytes.Load())
	side := Side{ConsumeMBs: total / el / 1e6}
	if cpu != nil {
		side.ConsumeClientCPUSecPerGB = (bench.CPUTime() - self0).Seconds() / (total / 1e9)
		cpu1, err := cpu()
		if err != nil {
			return Side{}, err
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

// Write prints r as seglog bench serve's table and its ratios.
func Write(w io.Writer, r *Result) error {
	c := r.Config
	fmt.Fprintf(w, "%d records of %d bytes to %d partitions, kgo over loopback (idempotent, acks=all, no compression);\n", c.Records, c.RecordSize, c.Partitions)
	fmt.Fprintf(w, "latency of %d single-record produces; every record consumed %d times, by %d kgo consumers at once\n\n", c.Latency, c.ConsumeRounds, max(1, min(c.Consumers, c.Partitions)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tproduce rec/s\tproduce MB/s\tp50 ms\tp99 ms\tconsume MB/s\tCPU s/GB produced\tserver CPU s/GB fetched\traw fetch MB/s\tits CPU s/GB\traw produce rec/s\tits CPU s/GB\t")
	for _, s := range []Side{r.Direct, r.Seglog, r.Copy, r.Kfake} {
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
