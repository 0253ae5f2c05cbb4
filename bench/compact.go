package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/compaction"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// CompactConfig is the compaction workload: a log of Records uncompressed
// records over Keys distinct keys (drawn at random), compacted in one
// round, for each entry of Keys.
type CompactConfig struct {
	Keys         []int
	Records      int
	ValueBytes   int
	BatchRecords int
	SegmentBytes int64
	// MapBytes is the offset map's size (0: 128 MiB).
	MapBytes int
	// Idle is the least time appends are measured with no round running,
	// before it and again after (0: 1 s; after, at least the round's
	// duration).
	Idle time.Duration
}

func (c *CompactConfig) defaults() error {
	if len(c.Keys) == 0 {
		c.Keys = []int{10_000, 1_000_000}
	}
	if c.Records <= 0 {
		c.Records = 1_000_000
	}
	if c.ValueBytes <= 0 {
		c.ValueBytes = 100
	}
	if c.BatchRecords <= 0 {
		c.BatchRecords = 100
	}
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = 64 << 20
	}
	if c.MapBytes <= 0 {
		c.MapBytes = compaction.DefaultMapBytes
	}
	if c.Idle <= 0 {
		c.Idle = time.Second
	}
	for _, k := range c.Keys {
		if k < 1 {
			return fmt.Errorf("bench: compact: %d keys", k)
		}
	}
	return nil
}

// CompactRun is one key count's measurement.
type CompactRun struct {
	Keys       int   `json:"keys"`
	Records    int   `json:"records"`
	InputBytes int64 `json:"input_bytes"`
	// InputMBps is the compaction round's input rate (log bytes over the
	// round's duration); BaselineMBps is a plain sequential read of the
	// same .log files just before, and Ratio the first over the second.
	Seconds   float64 `json:"seconds"`
	InputMBps float64 `json:"input_mbps"`
	// CPUSeconds is the process's CPU time during the round (the round's
	// and the appender's), and InputMBpsPerCPU the input over it: what
	// the round costs whatever else shares the machine.
	CPUSeconds      float64 `json:"cpu_seconds"`
	InputMBpsPerCPU float64 `json:"input_mbps_per_cpu"`
	BaselineMBps    float64 `json:"baseline_mbps"`
	Ratio           float64 `json:"ratio"`
	// PeakHeapBytes is the highest heap in use sampled during the round,
	// above the heap in use before the map was allocated (so it includes
	// the map, MapBytes).
	PeakHeapBytes  uint64  `json:"peak_heap_bytes"`
	MapBytes       int     `json:"map_bytes"`
	MapFill        float64 `json:"map_fill"`
	OutputBytes    int64   `json:"output_bytes"`
	RecordsRemoved int64   `json:"records_removed"`
	// Appends' latency with no compaction running (the baseline, before
	// and after the round) and while the round runs (Appends of them),
	// single-record appends to the same log.
	Appends         int64   `json:"appends_during"`
	AppendP99Idle   float64 `json:"append_p99_idle_us"`
	AppendP99During float64 `json:"append_p99_during_us"`
	AppendRatio     float64 `json:"append_p99_ratio"`
	// AppendP99Spin is appends' p99 while a goroutine only burns CPU for
	// as long as the round took (the control), and AppendSpinRatio its
	// ratio to the idle baseline.
	AppendP99Spin   float64 `json:"append_p99_spin_us"`
	AppendSpinRatio float64 `json:"append_p99_spin_ratio"`
}

// CompactResult is the whole workload's result.
type CompactResult struct {
	Workload string       `json:"workload"`
	Runs     []CompactRun `json:"runs"`
}

// RunCompact measures compaction for each key count of cfg.
func RunCompact(ctx context.Context, env Env, cfg CompactConfig) (*CompactResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	res := &CompactResult{Workload: "compact"}
	for _, keys := range cfg.Keys {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		run, err := runCompactOnce(ctx, env, cfg, keys)
		if err != nil {
			return res, err
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

func runCompactOnce(ctx context.Context, env Env, cfg CompactConfig, keys int) (run CompactRun, err error) {
	run = CompactRun{Keys: keys, Records: cfg.Records, MapBytes: cfg.MapBytes}
	dir, err := env.tempDir("compact")
	if err != nil {
		return run, err
	}
	defer func() { err = errors.Join(err, vfs.RemoveAll(fs, dir)) }()
	logDir := filepath.Join(dir, "compact-0")
	l, err := seglog.Open(logDir, seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: cfg.SegmentBytes, Sync: seglog.SyncNone}, Logger: discardLogger})
	if err != nil {
		return run, err
	}
	defer func() { err = errors.Join(err, l.Close()) }()

	// The input: random keys, values of printable bytes.
	rng := rand.New(rand.NewPCG(uint64(keys), 1))
	value := make([]byte, cfg.ValueBytes)
	for i := range value {
		value[i] = byte('a' + rng.IntN(26))
	}
	recs := make([]record.Record, cfg.BatchRecords)
	keyBuf := make([][]byte, cfg.BatchRecords)
	for n := 0; n < cfg.Records; n += cfg.BatchRecords {
		if err := ctx.Err(); err != nil {
			return run, err
		}
		for i := range recs {
			keyBuf[i] = fmt.Appendf(keyBuf[i][:0], "key-%09d", rng.IntN(keys))
			recs[i] = record.Record{Key: keyBuf[i], Value: value}
		}
		if _, err := l.Append(recs[:min(cfg.BatchRecords, cfg.Records-n)]...); err != nil {
			return run, err
		}
	}
	if err := l.Roll(); err != nil {
		return run, err
	}
	if err := l.Sync(); err != nil {
		return run, err
	}
	run.InputBytes = l.Size()
	sealedEnd := l.EndOffset()

	// The baseline: read the .log files as they are, 1 MiB at a time.
	baseStart := time.Now()
	if err := readLogs(logDir); err != nil {
		return run, err
	}
	run.BaselineMBps = float64(run.InputBytes) / 1e6 / time.Since(baseStart).Seconds()

	// Appends alone, during the round, then alone again for as long as it
	// took: the baseline merges both idle phases, so load that comes and
	// goes on a shared machine weighs on both sides. The heap sampler runs
	// in every phase, through runtime/metrics, which does not stop the
	// world (runtime.ReadMemStats would, every few milliseconds, and only
	// during the round).
	runtime.GC()
	before := heapInUse()
	m := compaction.NewOffsetMap(cfg.MapBytes, 0)
	var peak atomic.Uint64
	stopSampler := sampleHeap(&peak)
	defer stopSampler()
	var res compaction.Result
	var cerr error
	var took, cpu time.Duration
	idle := appendFor(l, func(<-chan struct{}) { time.Sleep(cfg.Idle) })
	during := appendFor(l, func(<-chan struct{}) {
		start, cpu0 := time.Now(), cpuTime()
		res, cerr = compaction.Clean(l, m, 0, sealedEnd, compaction.Options{SegmentBytes: cfg.SegmentBytes})
		took, cpu = time.Since(start), cpuTime()-cpu0
	})
	if cerr != nil {
		return run, cerr
	}
	idle.merge(appendFor(l, func(<-chan struct{}) { time.Sleep(max(took, cfg.Idle)) }))
	// The control: a goroutine that only burns CPU for as long as the
	// round took. On a machine of few cores, appends slow down during a
	// round mostly because it takes a core; this tells that cost from one
	// of the round's own (a lock, I/O).
	spin := appendFor(l, func(<-chan struct{}) {
		var x uint64
		for deadline := time.Now().Add(took); time.Now().Before(deadline); {
			for i := range 1000 {
				x += uint64(i) * x
			}
		}
		runtime.KeepAlive(x)
	})
	run.Seconds = took.Seconds()
	run.CPUSeconds = cpu.Seconds()
	run.InputMBps = float64(run.InputBytes) / 1e6 / took.Seconds()
	if cpu > 0 {
		run.InputMBpsPerCPU = float64(run.InputBytes) / 1e6 / cpu.Seconds()
	}
	run.Ratio = run.InputMBps / run.BaselineMBps
	if p := peak.Load(); p > before {
		run.PeakHeapBytes = p - before
	}
	run.MapFill, run.OutputBytes, run.RecordsRemoved = res.MapFill, res.BytesWritten, res.RecordsRemoved
	run.AppendP99Idle, run.AppendP99During = idle.summary().P99, during.summary().P99
	run.Appends = during.h.TotalCount()
	run.AppendP99Spin = spin.summary().P99
	if run.AppendP99Idle > 0 {
		run.AppendRatio = run.AppendP99During / run.AppendP99Idle
		run.AppendSpinRatio = run.AppendP99Spin / run.AppendP99Idle
	}
	runtime.KeepAlive(m)
	return run, nil
}

// heapMetrics add up to runtime.MemStats.HeapInuse: objects and the
// free space in spans holding objects.
var heapMetrics = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}

func heapInUse() uint64 {
	s := slices.Clone(heapMetrics)
	metrics.Read(s)
	var n uint64
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			n += x.Value.Uint64()
		}
	}
	return n
}

// sampleHeap records the highest heapInUse in peak every 5 ms until the
// returned function is called.
func sampleHeap(peak *atomic.Uint64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if h := heapInUse(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// appendFor appends single records to l from another goroutine while
// body runs, and returns their latencies.
func appendFor(l *seglog.Log, body func(stop <-chan struct{})) *recorder {
	rec := newRecorder()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := record.Record{Key: []byte("appended"), Value: []byte("while compacting")}
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if _, err := l.Append(r); err != nil {
				return
			}
			rec.record(time.Since(start))
			time.Sleep(100 * time.Microsecond)
		}
	}()
	body(stop)
	close(stop)
	<-done
	return rec
}

// readLogs reads every .log file of dir sequentially.
func readLogs(dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for _, n := range names {
		if _, suffix, ok := layout.ParseFileName(n); !ok || suffix != layout.LogSuffix {
			continue
		}
		f, err := fs.Open(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		for off := int64(0); ; {
			k, err := f.ReadAt(buf, off)
			off += int64(k)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				f.Close()
				return err
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// WriteCompact prints r as a table.
func WriteCompact(w io.Writer, r *CompactResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "keys\trecords\tinput MB\tround s\tinput MB/s\tCPU s\tMB/CPU-s\tread MB/s (baseline)\tratio\tpeak heap MiB\tmap MiB\tmap fill\toutput MB\tappend p99 idle µs\tduring µs\tappend ratio\tspin µs\tspin ratio\t")
	for _, x := range r.Runs {
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.2f\t%.1f\t%.2f\t%.1f\t%.1f\t%.2f×\t%.1f\t%.0f\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f×\t%.1f\t%.2f×\t\n",
			x.Keys, x.Records, float64(x.InputBytes)/1e6, x.Seconds, x.InputMBps, x.CPUSeconds, x.InputMBpsPerCPU, x.BaselineMBps, x.Ratio,
			float64(x.PeakHeapBytes)/(1<<20), float64(x.MapBytes)/(1<<20), x.MapFill, float64(x.OutputBytes)/1e6,
			x.AppendP99Idle, x.AppendP99During, x.AppendRatio, x.AppendP99Spin, x.AppendSpinRatio)
	}
	return tw.Flush()
}

// ParseKeys parses a comma-separated list of key counts, "10000,1000000".
func ParseKeys(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var k int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &k); err != nil || k < 1 {
			return nil, fmt.Errorf("invalid key count %q", f)
		}
		out = append(out, k)
	}
	return out, nil
}
