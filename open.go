package seglog

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Open opens the log in dir, creating the directory and an empty log if
// needed. It takes the directory's lock: a second Open of the same
// directory, in this process or another, fails with ErrLocked until Close.
//
// After a clean Close the segments are trusted as they are. Otherwise every
// segment from the one holding the recovery point on is scanned: batches are
// checked (framing, CRC-32C, increasing offsets), indexes rebuilt, and the
// log truncated at the first invalid or partial batch (a torn tail, logged),
// with any later segments deleted. Damage found below the recovery point —
// data that had been synced — is not dropped: Open fails with a
// *CorruptionError naming the file and byte position (see fsck).
// Leftover .deleted, .cleaned and .swap files are resolved as Kafka does.
func Open(dir string, opts Options) (*Log, error) {
	if opts.ReadOnly {
		return openReadOnly(dir, opts)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	fs := opts.FS
	if err := fs.MkdirAll(dir); err != nil {
		return nil, err
	}
	lock, err := fs.Lock(dir + "/" + LockFile)
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("%w: %s: %w", ErrLocked, dir, err)
		}
		return nil, err
	}
	l := &Log{
		dir:     dir,
		fs:      fs,
		opts:    opts,
		logger:  opts.Logger,
		lock:    lock,
		cache:   index.NewCache(opts.MaxMappedIndexes),
		logMaps: index.NewCache(opts.MaxMappedIndexes),
		segs:    newSegmentTree(),
	}
	if err := l.load(); err != nil {
		l.closeSegments()
		lock.Close()
		return nil, err
	}
	l.commit.init(l.recoveryPoint)
	l.activeJitter = l.drawJitter()
	l.startFlusher()
	return l, nil
}

// load reads the directory into l: leftovers, checkpoints, segments,
// recovery.
func (l *Log) load() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	clean := slices.Contains(names, CleanShutdownFile)
	if names, err = l.resolveLeftovers(names); err != nil {
		return err
	}
	files, bases := segmentFiles(names)
	if err := l.removeOrphans(files); err != nil {
		return err
	}

	logStart, haveLogStart, err := readOffsetCheckpoint(l.fs, l.dir, LogStartOffsetFile)
	if err != nil {
		return err
	}
	rp, haveRP, err := readOffsetCheckpoint(l.fs, l.dir, RecoveryPointFile)
	if err != nil {
		return err
	}
	if !haveRP {
		rp = 0
	}

	// Unclean: recover from the segment holding the recovery point.
	recoverFrom := len(bases)
	if !clean {
		recoverFrom = 0
		for i, b := range bases {
			if b <= rp {
				recoverFrom = i
			}
		}
	}
	for i := 0; i < len(bases); i++ {
		base := bases[i]
		last := i == len(bases)-1
		indexesPresent := files[base]&(hasIndex|hasTimeIndex) == hasIndex|hasTimeIndex
		if i < recoverFrom && indexesPresent {
			seg, err := segment.Open(l.fs, l.dir, base, last, l.segmentOptions())
			if err != nil {
				return err
			}
			l.segs.ReplaceOrInsert(segItem{base: base, seg: seg})
			l.active = seg
			continue
		}
		seg, truncated, err := l.recoverSegment(base, rp)
		if err != nil {
			return err
		}
		l.segs.ReplaceOrInsert(segItem{base: base, seg: seg})
		l.active = seg
		// A recovered segment that ends before the next one begins lost
		// its unsynced tail whole (no torn bytes to truncate): the same
		// loss as a truncation, so the same rule applies.
		if !last && seg.NextOffset() < bases[i+1] {
			truncated = true
		}
		if truncated && !last {
			// Kafka's rule: bytes lost in one segment make every later
			// segment unreachable, so they are deleted.
			for _, later := range bases[i+1:] {
				l.logger.Warn("seglog: deleting segment after a truncated one", "dir", l.dir, "base", later)
				if err := l.removeSegmentFiles(later); err != nil {
					return err
				}
			}
			bases = bases[:i+1]
			last = true
		}
		if last {
			if err := seg.Unseal(); err != nil {
				return err
			}
		}
	}

	if l.active == nil || (haveLogStart && l.active.NextOffset() < logStart) {
		// No segments, or all of them lie below the checkpointed start
		// (removed behind our back): start empty at the log start.
		start := int64(0)
		if haveLogStart {
			start = logStart
		}
		if l.active != nil {
			l.logger.Warn("seglog: every segment lies below the log start offset; starting empty", "dir", l.dir, "start", start)
			l.closeSegments()
			for _, b := range bases {
				if err := l.removeSegmentFiles(b); err != nil {
					return err
				}
			}
			l.segs.Clear(false)
		}
		seg, err := l.createSegment(start)
		if err != nil {
			return err
		}
		l.segs.ReplaceOrInsert(segItem{base: start, seg: seg})
		l.active = seg
	}
	first, _ := l.segs.Min()
	start := first.base
	if haveLogStart && logStart > start {
		start = logStart
	}
	l.start.Store(start)
	l.end.Store(l.active.NextOffset())
	end := l.end.Load()
	l.next = end

	if clean {
		l.recoveryPoint = end
		// The marker must be gone, durably, before anything is appended:
		// otherwise a crash later would skip the recovery it needs.
		if err := l.fs.Remove(l.path(CleanShutdownFile)); err != nil && !isNotExist(err) {
			return err
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	} else {
		l.recoveryPoint = min(rp, end)
	}
	return nil
}

// recoverSegment opens the segment at base for writing and runs recovery on
// it: scan, CRC check, index rebuild, truncation of a torn tail. Damage at
// offsets below the recovery point rp is returned as a *CorruptionError and
// nothing is truncated.
func (l *Log) recoverSegment(base, rp int64) (*segment.Segment, bool, error) {
	logPath := l.path(segment.FileName(base, segment.LogSuffix))
	if rp > base {
		if err := l.checkSynced(logPath, rp); err != nil {
			return nil, false, err
		}
	}
	// Opened as sealed: an active open would trust the old index and scan
	// the tail, which is what recovery is about to distrust. Recover makes
	// the indexes writable for the rebuild and seals them again.
	seg, err := segment.Open(l.fs, l.dir, base, false, l.segmentOptions())
	if err != nil {
		return nil, false, err
	}
	res, err := seg.Recover(l.opts.MaxBatchBytes)
	if err != nil {
		seg.Close()
		return nil, false, err
	}
	if res.TruncatedBytes > 0 {
		l.logger.Warn("seglog: truncated a torn or damaged tail during recovery",
			"file", logPath, "valid_bytes", res.ValidBytes, "truncated_bytes", res.TruncatedBytes, "reason", res.Reason)
	}
	return seg, res.TruncatedBytes > 0, nil
}

// checkSynced scans the batches of a .log file that lie below the recovery
// point. They were synced, so any damage there is real corruption, not a
// torn write, and must be reported rather than truncated away.
func (l *Log) checkSynced(path string, rp int64) error {
	f, err := l.fs.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := newBatchScanner(f, path, max(l.opts.MaxBatchBytes, 1<<20))
	if err != nil {
		return err
	}
	for {
		at := s.pos
		b, err := s.next(true)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			var ce *CorruptionError
			if errors.As(err, &ce) && ce.Pos == at {
				return fmt.Errorf("seglog: recovery found damage below the recovery point %d (run seglog fsck): %w", rp, err)
			}
			return err
		}
		if entryLastOffset(b)+1 >= rp {
			return nil
		}
	}
}

// resolveLeftovers finishes or undoes what a crash interrupted, as Kafka's
// loader does: .deleted files are deleted; a .swap at or above the lowest
// .cleaned base belongs to an unfinished compaction and is deleted with all
// .cleaned files; remaining .swap files replace the segments they cover;
// checkpoint .tmp files are deleted. It returns the directory listing
// afterwards.
func (l *Log) resolveLeftovers(names []string) ([]string, error) {
	minCleaned := int64(math.MaxInt64)
	var swaps []string
	changed := false
	remove := func(n string) error {
		changed = true
		if err := l.fs.Remove(l.path(n)); err != nil && !isNotExist(err) {
			return err
		}
		return nil
	}
	for _, n := range names {
		if strings.HasSuffix(n, checkpointTmpSuffix) {
			if err := remove(n); err != nil {
				return nil, err
			}
			continue
		}
		base, suffix, ok := segment.ParseFileName(n)
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(suffix, segment.DeletedSuffix):
			if err := remove(n); err != nil {
				return nil, err
			}
		case strings.HasSuffix(suffix, segment.CleanedSuffix):
			minCleaned = min(minCleaned, base)
		case strings.HasSuffix(suffix, segment.SwapSuffix):
			swaps = append(swaps, n)
		}
	}
	var keep []string
	for _, n := range swaps {
		base, _, _ := segment.ParseFileName(n)
		if base >= minCleaned {
			if err := remove(n); err != nil {
				return nil, err
			}
			continue
		}
		keep = append(keep, n)
	}
	for _, n := range names {
		if _, suffix, ok := segment.ParseFileName(n); ok && strings.HasSuffix(suffix, segment.CleanedSuffix) {
			if err := remove(n); err != nil {
				return nil, err
			}
		}
	}
	if len(keep) > 0 {
		if err := l.completeSwaps(names, keep); err != nil {
			return nil, err
		}
		changed = true
	}
	if changed {
		var err error
		if names, err = l.fs.List(l.dir); err != nil {
			return nil, err
		}
	}
	if changed {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// Bits of segmentFiles.
const (
	hasLog = 1 << iota
	hasIndex
	hasTimeIndex
	hasTxnIndex
)

// segmentFiles parses a directory listing once: for each base offset, which
// of a segment's files are there.
func segmentFiles(names []string) (map[int64]uint8, []int64) {
	files := make(map[int64]uint8, len(names)/3+1)
	var bases []int64
	for _, n := range names {
		base, suffix, ok := segment.ParseFileName(n)
		if !ok {
			continue
		}
		switch suffix {
		case segment.LogSuffix:
			files[base] |= hasLog
			bases = append(bases, base)
		case segment.IndexSuffix:
			files[base] |= hasIndex
		case segment.TimeIndexSuffix:
			files[base] |= hasTimeIndex
		case segment.TxnIndexSuffix:
			files[base] |= hasTxnIndex
		}
	}
	slices.Sort(bases)
	return files, bases
}

// removeOrphans deletes index files with no .log beside them, as Kafka's
// loader does.
func (l *Log) removeOrphans(files map[int64]uint8) error {
	removed := false
	for base, has := range files {
		if has&hasLog != 0 {
			continue
		}
		for _, f := range []struct {
			bit    uint8
			suffix string
		}{{hasIndex, segment.IndexSuffix}, {hasTimeIndex, segment.TimeIndexSuffix}, {hasTxnIndex, segment.TxnIndexSuffix}} {
			if has&f.bit == 0 {
				continue
			}
			p := l.path(segment.FileName(base, f.suffix))
			l.logger.Warn("seglog: deleting orphan index file", "file", p)
			if err := l.fs.Remove(p); err != nil && !isNotExist(err) {
				return err
			}
			removed = true
		}
		delete(files, base)
	}
	if removed {
		return l.fs.SyncDir(l.dir)
	}
	return nil
}

// completeSwaps finishes an interrupted swap: every non-swap segment file
// whose base lies in the range the .swap segments cover is deleted, then
// each .swap is renamed to its final name.
func (l *Log) completeSwaps(names, swaps []string) error {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, n := range swaps {
		base, suffix, _ := segment.ParseFileName(n)
		lo = min(lo, base)
		if strings.TrimSuffix(suffix, segment.SwapSuffix) == segment.LogSuffix {
			next, _, err := scanNextOffset(l.fs, l.path(n), base, max(l.opts.MaxBatchBytes, 1<<20))
			if err != nil {
				return err
			}
			hi = max(hi, next)
		}
	}
	for _, n := range names {
		base, suffix, ok := segment.ParseFileName(n)
		if !ok || strings.Contains(suffix, ".deleted") || strings.HasSuffix(suffix, segment.SwapSuffix) || strings.HasSuffix(suffix, segment.CleanedSuffix) {
			continue
		}
		if base >= lo && base < hi {
			if err := l.fs.Remove(l.path(n)); err != nil && !isNotExist(err) {
				return err
			}
		}
	}
	for _, n := range swaps {
		if err := l.fs.Rename(l.path(n), l.path(strings.TrimSuffix(n, segment.SwapSuffix))); err != nil {
			return err
		}
	}
	return nil
}

// removeSegmentFiles deletes every file of the segment at base.
func (l *Log) removeSegmentFiles(base int64) error {
	for _, suffix := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix, segment.TxnIndexSuffix} {
		if err := l.fs.Remove(l.path(segment.FileName(base, suffix))); err != nil && !isNotExist(err) {
			return err
		}
	}
	return nil
}

// closeSegments closes every segment in the tree (used when Open fails and
// by Close).
//
// The active segment is sealed (its final time-index entry written, both
// indexes trimmed, as Kafka's close does) and every segment then loses the
// Log's reference rather than being closed outright: a Slice or an
// iteration still holding one keeps its descriptor until it lets go, so a
// send in flight never meets a closed (or reused) descriptor.
func (l *Log) closeSegments() error {
	var errs []error
	l.segs.Ascend(func(it segItem) bool {
		if !it.seg.IsSealed() {
			if err := it.seg.Seal(); err != nil {
				errs = append(errs, err)
			}
		}
		it.seg.Release()
		return true
	})
	return errors.Join(errs...)
}
