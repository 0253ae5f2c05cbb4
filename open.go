package seglog

import (
	"errors"
	"fmt"
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

// load reads the directory into l. It checks before it changes anything:
// the directory is listed, the checkpoints read and every segment that
// holds synced data and needs a scan is scanned (segment.PlanRecovery)
// before the first file is removed, truncated or rebuilt, so damage below
// the recovery point fails Open with the directory as it was. Only an
// interrupted swap is completed first, as Kafka's loader does, because the
// check must look at the segments the log will have. Every change to the
// directory is made durable (SyncDir) before Open returns, so no later
// Sync can acknowledge data that a power loss would put behind a deleted
// segment brought back.
func (l *Log) load() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	st, err := readDirState(l.fs, l.dir, names)
	if err != nil {
		return err
	}
	plan := planLeftovers(names)
	dirChanged := false
	if len(plan.swaps) > 0 {
		if names, err = l.resolveLeftovers(names); err != nil {
			return err
		}
		plan, dirChanged = leftoverPlan{}, true
	}
	files, bases := segmentFiles(names)
	rp := st.rp

	// Unclean: recover from the segment holding the recovery point.
	recoverFrom := len(bases)
	if !st.clean {
		recoverFrom = 0
		for i, b := range bases {
			if b <= rp {
				recoverFrom = i
			}
		}
	}
	// synced is the recovery point each scan holds the data to: after a
	// clean shutdown everything was synced.
	synced := rp
	if st.clean {
		synced = math.MaxInt64
	}
	nextBase := func(i int) int64 {
		if i+1 < len(bases) {
			return bases[i+1]
		}
		return 0
	}
	recoverOpts := func(i int) segment.RecoverOptions {
		return segment.RecoverOptions{Synced: synced, NextBase: nextBase(i)}
	}
	// Check: scan what holds synced data before anything changes.
	plans := make(map[int64]*segment.RecoveryPlan)
	for i, base := range bases {
		indexesPresent := files[base]&(hasIndex|hasTimeIndex) == hasIndex|hasTimeIndex
		if (i < recoverFrom && indexesPresent) || (i >= recoverFrom && base >= synced) {
			continue
		}
		p, err := segment.PlanRecovery(l.fs, l.dir, base, l.segmentOptions(), recoverOpts(i))
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				return fmt.Errorf("seglog: open %s: nothing was changed (run seglog fsck): %w", l.dir, err)
			}
			return err
		}
		plans[base] = p
	}

	// Mutate: leftovers, orphans, recovery, then make it all durable.
	if plan.changes() {
		if err := l.applyLeftovers(plan); err != nil {
			return err
		}
		dirChanged = true
	}
	if removed, err := l.removeOrphans(files); err != nil {
		return err
	} else if removed {
		dirChanged = true
	}
	for i := 0; i < len(bases); i++ {
		base := bases[i]
		last := i == len(bases)-1
		p, planned := plans[base]
		if i < recoverFrom && !planned {
			seg, err := segment.Open(l.fs, l.dir, base, last, l.segmentOptions())
			if err != nil {
				return err
			}
			l.segs.ReplaceOrInsert(segItem{base: base, seg: seg})
			l.active = seg
			continue
		}
		seg, truncated, err := l.recoverSegment(base, p, recoverOpts(i))
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
			// segment unreachable, so they are deleted. They lie above the
			// recovery point (the scan refused damage below it).
			for _, later := range bases[i+1:] {
				l.logger.Warn("seglog: deleting segment after a truncated one", "dir", l.dir, "base", later)
				if err := l.removeSegmentFiles(later); err != nil {
					return err
				}
			}
			dirChanged = true
			bases = bases[:i+1]
			last = true
		}
		if last {
			if err := seg.Unseal(); err != nil {
				return err
			}
		}
	}

	logStart, haveLogStart := st.logStart, st.haveLogStart
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
		dirChanged = true
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

	if st.clean {
		l.recoveryPoint = end
		if st.ownMarker {
			// The marker must be gone, durably, before anything is
			// appended: otherwise a crash later would skip the recovery
			// it needs.
			if err := l.fs.Remove(l.path(CleanShutdownFile)); err != nil && !isNotExist(err) {
				return err
			}
			dirChanged = true
		}
	} else {
		l.recoveryPoint = min(rp, end)
	}
	if st.fromParent {
		// The log.dir's marker and lines describe the broker's last
		// shutdown, not ours: from now on this directory's own checkpoints
		// speak for it, and they must exist before anything is appended,
		// or a crash would send the next Open back to the broker's
		// (clean) marker.
		if err := writeOffsetCheckpoint(l.fs, l.dir, LogStartOffsetFile, start); err != nil {
			return err
		}
		if err := writeOffsetCheckpoint(l.fs, l.dir, RecoveryPointFile, l.recoveryPoint); err != nil {
			return err
		}
	}
	if dirChanged {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	return nil
}

// recoverSegment opens the segment at base and runs recovery on it: the
// plan made by the check when there is one, else a scan now (the segment
// holds no synced data). It reports whether bytes were cut.
func (l *Log) recoverSegment(base int64, p *segment.RecoveryPlan, o segment.RecoverOptions) (*segment.Segment, bool, error) {
	// Opened as sealed: an active open would trust the old index and scan
	// the tail, which is what recovery is about to distrust. Recovery makes
	// the indexes writable for the rebuild and seals them again.
	seg, err := segment.Open(l.fs, l.dir, base, false, l.segmentOptions())
	if err != nil {
		return nil, false, err
	}
	var res segment.RecoverResult
	if p != nil {
		res, err = seg.ApplyRecovery(p)
	} else {
		res, err = seg.Recover(o)
	}
	if err != nil {
		seg.Close()
		return nil, false, err
	}
	if res.TruncatedBytes > 0 {
		l.logger.Warn("seglog: truncated a torn or damaged tail during recovery",
			"file", seg.LogPath(), "valid_bytes", res.ValidBytes, "truncated_bytes", res.TruncatedBytes, "reason", res.Reason)
	}
	return seg, res.TruncatedBytes > 0, nil
}

// leftoverPlan is what resolving a directory's leftovers will do, decided
// from a listing before anything is changed.
type leftoverPlan struct {
	removes []string // names to delete
	swaps   []string // .swap names to complete
}

func (p leftoverPlan) changes() bool { return len(p.removes) > 0 || len(p.swaps) > 0 }

// planLeftovers decides, as Kafka's loader does, what to do with what a
// crash interrupted: .deleted files are deleted; a .swap at or above the
// lowest .cleaned base belongs to an unfinished compaction and is deleted
// with all .cleaned files; remaining .swap files replace the segments they
// cover; checkpoint .tmp files are deleted.
func planLeftovers(names []string) leftoverPlan {
	minCleaned := int64(math.MaxInt64)
	var p leftoverPlan
	var swaps []string
	for _, n := range names {
		if strings.HasSuffix(n, checkpointTmpSuffix) {
			p.removes = append(p.removes, n)
			continue
		}
		base, suffix, ok := segment.ParseFileName(n)
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(suffix, segment.DeletedSuffix):
			p.removes = append(p.removes, n)
		case strings.HasSuffix(suffix, segment.CleanedSuffix):
			minCleaned = min(minCleaned, base)
			p.removes = append(p.removes, n)
		case strings.HasSuffix(suffix, segment.SwapSuffix):
			swaps = append(swaps, n)
		}
	}
	for _, n := range swaps {
		base, _, _ := segment.ParseFileName(n)
		if base >= minCleaned {
			p.removes = append(p.removes, n)
			continue
		}
		p.swaps = append(p.swaps, n)
	}
	return p
}

// applyLeftovers deletes what the plan deletes and completes its swaps;
// the caller syncs the directory.
func (l *Log) applyLeftovers(p leftoverPlan) error {
	for _, n := range p.removes {
		if err := l.fs.Remove(l.path(n)); err != nil && !isNotExist(err) {
			return err
		}
	}
	return nil
}

// resolveLeftovers applies planLeftovers' plan, swaps included, makes it
// durable and returns the directory listing afterwards.
func (l *Log) resolveLeftovers(names []string) ([]string, error) {
	p := planLeftovers(names)
	if !p.changes() {
		return names, nil
	}
	if err := l.applyLeftovers(p); err != nil {
		return nil, err
	}
	if len(p.swaps) > 0 {
		if err := l.completeSwaps(names, p.swaps); err != nil {
			return nil, err
		}
	}
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, err
	}
	return names, l.fs.SyncDir(l.dir)
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
// loader does, and reports whether it deleted any; the caller syncs the
// directory.
func (l *Log) removeOrphans(files map[int64]uint8) (bool, error) {
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
				return removed, err
			}
			removed = true
		}
		delete(files, base)
	}
	return removed, nil
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
			next, _, err := segment.ScanNextOffset(l.fs, l.path(n), base)
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
