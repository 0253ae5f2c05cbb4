package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// WriteConfig is the write workload: writers append batches of Batch
// records of RecordSize bytes each until Records records (or Duration of
// time) per round-set are written.
type WriteConfig struct {
	// Options configures the engine's Log (Sync, Compression, segment
	// sizes, ...). Logger defaults to discarding.
	Options seglog.Options
	// RecordSize is each record's value size in bytes (no key). Default 1024.
	RecordSize int
	// Batch is records per append call. Default 100.
	Batch int
	// Records is the total the engine writes over the timed rounds (the
	// baseline writes as many bytes); each round writes Records/Rounds,
	// rounded up to whole batches per writer. Zero means use Duration.
	Records int64
	// Duration bounds each side's timed rounds in total when Records is
	// zero: each round runs Duration/Rounds.
	Duration time.Duration
	// Writers is the number of concurrent appenders. Default 1.
	Writers int
	// Producer makes writers append pre-built producer batches with
	// Log.AppendBatch, as a broker stores a Kafka client's batches, rather
	// than records with Log.Append.
	Producer bool
	// Rounds is the number of timed rounds of each side. Default 5.
	Rounds int
	// Floor is the baseline: FloorPlain (default), FloorReserved,
	// FloorPayload, FloorPreallocated, FloorZeroed or FloorSpare (see
	// their doc). The floors other than plain support SyncNone and
	// SyncAlways.
	Floor string

	// stop ends a round's appends early once the run is cancelled, so
	// that Ctrl-C does not wait out a long --duration round; set by
	// runWrite from its context.
	stop <-chan struct{}
}

func (c *WriteConfig) setDefaults() error {
	if c.RecordSize == 0 {
		c.RecordSize = 1024
	}
	if c.Batch == 0 {
		c.Batch = 100
	}
	if c.Writers == 0 {
		c.Writers = 1
	}
	if c.Rounds == 0 {
		c.Rounds = 5
	}
	switch {
	case c.RecordSize < 0:
		return invalid("record size %d", c.RecordSize)
	case c.Batch < 0:
		return invalid("batch %d", c.Batch)
	case c.Writers < 0 || c.Writers > 4096:
		return invalid("writers %d: want 1..4096", c.Writers)
	case c.Rounds < 0:
		return invalid("rounds %d", c.Rounds)
	case c.Records < 0 || c.Duration < 0:
		return invalid("records %d, duration %v: must not be negative", c.Records, c.Duration)
	case c.Records == 0 && c.Duration == 0:
		return invalid("neither records nor duration set")
	}
	if c.Floor == "" {
		c.Floor = FloorPlain
	}
	if err := checkFloor(c.Floor); err != nil {
		return err
	}
	if c.Floor != FloorPlain && c.Options.Sync == seglog.SyncPeriodic {
		return invalid("floor %s with sync periodic: the floors other than plain sync never or after each call", c.Floor)
	}
	return setLogger(&c.Options)
}

// callsPerWriter is how many append calls each writer makes per round
// when the run is bounded by Records.
func (c *WriteConfig) callsPerWriter() int64 {
	per := int64(c.Batch) * int64(c.Writers) * int64(c.Rounds)
	return max(1, (c.Records+per-1)/per)
}

// RunWrite runs the write workload against the raw floor: a plain file
// append of the same batch bytes with one write per batch and the same
// fsync policy.
func RunWrite(ctx context.Context, env Env, cfg WriteConfig) (*Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	r := newRunner(env)
	res, err := runWrite(ctx, r, env, cfg, "write")
	if err != nil {
		return nil, err
	}
	res.Samples = r.takeSamples()
	return res, nil
}

func runWrite(ctx context.Context, r *runner, env Env, cfg WriteConfig, workload string) (*Result, error) {
	dir, err := env.tempDir(workload)
	if err != nil {
		return nil, err
	}
	defer vfs.RemoveAll(fs, dir)
	cfg.stop = ctx.Done()

	// Each writer gets its own values and pre-built batches, built before
	// anything is timed.
	pool := valuePool(cfg.RecordSize, 1)
	curs := make([]*valueCursor, cfg.Writers)
	batches := make([][][]byte, cfg.Writers)
	for w := range cfg.Writers {
		curs[w] = &valueCursor{pool: pool, size: cfg.RecordSize, pos: (w * 7919 * (cfg.RecordSize + 1)) % poolBytes}
		c := *curs[w]
		if batches[w], err = buildBatches(&c, batchesFor(cfg.Writers, cfg.Batch, cfg.RecordSize), cfg.Batch, cfg.Options.Compression); err != nil {
			return nil, err
		}
	}

	mode := "append"
	if cfg.Producer {
		mode = "batch"
	}
	res := &Result{
		Workload: workload, Mode: mode, RecordBytes: cfg.RecordSize, Batch: cfg.Batch,
		Writers: cfg.Writers, Sync: cfg.Options.Sync.String(), Compression: cfg.Options.Compression.String(),
		Baseline: floorDescription(cfg.Floor, cfg.Options),
	}
	var total int64
	byTime := cfg.Records == 0
	if byTime {
		total = 2 * int64(cfg.Rounds+1) * (cfg.Duration / time.Duration(cfg.Rounds)).Milliseconds()
	} else {
		total = 2 * int64(cfg.Rounds+1) * cfg.callsPerWriter() * int64(cfg.Writers*cfg.Batch)
	}
	r.begin(fmt.Sprintf("%s %d B × %d, %d writer(s), sync %s%s", workload, cfg.RecordSize, cfg.Batch, cfg.Writers, res.Sync, floorName(cfg.Floor)), total, byTime)
	defer r.end()

	engLat, baseLat := newRecorder(), newRecorder()
	engine := func(round int) (roundStat, error) {
		st, v, err := engineWriteRound(r, cfg, filepath.Join(dir, fmt.Sprintf("log-%d", round+1)), curs, batches, engLat, round >= 0)
		res.Verified += v
		return st, err
	}
	baseline := func(round int) (roundStat, error) {
		if cfg.Floor != FloorPlain {
			st, err := floorWriteRound(r, cfg, filepath.Join(dir, fmt.Sprintf("raw-%d", round+1)), curs, baseLat, round >= 0)
			if round >= 0 {
				res.SpareZeroed += st.zeroedSegs
				res.SparePreallocated += st.preallocatedSegs
			}
			return st, err
		}
		return baselineWriteRound(r, cfg, filepath.Join(dir, fmt.Sprintf("raw-%d", round+1)), batches, baseLat, round >= 0)
	}
	a, b, err := r.interleave(ctx, cfg.Rounds, engine, baseline)
	if err != nil {
		return nil, err
	}
	summarize(res, a, b)
	res.Latency, res.BaselineLatency = engLat.summary(), baseLat.summary()
	if cfg.Floor == FloorSpare {
		res.Baseline += fmt.Sprintf("; in the timed rounds %d segments began in a zeroed file, %d in a fallocated one", res.SpareZeroed, res.SparePreallocated)
	}
	return res, nil
}

func syncNote(o seglog.Options) string {
	switch o.Sync {
	case seglog.SyncAlways:
		return ", fdatasync after each write (writers take turns: no group commit)"
	case seglog.SyncPeriodic:
		return fmt.Sprintf(", fdatasync in the background every %d bytes / %v", o.SyncBytes, o.SyncInterval)
	}
	return ", no fsync"
}

// budget hands out append calls: a fixed number per writer, or until a
// deadline. A writer always makes its first call, even past the deadline,
// so that no round (of a tiny --duration on a slow machine) measures and
// verifies nothing.
type budget struct {
	calls    int64
	deadline time.Time
	stop     <-chan struct{}
}

func (b budget) more(done int64) bool {
	if done > 0 && b.stop != nil {
		select {
		case <-b.stop:
			return false // the run was cancelled: interleave reports it
		default:
		}
	}
	if !b.deadline.IsZero() {
		return done == 0 || time.Now().Before(b.deadline)
	}
	return done < b.calls
}

func (cfg *WriteConfig) budget() budget {
	if cfg.Records > 0 {
		return budget{calls: cfg.callsPerWriter(), stop: cfg.stop}
	}
	return budget{deadline: time.Now().Add(cfg.Duration / time.Duration(cfg.Rounds)), stop: cfg.stop}
}

// runWriters runs one goroutine per writer and returns the first error.
func runWriters(n int, f func(w int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for w := range n {
		wg.Go(func() { errs[w] = f(w) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// engineWriteRound opens a fresh log in dir, times the writers, then
// (untimed) reads every record back, closes and removes the log.
func engineWriteRound(r *runner, cfg WriteConfig, dir string, curs []*valueCursor, batches [][][]byte, lat *recorder, timedRound bool) (roundStat, int64, error) {
	l, err := seglog.Open(dir, cfg.Options)
	if err != nil {
		return roundStat{}, 0, err
	}
	defer vfs.RemoveAll(fs, dir)
	lats := make([]*recorder, cfg.Writers)
	var stored atomic.Int64
	var st roundStat
	st.wall, st.cpu, err = timed(func() error {
		bud := cfg.budget()
		return runWriters(cfg.Writers, func(w int) error {
			lats[w] = newRecorder()
			recs := make([]record.Record, cfg.Batch)
			own := make([][]byte, len(batches[w]))
			for i, b := range batches[w] {
				own[i] = append([]byte(nil), b...) // AppendBatch rewrites in place
			}
			cur := curs[w]
			var n, bytes int64
			for ; bud.more(n); n++ {
				var info seglog.AppendInfo
				var err error
				if cfg.Producer {
					b := record.Batch(own[n%int64(len(own))])
					b.SetBaseOffset(0) // a fresh producer batch, as it arrives
					t := time.Now()
					info, err = l.AppendBatch(b)
					lats[w].record(time.Since(t))
				} else {
					for i := range recs {
						recs[i].Value = cur.next()
					}
					t := time.Now()
					info, err = l.Append(recs...)
					lats[w].record(time.Since(t))
				}
				if err != nil {
					return err
				}
				bytes += int64(info.Bytes)
				r.add(int64(cfg.Batch), int64(cfg.Batch*cfg.RecordSize))
			}
			stored.Add(bytes)
			return nil
		})
	})
	if err != nil {
		l.Close()
		return st, 0, err
	}
	r.idle()
	st.records = l.EndOffset() - l.StartOffset()
	st.bytes = st.records * int64(cfg.RecordSize)
	st.stored = stored.Load()
	if timedRound {
		for _, x := range lats {
			lat.merge(x)
		}
	}
	verified, err := verifyLog(l, st.records, cfg.RecordSize)
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	return st, verified, err
}

// verifyLog reads every record of l back and checks the count and each
// value's size.
func verifyLog(l *seglog.Log, want int64, size int) (int64, error) {
	var n int64
	next := l.StartOffset()
	for rec, err := range l.Records(l.StartOffset()) {
		if err != nil {
			return n, err
		}
		if rec.Offset != next {
			return n, verifyErr("record at offset %d, want %d", rec.Offset, next)
		}
		if len(rec.Value) != size {
			return n, verifyErr("record %d has a %d-byte value, want %d", rec.Offset, len(rec.Value), size)
		}
		next++
		n++
	}
	if n != want {
		return n, verifyErr("read back %d records, wrote %d", n, want)
	}
	return n, nil
}

// baselineWriteRound writes the pre-built batches to a plain file, one
// write per batch, with the engine's fsync policy; writers take turns on
// the file under a mutex, as there is no log logic to share a sync.
func baselineWriteRound(r *runner, cfg WriteConfig, path string, batches [][][]byte, lat *recorder, timedRound bool) (roundStat, error) {
	f, err := fs.Create(path)
	if err != nil {
		return roundStat{}, err
	}
	defer fs.Remove(path)
	defer f.Close()
	var (
		mu      sync.Mutex
		written int64 // guarded by mu
		pending int64 // bytes since the last periodic sync, guarded by mu
		kick    = make(chan struct{}, 1)
		done    = make(chan struct{})
		flushed = make(chan error, 1)
	)
	if cfg.Options.Sync == seglog.SyncPeriodic {
		go func() { flushed <- periodicSyncer(f, cfg.Options.SyncInterval, kick, done) }()
	} else {
		close(flushed)
	}
	lats := make([]*recorder, cfg.Writers)
	var records atomic.Int64
	var st roundStat
	st.wall, st.cpu, err = timed(func() error {
		bud := cfg.budget()
		return runWriters(cfg.Writers, func(w int) error {
			lats[w] = newRecorder()
			var n int64
			defer func() { records.Add(n * int64(cfg.Batch)) }()
			for ; bud.more(n); n++ {
				b := batches[w][n%int64(len(batches[w]))]
				t := time.Now()
				mu.Lock()
				_, err := f.Write(b)
				if err == nil && cfg.Options.Sync == seglog.SyncAlways {
					err = f.Sync()
				}
				written += int64(len(b))
				pending += int64(len(b))
				if cfg.Options.Sync == seglog.SyncPeriodic && cfg.Options.SyncBytes > 0 && pending >= cfg.Options.SyncBytes {
					pending = 0
					select {
					case kick <- struct{}{}:
					default:
					}
				}
				mu.Unlock()
				lats[w].record(time.Since(t))
				if err != nil {
					return err
				}
				r.add(int64(cfg.Batch), int64(cfg.Batch*cfg.RecordSize))
			}
			return nil
		})
	})
	if cfg.Options.Sync == seglog.SyncPeriodic {
		close(done)
	}
	if ferr := <-flushed; err == nil {
		err = ferr
	}
	if err != nil {
		return st, err
	}
	r.idle()
	st.records = records.Load()
	st.bytes = st.records * int64(cfg.RecordSize)
	size, err := f.Size()
	if err != nil {
		return st, err
	}
	if size != written {
		return st, verifyErr("baseline file holds %d bytes, wrote %d", size, written)
	}
	st.stored = written
	if timedRound {
		for _, x := range lats {
			lat.merge(x)
		}
	}
	// The engine's Close flushes what it wrote; so must the baseline, so
	// the next round starts with no dirty pages from either.
	return st, f.Sync()
}

// periodicSyncer syncs f when kicked or every interval, until done.
func periodicSyncer(f interface{ Sync() error }, every time.Duration, kick, done <-chan struct{}) error {
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-done:
			return nil
		case <-kick:
		case <-tick:
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
}
