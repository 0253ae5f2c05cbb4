package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

func init() { register(newDemoCmd) }

// demoSegmentBytes is demo's default segment size: small enough that the
// default million records roll through several segments.
const demoSegmentBytes = 16 << 20

func newDemoCmd() *cobra.Command {
	var cfg demoConfig
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Write, reopen, read back and verify a log, and report how fast it went",
		Long: `Run the log through its main job in a temporary directory (removed
afterwards, unless --dir names one, which must be empty or absent):

  1. append --records records with values of --size bytes, --batch per batch,
     with segments of --segment-bytes (default 16 MiB, so it rolls), then close;
  2. reopen, read every record back and check its offset, key, value and
     timestamp;
  3. look up random records by timestamp (OffsetForTime);
  4. truncate at a random offset, append the lost records again, read them
     back, close, reopen and check the end offset.

It prints what it did, the write and read rates (records/s and MB/s of
stored batches), the segment count and the directory's size. Any failed
check exits with status 1 (and keeps the temporary directory for a look).`,
		Args: cobra.NoArgs,
	}
	lf := bindLogFlags(cmd)
	setDefault(cmd, "segment-bytes", strconv.Itoa(demoSegmentBytes))
	cmd.Flags().Int64Var(&cfg.records, "records", 1_000_000, "records to write")
	cmd.Flags().IntVar(&cfg.size, "size", 100, "value size in bytes")
	cmd.Flags().IntVar(&cfg.batch, "batch", 100, "records per batch")
	cmd.Flags().StringVar(&cfg.dir, "dir", "", "run in this directory and keep it (default: a temporary one, removed)")
	cmd.Flags().Uint64Var(&cfg.seed, "seed", 0, "seed for the random offsets and timestamps checked (default: from the clock)")
	limitFlag(cmd, "records", 1, math.MaxInt64)
	limitFlag(cmd, "batch", 1, math.MaxInt32) // a batch's record count is a 32-bit field
	checkedBy(cmd, "demo", "size")            // up to --max-batch-bytes
	anyValue(cmd, "seed")                     // 0: from the clock
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := lf.options(cmd)
		if err != nil {
			return err
		}
		if cfg.size < 0 || cfg.size > opts.MaxBatchBytes {
			return usageErrorf(cmd, "invalid --size %d: must be from 0 to --max-batch-bytes %d", cfg.size, opts.MaxBatchBytes)
		}
		if cfg.seed == 0 {
			cfg.seed = uint64(time.Now().UnixNano())
		}
		cfg.opts = opts
		cfg.out = cmd.OutOrStdout()
		return runDemo(&cfg)
	}
	return cmd
}

// demoConfig is what demo was asked to do.
type demoConfig struct {
	records int64
	size    int
	batch   int
	dir     string
	seed    uint64
	opts    seglog.Options
	out     io.Writer
}

// errVerify marks a failed check, as opposed to an operational error.
var errVerify = errors.New("demo: verification failed")

func runDemo(cfg *demoConfig) error {
	fs := vfs.Default
	dir, temp := cfg.dir, cfg.dir == ""
	if temp {
		var err error
		if dir, err = makeTempDir(fs, "seglog-demo"); err != nil {
			return err
		}
	} else if names, err := fs.List(dir); err == nil && len(names) > 0 {
		return fmt.Errorf("--dir %s is not empty", dir)
	}
	d := &demo{demoConfig: cfg, dir: dir, rng: rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))}
	d.base = time.Now().UnixMilli()
	d.pattern = make([]byte, 4096+cfg.size)
	for i := range d.pattern {
		d.pattern[i] = 'a' + byte(d.rng.IntN(8))
	}
	fmt.Fprintf(cfg.out, "seglog demo: %d records of %d+%d bytes (key+value), %d per batch, codec %s, sync %s, segments of %s, in %s (seed %d)\n",
		cfg.records, keyLen, cfg.size, cfg.batch, cfg.opts.Compression, cfg.opts.Sync, humanBytes(cfg.opts.SegmentBytes), dir, cfg.seed)
	err := d.run()
	switch {
	case err != nil && temp && errors.Is(err, errVerify):
		fmt.Fprintf(cfg.out, "kept %s for inspection\n", dir)
	case temp:
		rerr := vfs.RemoveAll(fs, dir)
		if rerr == nil {
			fmt.Fprintf(cfg.out, "removed the temporary directory %s\n", dir)
		} else if err == nil {
			err = rerr
		}
	}
	return err
}

// demo is one run's state.
type demo struct {
	*demoConfig
	dir     string
	rng     *rand.Rand
	base    int64  // timestamp of record 0 under CreateTime; record i has base+i
	pattern []byte // the values are windows of it
	key     []byte
	val     []byte
}

// keyLen is the size of demo's keys: "key-" and ten digits.
const keyLen = 14

func (d *demo) appendKey(dst []byte, i int64) []byte {
	dst = append(dst, "key-"...)
	var digits [20]byte
	s := strconv.AppendInt(digits[:0], i%1e10, 10)
	for range 10 - len(s) {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// appendValue appends record i's value: i, little endian, in its first
// eight bytes (so values differ as far as their size allows) and then a
// window of the pattern.
func (d *demo) appendValue(dst []byte, i int64) []byte {
	var id [8]byte
	for k := range id {
		id[k] = byte(i >> (8 * k))
	}
	n := min(d.size, len(id))
	dst = append(dst, id[:n]...)
	at := int(uint64(i) * 2654435761 % 4096)
	return append(dst, d.pattern[at:at+d.size-n]...)
}

func (d *demo) run() error {
	l, err := seglog.Open(d.dir, d.opts)
	if err != nil {
		return err
	}
	t0 := time.Now()
	bytesWritten, err := d.write(l, 0, d.records)
	if err != nil {
		l.Close()
		return err
	}
	wrote := time.Since(t0)
	t1 := time.Now()
	if err := l.Close(); err != nil {
		return err
	}
	closed := time.Since(t1)
	fmt.Fprintf(d.out, "write:    %d records, %s of batches in %v: %s records/s, %.1f MB/s (close %v)\n",
		d.records, humanBytes(bytesWritten), round(wrote), rate(float64(d.records), wrote), mbps(bytesWritten, wrote), round(closed))

	t2 := time.Now()
	if l, err = seglog.Open(d.dir, d.opts); err != nil {
		return err
	}
	defer func() {
		if l != nil {
			l.Close()
		}
	}()
	fmt.Fprintf(d.out, "reopen:   %v, %d segments, offsets [%d, %d)\n", round(time.Since(t2)), l.NumSegments(), l.StartOffset(), l.EndOffset())
	if l.StartOffset() != 0 || l.EndOffset() != d.records {
		return fmt.Errorf("%w: reopened log holds [%d, %d), want [0, %d)", errVerify, l.StartOffset(), l.EndOffset(), d.records)
	}

	t3 := time.Now()
	if err := d.verify(l, 0, d.records); err != nil {
		return err
	}
	read := time.Since(t3)
	fmt.Fprintf(d.out, "read:     %d records in %v: %s records/s, %.1f MB/s; offsets, keys, values and timestamps verified\n",
		d.records, round(read), rate(float64(d.records), read), mbps(l.Size(), read))

	if err := d.offsetForTime(l); err != nil {
		return err
	}
	if err := d.truncate(l); err != nil {
		return err
	}
	segs, logBytes := l.NumSegments(), l.Size()
	err = l.Close()
	l = nil
	if err != nil {
		return err
	}
	if l, err = seglog.Open(d.dir, d.opts); err != nil {
		return err
	}
	if l.EndOffset() != d.records {
		return fmt.Errorf("%w: after truncation and reopen the log ends at %d, want %d", errVerify, l.EndOffset(), d.records)
	}
	dirBytes, err := dirSize(vfs.Default, d.dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "log:      %d segments, %s of batches, %s on disk in %s\n", segs, humanBytes(logBytes), humanBytes(dirBytes), d.dir)
	fmt.Fprintln(d.out, "all checks passed")
	return nil
}

// write appends records [from, to) in batches and returns the stored bytes.
func (d *demo) write(l *seglog.Log, from, to int64) (int64, error) {
	recs := make([]record.Record, 0, d.batch)
	arena := make([]byte, 0, d.batch*(keyLen+d.size))
	var total int64
	for i := from; i < to; {
		recs, arena = recs[:0], arena[:0]
		// Batches start at multiples of d.batch, so truncation lands on
		// a known boundary.
		end := min(to, (i/int64(d.batch)+1)*int64(d.batch))
		for j := i; j < end; j++ {
			k := len(arena)
			arena = d.appendKey(arena, j)
			v := len(arena)
			arena = d.appendValue(arena, j)
			recs = append(recs, record.Record{Timestamp: d.base + j, Key: arena[k:v:v], Value: arena[v:len(arena):len(arena)]})
		}
		info, err := l.Append(recs...)
		if err != nil {
			return total, fmt.Errorf("appending records %d..%d: %w", i, end-1, err)
		}
		if info.FirstOffset != i || info.LastOffset != end-1 {
			return total, fmt.Errorf("%w: batch of records %d..%d got offsets %d..%d", errVerify, i, end-1, info.FirstOffset, info.LastOffset)
		}
		total += int64(info.Bytes)
		i = end
	}
	return total, nil
}

// verify reads [from, to) and checks every record against what was written.
func (d *demo) verify(l *seglog.Log, from, to int64) error {
	want := from
	for r, err := range l.Records(from) {
		if err != nil {
			return fmt.Errorf("reading at offset %d: %w", want, err)
		}
		if err := d.check(r, want); err != nil {
			return err
		}
		want++
	}
	if want != to {
		return fmt.Errorf("%w: read records up to offset %d, want %d", errVerify, want, to)
	}
	return nil
}

// check compares r with record i as written.
func (d *demo) check(r record.Record, i int64) error {
	d.key = d.appendKey(d.key[:0], i)
	d.val = d.appendValue(d.val[:0], i)
	switch {
	case r.Offset != i:
		return fmt.Errorf("%w: record %d read at offset %d", errVerify, i, r.Offset)
	case !bytes.Equal(r.Key, d.key):
		return fmt.Errorf("%w: offset %d: key %q, want %q", errVerify, i, r.Key, d.key)
	case !bytes.Equal(r.Value, d.val):
		return fmt.Errorf("%w: offset %d: value differs from the one written", errVerify, i)
	case len(r.Headers) != 0:
		return fmt.Errorf("%w: offset %d: %d headers, none written", errVerify, i, len(r.Headers))
	case d.opts.TimestampType == record.CreateTime && r.Timestamp != d.base+i:
		return fmt.Errorf("%w: offset %d: timestamp %d, want %d", errVerify, i, r.Timestamp, d.base+i)
	}
	return nil
}

// timestampAt returns the timestamp of the record at offset off. It
// returns no Record: a record's bytes are valid only in the loop body.
func timestampAt(l *seglog.Log, off int64) (int64, error) {
	for r, err := range l.Records(off) {
		if err != nil {
			return 0, err
		}
		return r.Timestamp, nil
	}
	return 0, fmt.Errorf("%w: no record at offset %d", errVerify, off)
}

// offsetForTime looks up random records by their timestamp: the answer
// must be the first offset whose timestamp reaches it.
func (d *demo) offsetForTime(l *seglog.Log) error {
	const lookups = 20
	start := time.Now()
	for range lookups {
		o := d.rng.Int64N(d.records)
		ts, err := timestampAt(l, o)
		if err != nil {
			return err
		}
		got, err := l.OffsetForTime(ts)
		if err != nil {
			return fmt.Errorf("%w: OffsetForTime(%d) of offset %d: %w", errVerify, ts, o, err)
		}
		if got > o {
			return fmt.Errorf("%w: OffsetForTime(%d) = %d, after offset %d which has that timestamp", errVerify, ts, got, o)
		}
		if d.opts.TimestampType == record.CreateTime && got != o {
			return fmt.Errorf("%w: OffsetForTime(%d) = %d, want %d", errVerify, ts, got, o)
		}
		at, err := timestampAt(l, got)
		if err != nil {
			return err
		}
		if at < ts {
			return fmt.Errorf("%w: OffsetForTime(%d) = %d, whose timestamp %d is earlier", errVerify, ts, got, at)
		}
		if got > 0 {
			prev, err := timestampAt(l, got-1)
			if err != nil {
				return err
			}
			if prev >= ts {
				return fmt.Errorf("%w: OffsetForTime(%d) = %d, but offset %d already has timestamp %d", errVerify, ts, got, got-1, prev)
			}
		}
	}
	fmt.Fprintf(d.out, "lookup:   %d random OffsetForTime lookups verified in %v\n", lookups, round(time.Since(start)))
	return nil
}

// truncate cuts the log at a random offset, checks where it ended, appends
// the lost records again and reads them back.
func (d *demo) truncate(l *seglog.Log) error {
	if d.records < 2 {
		fmt.Fprintln(d.out, "truncate: skipped (fewer than 2 records)")
		return nil
	}
	at := 1 + d.rng.Int64N(d.records-1)
	if err := l.TruncateTo(at); err != nil {
		return err
	}
	// A batch is never split: the log ends at the start of the batch that
	// held at, and batches start at multiples of d.batch.
	end := l.EndOffset()
	if want := at - at%int64(d.batch); end != want {
		return fmt.Errorf("%w: TruncateTo(%d) left the log ending at %d, want %d", errVerify, at, end, want)
	}
	for _, err := range l.Records(end) {
		if err != nil {
			return fmt.Errorf("reading at the new end %d: %w", end, err)
		}
		return fmt.Errorf("%w: a record remains at or after the new end %d", errVerify, end)
	}
	if end > 0 {
		if err := d.verify(l, end-1, end); err != nil {
			return err
		}
	}
	if _, err := d.write(l, end, d.records); err != nil {
		return err
	}
	if l.EndOffset() != d.records {
		return fmt.Errorf("%w: re-appending after truncation ended at %d, want %d", errVerify, l.EndOffset(), d.records)
	}
	if err := d.verify(l, end, d.records); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "truncate: TruncateTo(%d) ended the log at %d; %d records appended again and verified\n", at, end, d.records-end)
	return nil
}

// makeTempDir creates a new directory under the system's temporary
// directory. vfs has no MkdirTemp, so a random name is checked first.
func makeTempDir(fs vfs.FS, prefix string) (string, error) {
	for range 100 {
		name := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d-%08x", prefix, os.Getpid(), rand.Uint32()))
		if _, err := fs.Stat(name); err == nil {
			continue
		}
		if err := fs.MkdirAll(name); err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("no free temporary directory name under %s", os.TempDir())
}

// dirSize sums the sizes of the files directly in dir.
func dirSize(fs vfs.FS, dir string) (int64, error) {
	names, err := fs.List(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, name := range names {
		fi, err := fs.Stat(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		if !fi.IsDir() {
			n += fi.Size()
		}
	}
	return n, nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func rate(n float64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return strconv.FormatFloat(n/d.Seconds(), 'f', 0, 64)
}

func mbps(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / 1e6 / d.Seconds()
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond / 10) }
