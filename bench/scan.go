package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// ScanConfig is the scan workload: a sequential read of every record of a
// warm log of LogBytes, written untimed as batches of Batch records of
// RecordSize bytes.
type ScanConfig struct {
	// Options configures the Log. Logger defaults to discarding.
	Options seglog.Options
	// RecordSize and Batch shape the batches written. Defaults 1024, 100.
	RecordSize, Batch int
	// LogBytes is the size of the log read in each round. Default 256 MiB.
	LogBytes int64
	// Mode is ScanRecords (Log.Records, default) or ScanRead (Log.Read of
	// FetchBytes at a time, each slice's bytes read and parsed with
	// record.Iterator).
	Mode string
	// FetchBytes is each Read's maxBytes in ScanRead mode. Default 1 MiB.
	FetchBytes int
	// Rounds is the number of timed rounds of each side. Default 5.
	Rounds int
	// MinRound is the least time a round lasts: it reads the log again
	// until that much time has passed. Default 1 s.
	MinRound time.Duration
	// FloorCRC makes the floor validate each batch (framing and CRC-32C)
	// before iterating it, as Records does: the floor issue 32's Records
	// target names, so that the distance left is the log's own per-record
	// work and not the check.
	FloorCRC bool
}

// Scan modes.
const (
	ScanRecords = "records"
	ScanRead    = "read"
)

// scanChunk is how much of a file the raw side reads per pread: the
// engine's scan window, small enough that what one pread copies is still
// in the CPU cache when it is parsed (1 MiB chunks ran 25% slower here).
const scanChunk = 256 << 10

func (c *ScanConfig) setDefaults() error {
	if c.Mode == "" {
		c.Mode = ScanRecords
	}
	if c.MinRound == 0 {
		c.MinRound = time.Second
	}
	if c.Mode != ScanRecords && c.Mode != ScanRead {
		return invalid("scan mode %q: want %s or %s", c.Mode, ScanRecords, ScanRead)
	}
	return warmLogDefaults(&c.Options, &c.RecordSize, &c.Batch, &c.LogBytes, &c.FetchBytes, &c.Rounds)
}

// RunScan reads every record of a warm log, through Log.Records (or
// Log.Read + parse), against the raw floor: pread of the same segment
// files 256 KiB at a time and record.Iterator over each batch in the
// buffer, with no log logic and no CRC check. Both sides touch every
// record's value. The warm-up round of each side checks the offsets.
func RunScan(ctx context.Context, env Env, cfg ScanConfig) (*Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	w, err := openFilled(ctx, env, "scan", cfg.Options, cfg.RecordSize, cfg.Batch, cfg.LogBytes)
	if err != nil {
		return nil, err
	}
	defer w.close()
	l, r := w.l, w.r
	var files []vfs.File
	for _, s := range l.Segments() {
		f, err := fs.Open(filepath.Join(l.Dir(), segment.FileName(s.BaseOffset, segment.LogSuffix)))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		files = append(files, f)
	}
	want := l.EndOffset() - l.StartOffset()
	res := &Result{
		Workload: "scan", Mode: cfg.Mode, RecordBytes: cfg.RecordSize, Batch: cfg.Batch, Writers: 1,
		Sync: cfg.Options.Sync.String(), Compression: cfg.Options.Compression.String(),
		Baseline: "pread of the segment files 256 KiB at a time + record.Iterator over each batch (no CRC check)",
	}
	if cfg.FloorCRC {
		res.Baseline = "pread of the segment files 256 KiB at a time + each batch's CRC-32C checked + record.Iterator over it"
	}
	r.begin(fmt.Sprintf("scan %s: %d B × %d, %d MiB", cfg.Mode, cfg.RecordSize, cfg.Batch, cfg.LogBytes>>20), 2*int64(cfg.Rounds+1)*cfg.MinRound.Milliseconds(), true)
	defer r.end()
	engLat, baseLat := newRecorder(), newRecorder()
	// repeat reads the whole log with pass, checking each read, as many
	// times as fill a round of at least MinRound.
	repeat := func(side string, pass func() (n, sum int64, err error)) (st roundStat, passes int64, err error) {
		var n, sum int64
		st.wall, st.cpu, err = timed(func() error {
			t0 := time.Now()
			for passes == 0 || time.Since(t0) < cfg.MinRound {
				passes++
				pn, psum, err := pass()
				if err != nil {
					return err
				}
				if pn != want || psum != pn*int64(cfg.RecordSize) {
					return verifyErr("%s read %d records with %d value bytes, want %d records of %d bytes", side, pn, psum, want, cfg.RecordSize)
				}
				n, sum = n+pn, sum+psum
			}
			return nil
		})
		if err == nil {
			st.records, st.bytes = n, sum
		}
		return st, passes, err
	}
	engine := func(round int) (roundStat, error) {
		st, n, err := repeat("seglog", func() (int64, int64, error) {
			if cfg.Mode == ScanRead {
				return scanRead(l, cfg.FetchBytes, r)
			}
			return scanRecords(l, r)
		})
		if err != nil {
			return st, err
		}
		engLat.record(st.wall / time.Duration(n))
		st.stored = n * l.Size()
		res.Verified += st.records
		return st, nil
	}
	buf := make([]byte, scanChunk+cfg.Options.MaxBatchBytes+record.DefaultMaxBatchSize)
	var it record.Iterator
	baseline := func(round int) (roundStat, error) {
		st, n, err := repeat("raw", func() (pn, psum int64, err error) {
			for _, f := range files {
				c, s, err := rawScanCRC(f, buf, &it, r, cfg.FloorCRC)
				if err != nil {
					return 0, 0, err
				}
				pn, psum = pn+c, psum+s
			}
			return pn, psum, nil
		})
		if err != nil {
			return st, err
		}
		baseLat.record(st.wall / time.Duration(n))
		return st, nil
	}
	a, b, err := r.interleave(ctx, cfg.Rounds, engine, baseline)
	if err != nil {
		return nil, err
	}
	summarize(res, a, b)
	res.Latency, res.BaselineLatency = engLat.summary(), baseLat.summary()
	res.Samples = r.takeSamples()
	return res, nil
}

// scanRecords reads l from its start with Records, touching every
// record's value.
func scanRecords(l *seglog.Log, r *runner) (n, sum int64, err error) {
	for rec, err := range l.Records(l.StartOffset()) {
		if err != nil {
			return 0, 0, err
		}
		sum += int64(len(rec.Value))
		n++
		if n%4096 == 0 {
			r.add(4096, 0)
		}
	}
	return n, sum, nil
}

// scanRead reads l from its start with Read of fetch bytes at a time,
// copies each slice's bytes out and parses them with record.Iterator, as
// a consumer of Read would.
func scanRead(l *seglog.Log, fetch int, r *runner) (n, sum int64, err error) {
	var it record.Iterator
	var buf []byte
	for off := l.StartOffset(); off < l.EndOffset(); {
		sl, err := l.Read(off, fetch, seglog.ReadOptions{})
		if err != nil {
			return n, sum, err
		}
		if int64(cap(buf)) < sl.Len() {
			buf = make([]byte, sl.Len())
		}
		b := buf[:sl.Len()]
		_, err = sl.ReadAt(b, 0)
		last := sl.LastOffset()
		sl.Close()
		if err != nil {
			return n, sum, err
		}
		for len(b) >= record.LogOverhead {
			size := int(record.Batch(b).BatchLength()) + record.LogOverhead
			if size > len(b) {
				break
			}
			if err := it.Reset(record.Batch(b[:size])); err != nil {
				return n, sum, err
			}
			for it.Next() {
				sum += int64(len(it.Record().Value))
				n++
			}
			if err := it.Err(); err != nil {
				return n, sum, err
			}
			b = b[size:]
		}
		r.add(last+1-off, 0)
		off = last + 1
	}
	return n, sum, nil
}

// rawScanCRC reads f front to back scanChunk bytes at a time into buf and
// iterates the records of every batch in it: the floor of a sequential
// read. A batch cut by the end of the buffer is moved to its front. It is
// a raw loop on purpose, not the engine's framing scanner (segment): the
// floor is what a read costs without the checks the engine makes (length
// bounds, legacy entries, damage), so using the scanner here would measure
// the engine against itself. With crc set it also validates each batch
// (framing and CRC-32C) as the engine's reads do.
func rawScanCRC(f vfs.File, buf []byte, it *record.Iterator, r *runner, crc bool) (n, sum int64, err error) {
	size, err := f.Size()
	if err != nil {
		return 0, 0, err
	}
	var pos int64 // file position of buf[0]
	have := 0
	for pos+int64(have) < size {
		want := min(int64(len(buf)-have), size-pos-int64(have), scanChunk)
		got, err := f.ReadAt(buf[have:have+int(want)], pos+int64(have))
		if int64(got) < want {
			return n, sum, fmt.Errorf("raw scan: short read: %w", err)
		}
		have += got
		b := buf[:have]
		for len(b) >= record.LogOverhead {
			bs := int(record.Batch(b).BatchLength()) + record.LogOverhead
			if bs > len(b) {
				break
			}
			if crc {
				if err := record.Batch(b[:bs]).Validate(); err != nil {
					return n, sum, err
				}
			}
			if err := it.Reset(record.Batch(b[:bs])); err != nil {
				return n, sum, err
			}
			c := int64(0)
			for it.Next() {
				sum += int64(len(it.Record().Value))
				c++
			}
			if err := it.Err(); err != nil {
				return n, sum, err
			}
			n += c
			r.add(c, 0)
			b = b[bs:]
		}
		consumed := have - len(b)
		copy(buf, b)
		pos += int64(consumed)
		have = len(b)
	}
	return n, sum, nil
}
