package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/bench"
)

func init() { register(newBenchCmd) }

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench write|read|lookup|durable",
		Short: "Benchmark workloads side by side with their raw baselines",
		Long: `Run a workload against a fresh log in a temporary directory (or below
--dir), removed at the end, and print a table: records/s and MB/s, latency
percentiles per call, CPU time, and the baseline measured in the same run
with the ratio seglog ÷ baseline.

  write    sequential appends (--producer: pre-built producer batches through
           AppendBatch); baseline: a plain file append of the same batch
           bytes, one write per batch, with the same fsync policy
  read     Read + WriteTo (sendfile) to a loopback TCP peer; baseline:
           sendfile of the same file ranges with no log logic
  scan     every record of a warm log through Records (--mode read: Read +
           parse); baseline: pread of the same files + record.Iterator
  lookup   Read of random offsets; baseline: binary search over an
           in-memory array of the same batches
  durable  --sync always with 1, 2, 4 … --writers writers (group commit)

Seglog and baseline run in alternating rounds after a warm-up round of
each, and the rates are medians, so a noisy machine's drift hits both.
Every record written is read back and checked outside the timed sections.
A progress bar is drawn on stderr when it is a terminal. --json prints one
JSON object per workload instead of the table; --plot FILE.png draws
throughput over time (and, for a sweep of sizes or writers, against it).

--plot, bench serve (seglog serve driven by kgo clients, against the
direct append and kfake), bench cluster (three seglog serve nodes with
replication factor 3 against one node, and failovers) and bench raft
(seglog's raft log store against raft-wal) are in a seglog built with
-tags benchextras:
  go build -tags benchextras -o seglog ./cmd/seglog
They need a plotting library, a Kafka client and broker and another raft
store; the first two took about 30% of the compile time of a first build
(empty caches), and all are left out of the default one
(docs/benchmarks.md).`,
	}
	cmd.AddCommand(newBenchWriteCmd(), newBenchReadCmd(), newBenchScanCmd(), newBenchLookupCmd(), newBenchDurableCmd(), newBenchRetentionCmd(), newBenchCompactCmd(), newBenchStoreCmd(), newBenchServeCmd(), newBenchRaftCmd(), newBenchRestartCmd(), newBenchClusterCmd())
	return cmd
}

// benchOut holds the flags every bench subcommand shares.
type benchOut struct {
	dir    string
	json   bool
	plot   string
	rounds int
}

func bindBenchOut(cmd *cobra.Command, rounds int) *benchOut {
	o := &benchOut{}
	fl := cmd.Flags()
	fl.StringVar(&o.dir, "dir", "", "make the run's temporary directory below this one, which must exist (default: the system's temporary directory)")
	fl.BoolVar(&o.json, "json", false, "print one JSON object per workload instead of the table")
	bindPlotFlag(fl, &o.plot) // bench_extras.go
	fl.IntVar(&o.rounds, "rounds", rounds, "timed rounds of each side (after one warm-up round each)")
	limitFlag(cmd, "rounds", 1, math.MaxInt32)
	return o
}

func (o *benchOut) env(cmd *cobra.Command) bench.Env {
	// Rounds of the default runs last a fraction of a second; sample often
	// enough that each shows as a line in the plot.
	env := bench.Env{Dir: o.dir, SampleEvery: 25 * time.Millisecond}
	if isTerminalFile(cmd.ErrOrStderr()) {
		env.Progress = &barProgress{w: cmd.ErrOrStderr()}
	}
	return env
}

func (o *benchOut) check(cmd *cobra.Command) error {
	if o.plot != "" && !strings.HasSuffix(strings.ToLower(o.plot), ".png") {
		return usageErrorf(cmd, "invalid --plot %q: must name a .png file", o.plot)
	}
	return nil
}

// report prints results as a table or JSON lines and draws the plot.
func (o *benchOut) report(cmd *cobra.Command, title string, results []*bench.Result) error {
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	} else if err := bench.WriteTable(out, results); err != nil {
		return err
	}
	if o.plot != "" {
		if err := writePlot(o.plot, results, title); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		if !o.json {
			fmt.Fprintf(out, "Plot written to %s.\n", o.plot)
		}
	}
	return nil
}

// sweep runs a workload once per --size and reports the results under
// title.
func (o *benchOut) sweep(cmd *cobra.Command, title string, sizes []int, run func(ctx context.Context, env bench.Env, size int) (*bench.Result, error)) error {
	ctx, cancel := benchContext(cmd)
	defer cancel()
	var results []*bench.Result
	for _, size := range sizes {
		res, err := run(ctx, o.env(cmd), size)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	return o.report(cmd, title, results)
}

// benchContext is cancelled by an interrupt, so ^C stops a long run
// between rounds and still removes its directory.
func benchContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt)
}

// benchOptions is what every bench subcommand checks first: the log flags
// make valid Options, the output flags make sense together, and each
// --size with --batch makes a batch the log will take.
func benchOptions(cmd *cobra.Command, lf *logFlags, out *benchOut, sizes []int, batch int) (seglog.Options, error) {
	opts, err := lf.options(cmd)
	if err != nil {
		return opts, err
	}
	if err := out.check(cmd); err != nil {
		return opts, err
	}
	return opts, checkSizes(cmd, sizes, batch, opts)
}

// checkSizes checks each --size with --batch against --max-batch-bytes
// (their own ranges are rules: bindSizeFlags).
func checkSizes(cmd *cobra.Command, sizes []int, batch int, opts seglog.Options) error {
	if len(sizes) == 0 {
		return usageErrorf(cmd, "invalid --size: give at least one size")
	}
	for _, s := range sizes {
		// A rough bound that catches a batch the log would refuse before
		// any time is spent; the log checks the exact size.
		if int64(s)*int64(batch) > int64(opts.MaxBatchBytes) {
			return usageErrorf(cmd, "invalid --size %d with --batch %d: a batch would exceed --max-batch-bytes %d", s, batch, opts.MaxBatchBytes)
		}
	}
	return nil
}

// limitSizeFlags declares the ranges of a workload's --size (each, for a
// sweep) and --batch; checkSizes checks them together.
func limitSizeFlags(cmd *cobra.Command) {
	limitFlag(cmd, "size", 1, math.MaxInt32)
	// A batch's record count is a 32-bit field.
	limitFlag(cmd, "batch", 1, math.MaxInt32)
}

// benchFloors are the baselines --floor names (bench.WriteConfig.Floor).
var benchFloors = []string{bench.FloorPlain, bench.FloorReserved, bench.FloorPayload, bench.FloorPreallocated, bench.FloorZeroed, bench.FloorSpare}

// checkFloor refuses a --floor other than plain with --sync periodic: the
// other floors sync never or after each call, so nothing would compare.
func checkFloor(cmd *cobra.Command, floor string, opts seglog.Options) error {
	if floor != bench.FloorPlain && opts.Sync == seglog.SyncPeriodic {
		return usageErrorf(cmd, "--floor %s does not apply with --sync periodic: only the plain floor syncs periodically", floor)
	}
	return nil
}

func newBenchWriteCmd() *cobra.Command {
	var (
		sizes    []int
		batch    int
		records  int64
		duration time.Duration
		writers  int
		producer bool
		floor    string
	)
	cmd := &cobra.Command{
		Use:   "write",
		Short: "Sequential appends against a plain file append of the same bytes",
		Long: `Append --records records (or for --duration) of --size bytes, --batch per
append call, from --writers concurrent writers, with the log options given
(--sync, --compression, ...). --producer appends pre-built producer batches
with AppendBatch, as a broker stores what a Kafka client sent. Several
sizes (--size 100,1024,16384) make a sweep, one result per size; use
--duration for sweeps so large records do not take far longer.

The defaults (1 KiB records, batches of 100, 1,000,000 records per side
in 5 rounds, no fsync) finish in well under a minute.`,
		Args: cobra.NoArgs,
	}
	lf := bindLogFlags(cmd)
	lf.bindPreallocate(cmd)
	out := bindBenchOut(cmd, 5)
	fl := cmd.Flags()
	fl.IntSliceVar(&sizes, "size", []int{1024}, "record value size in bytes; several (comma-separated) make a sweep")
	fl.IntVar(&batch, "batch", 100, "records per append call (per producer batch)")
	fl.Int64Var(&records, "records", 1_000_000, "records seglog writes over the timed rounds (the baseline writes as many)")
	fl.DurationVar(&duration, "duration", 0, "run each side this long over the timed rounds instead of --records")
	fl.IntVar(&writers, "writers", 1, "concurrent appenders (with --sync always they share fsyncs: group commit)")
	fl.BoolVar(&producer, "producer", false, "append pre-built producer batches with AppendBatch instead of records with Append")
	fl.StringVar(&floor, "floor", bench.FloorPlain, "baseline: plain (append pre-built batches to a growing file), reserved (build the same batch per call, pwrite into blocks reserved with fallocate KEEP_SIZE), payload (only the values, same reservation), preallocated (fallocate mode 0), zeroed (the reserved floor's batches into a file written with zeros first, untimed) or spare (segment files of --segment-bytes, each zero-filled in the background while the one before it is written)")
	limitSizeFlags(cmd)
	limitFlag(cmd, "records", 1, math.MaxInt64)
	limitDuration(cmd, "duration", 0, math.MaxInt64)
	exclusive(cmd, "records", "duration")
	limitFlag(cmd, "writers", 1, 4096)
	oneOf(cmd, "floor", benchFloors...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := benchOptions(cmd, lf, out, sizes, batch)
		if err != nil {
			return err
		}
		if err := checkFloor(cmd, floor, opts); err != nil {
			return err
		}
		if duration > 0 {
			records = 0
		}
		title := fmt.Sprintf("seglog bench write: batch %d, %d writer(s), sync %s", batch, writers, opts.Sync)
		return out.sweep(cmd, title, sizes, func(ctx context.Context, env bench.Env, size int) (*bench.Result, error) {
			return bench.RunWrite(ctx, env, bench.WriteConfig{
				Options: opts, RecordSize: size, Batch: batch, Records: records,
				Duration: duration, Writers: writers, Producer: producer, Rounds: out.rounds, Floor: floor,
			})
		})
	}
	return cmd
}

func newBenchReadCmd() *cobra.Command {
	var (
		sizes      []int
		batch      int
		logBytes   int64
		fetchBytes int
	)
	cmd := &cobra.Command{
		Use:   "read",
		Short: "Read + sendfile to a loopback peer against sendfile of the same ranges",
		Long: `Write a log of --log-bytes (untimed), then in each round read all of it
from offset 0 with Read(offset, --fetch-bytes) and send each slice with
WriteTo (sendfile) to a loopback TCP peer. The baseline sends the same file
ranges with sendfile and no log logic. The warm-up round's bytes are parsed
and CRC-checked by the peer, batch by batch, for both sides.`,
		Args: cobra.NoArgs,
	}
	lf := bindLogFlags(cmd)
	lf.bindPreallocate(cmd)
	out := bindBenchOut(cmd, 5)
	fl := cmd.Flags()
	fl.IntSliceVar(&sizes, "size", []int{1024}, "record value size in bytes; several (comma-separated) make a sweep")
	fl.IntVar(&batch, "batch", 100, "records per batch written")
	fl.Int64Var(&logBytes, "log-bytes", 256<<20, "size of the log read in each round")
	fl.IntVar(&fetchBytes, "fetch-bytes", 1<<20, "maxBytes of each Read (max.partition.fetch.bytes)")
	limitSizeFlags(cmd)
	limitFlag(cmd, "log-bytes", 1, math.MaxInt64)
	limitFlag(cmd, "fetch-bytes", 1, math.MaxInt32)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := benchOptions(cmd, lf, out, sizes, batch)
		if err != nil {
			return err
		}
		title := fmt.Sprintf("seglog bench read: %d MiB log, fetches of %d bytes", logBytes>>20, fetchBytes)
		return out.sweep(cmd, title, sizes, func(ctx context.Context, env bench.Env, size int) (*bench.Result, error) {
			return bench.RunRead(ctx, env, bench.ReadConfig{
				Options: opts, RecordSize: size, Batch: batch, LogBytes: logBytes,
				FetchBytes: fetchBytes, Rounds: out.rounds,
			})
		})
	}
	return cmd
}

func newBenchScanCmd() *cobra.Command {
	var (
		sizes      []int
		batch      int
		logBytes   int64
		fetchBytes int
		mode       string
		floorCRC   bool
	)
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "Every record of a warm log through Records against pread + record.Iterator",
		Long: `Write a log of --log-bytes (untimed), then in each round read every record
of it from the start: through Records (--mode records), or with Read of
--fetch-bytes at a time, each slice's bytes read and parsed with
record.Iterator (--mode read). The baseline preads the same segment files
256 KiB at a time and runs record.Iterator over each batch, with no log
logic and no CRC check (with --floor-crc, checking each batch's CRC-32C as
Records does). Both sides touch every value; both are checked to read every
record.`,
		Args: cobra.NoArgs,
	}
	lf := bindLogFlags(cmd)
	out := bindBenchOut(cmd, 5)
	fl := cmd.Flags()
	fl.IntSliceVar(&sizes, "size", []int{1024}, "record value size in bytes; several (comma-separated) make a sweep")
	fl.IntVar(&batch, "batch", 100, "records per batch written")
	fl.Int64Var(&logBytes, "log-bytes", 256<<20, "size of the log read in each round")
	fl.IntVar(&fetchBytes, "fetch-bytes", 1<<20, "with --mode read: maxBytes of each Read")
	fl.StringVar(&mode, "mode", bench.ScanRecords, "records (Log.Records) or read (Log.Read + parse)")
	fl.BoolVar(&floorCRC, "floor-crc", false, "the baseline checks each batch's CRC-32C before iterating it, as Records does")
	limitSizeFlags(cmd)
	limitFlag(cmd, "log-bytes", 1, math.MaxInt64)
	limitFlag(cmd, "fetch-bytes", 1, math.MaxInt32)
	oneOf(cmd, "mode", bench.ScanRecords, bench.ScanRead)
	onlyWith(cmd, "fetch-bytes", "mode="+bench.ScanRead)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := benchOptions(cmd, lf, out, sizes, batch)
		if err != nil {
			return err
		}
		title := fmt.Sprintf("seglog bench scan %s: %d MiB log", mode, logBytes>>20)
		return out.sweep(cmd, title, sizes, func(ctx context.Context, env bench.Env, size int) (*bench.Result, error) {
			return bench.RunScan(ctx, env, bench.ScanConfig{
				Options: opts, RecordSize: size, Batch: batch, LogBytes: logBytes,
				FetchBytes: fetchBytes, Mode: mode, Rounds: out.rounds, FloorCRC: floorCRC,
			})
		})
	}
	return cmd
}

func newBenchLookupCmd() *cobra.Command {
	var (
		size, batch, lookups int
		logBytes             int64
	)
	cmd := &cobra.Command{
		Use:   "lookup",
		Short: "Reads at random offsets against a binary search in memory",
		Long: `Write a log of --log-bytes (untimed), then look up --lookups random
offsets per round with Read(offset, 1): offset index, segment scan, slice.
The baseline is a binary search over an in-memory array of the same
batches' offsets. The warm-up round checks every seglog answer against the
baseline's.`,
		Args: cobra.NoArgs,
	}
	lf := bindLogFlags(cmd)
	lf.bindPreallocate(cmd)
	out := bindBenchOut(cmd, 5)
	fl := cmd.Flags()
	fl.IntVar(&size, "size", 1024, "record value size in bytes")
	fl.IntVar(&batch, "batch", 10, "records per batch written")
	fl.Int64Var(&logBytes, "log-bytes", 128<<20, "size of the log")
	fl.IntVar(&lookups, "lookups", 20_000, "lookups per round")
	limitSizeFlags(cmd)
	limitFlag(cmd, "log-bytes", 1, math.MaxInt64)
	limitFlag(cmd, "lookups", 1, math.MaxInt32)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := benchOptions(cmd, lf, out, []int{size}, batch)
		if err != nil {
			return err
		}
		ctx, cancel := benchContext(cmd)
		defer cancel()
		res, err := bench.RunLookup(ctx, out.env(cmd), bench.LookupConfig{
			Options: opts, RecordSize: size, Batch: batch, LogBytes: logBytes, Lookups: lookups, Rounds: out.rounds,
		})
		if err != nil {
			return err
		}
		return out.report(cmd, fmt.Sprintf("seglog bench lookup: %d MiB log", logBytes>>20), []*bench.Result{res})
	}
	return cmd
}

func newBenchDurableCmd() *cobra.Command {
	var (
		size, batch, writers int
		levels               []int
		duration             time.Duration
		floor                string
		paired               bool
	)
	cmd := &cobra.Command{
		Use:   "durable",
		Short: "Sync=always appends from 1 to N writers (group commit)",
		Long: `Append with --sync always (the command takes no --sync) from 1, 2, 4 …
--writers concurrent writers, or the --levels given, each level for
--duration per side. Every append returns only once its batch is on disk;
concurrent appenders share one fdatasync. The baseline is one write +
fdatasync per append, writers taking turns, and each level's rate is also
given against the 1-writer level.`,
		Args: cobra.NoArgs,
	}
	lf := bindLogFlagsExcept(cmd, syncFlags...) // always --sync always
	lf.bindPreallocate(cmd)
	out := bindBenchOut(cmd, 3)
	fl := cmd.Flags()
	fl.IntVar(&size, "size", 1024, "record value size in bytes")
	fl.IntVar(&batch, "batch", 1, "records per append call")
	fl.IntVar(&writers, "writers", 64, "largest writer count of the sweep")
	fl.IntSliceVar(&levels, "levels", nil, "writer counts to run instead of 1, 2, 4 … --writers (e.g. 1,64)")
	fl.DurationVar(&duration, "duration", 1500*time.Millisecond, "timed time of each side per writer count")
	fl.StringVar(&floor, "floor", bench.FloorPlain, "baseline of each level: plain, reserved, payload, preallocated, zeroed or spare (see bench write --floor)")
	fl.BoolVar(&paired, "paired", false, "run --writers writers against seglog's own single writer in alternating rounds (one result: the group-commit speedup)")
	limitSizeFlags(cmd)
	limitFlag(cmd, "writers", 1, 4096)
	limitFlag(cmd, "levels", 1, 4096)
	limitDuration(cmd, "duration", 1, math.MaxInt64)
	oneOf(cmd, "floor", benchFloors...)
	// --levels replaces the sweep up to --writers; --paired runs
	// --writers against one writer, with neither levels nor a floor.
	notWith(cmd, "levels", "writers")
	notWith(cmd, "paired", "levels", "floor")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := benchOptions(cmd, lf, out, []int{size}, batch)
		if err != nil {
			return err
		}
		ctx, cancel := benchContext(cmd)
		defer cancel()
		results, err := bench.RunDurable(ctx, out.env(cmd), bench.DurableConfig{
			Options: opts, RecordSize: size, Batch: batch, MaxWriters: writers, Writers: levels,
			Duration: duration, Rounds: out.rounds, Floor: floor, Paired: paired,
		})
		if err != nil {
			return err
		}
		return out.report(cmd, fmt.Sprintf("seglog bench durable: %d B × %d per append, sync always", size, batch), results)
	}
	return cmd
}

// isTerminalFile reports whether w is a character device (a terminal), so
// a progress bar is drawn only for a person watching.
func isTerminalFile(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
