package seglog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seglog/seglog/segment"
)

// ErrTruncated: a truncation removed records an iteration had reached (its
// position or a record it had already yielded), or kept removing them under
// a read until it gave up, so the reader cannot go on consistently. The log
// is healthy; read again from an offset in [StartOffset, EndOffset].
// ErrSliceTruncated matches it too.
var ErrTruncated = errors.New("seglog: records were truncated under the reader")

// TruncateTo removes every record at or after offset, as a replica does when
// it diverged from its leader.
//
// An offset inside the log, [StartOffset, EndOffset), cuts it as Kafka does:
// segments wholly at or after offset are removed (their files renamed to
// .deleted and unlinked once no reader holds them), and the segment holding
// offset is cut at the start of the batch that holds it and becomes the
// active segment. A batch is never split, so when offset falls inside a
// batch the log ends before that batch: EndOffset tells where it ended. When
// that batch also held records below the start, nothing readable is left
// and the log restarts, empty, at its start.
//
// An offset below StartOffset empties the log and restarts it exactly at
// offset: StartOffset and EndOffset both become offset, and the next record
// appended gets it. An offset at or past EndOffset does nothing.
//
// Everything is durable before TruncateTo returns: the cut (fdatasync), the
// removals (directory fsync), the recovery point (lowered to the new end and
// checkpointed), the cleaner-offset checkpoint (lowered to at most offset
// before anything is cut, then to the new end) and, when the start moved,
// the log-start-offset checkpoint.
// So no later crash brings removed records back, resurrects an older start
// that would hide records appended after the truncation, or skips recovering
// them. If TruncateTo fails part-way the log refuses appends until it is
// reopened (like a failed write), because what is on disk may differ from
// what the Log would acknowledge.
//
// Readers that a truncation overtakes learn it: a Records iteration whose
// position or yielded records were removed ends with ErrTruncated (otherwise
// it goes on with the new data); a Slice cut by it returns
// ErrSliceTruncated; Read and OffsetForTime retry. None of them reports the
// log corrupt because of it or yields a removed record after TruncateTo
// returned.
func (l *Log) TruncateTo(offset int64) error {
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.ckptMu.Lock() // the recovery point is rewritten below
	defer l.ckptMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: negative offset %d", ErrOffsetOutOfRange, offset)
	}
	if err := l.publishLocked(); err != nil {
		return err
	}
	if offset >= l.end.Load() {
		return nil
	}
	// No flush may run on a segment this unseals and appends to.
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	// Readers learn of the truncation twice: that one is under way (so an
	// error meeting a half-cut file is not taken for damage) and, when it
	// is done, the lowest offset it removed. On failure that offset is
	// the most that may have gone, to be safe.
	cut := offset
	if offset >= l.start.Load() {
		l.segs.RLock()
		if s := l.floorSegment(offset); s != nil {
			cut = min(cut, s.BaseOffset())
		}
		l.segs.RUnlock()
	}
	l.truncations.begin()
	defer func() { l.truncations.finish(cut) }()

	// The cleaner checkpoint goes down first: a crash after the cut must
	// not leave it above records appended anew. Then once more to the end
	// actually reached, which a cut at a batch's start may put below offset.
	if err := l.lowerCleanerCheckpoint(offset); err != nil {
		// Nothing was cut: the log stays as it was, and writable.
		return fmt.Errorf("%w: truncating to %d: %w", ErrWriteFailed, offset, err)
	}
	var err error
	if offset < l.start.Load() {
		err = l.restartAt(offset)
	} else {
		err = l.cutAt(offset)
	}
	if err != nil {
		err = fmt.Errorf("%w: truncating to %d: %w", ErrWriteFailed, offset, err)
		l.failure.CompareAndSwap(nil, &err)
		return *l.failure.Load()
	}
	end := l.segs.active.NextOffset()
	cut = end
	l.end.Store(end)
	l.mu.next = end
	l.mu.activeJitter = l.drawJitter()
	l.commit.lower(end)
	if err := l.lowerCleanerCheckpoint(end); err != nil {
		err = fmt.Errorf("%w: truncating to %d: %w", ErrWriteFailed, offset, err)
		l.failure.CompareAndSwap(nil, &err)
		return *l.failure.Load()
	}
	if l.mu.recoveryPoint > end {
		// A recovery point above the new end would make the next recovery
		// take whatever is appended there for synced data, and report a
		// torn tail of it as corruption.
		l.mu.recoveryPoint = end
		if err := l.writeOffsetCheckpoint(RecoveryPointFile, end); err != nil {
			err = fmt.Errorf("%w: checkpointing the recovery point %d: %w", ErrWriteFailed, end, err)
			l.failure.CompareAndSwap(nil, &err)
			return *l.failure.Load()
		}
	}
	return nil
}

// cutAt truncates at an offset in [start, end): Kafka's truncation. Called
// with mu and flushMu.
func (l *Log) cutAt(offset int64) error {
	// Remove whole segments from the newest down, so a failure part-way
	// leaves a log that lost a suffix, as a truncation does.
	for {
		l.segs.RLock()
		it, ok := l.segs.tree.Max()
		n := l.segs.tree.Len()
		l.segs.RUnlock()
		if !ok || it.base < offset || (it.base == offset && n == 1) {
			break
		}
		if err := l.dropSegment(it); err != nil {
			return err
		}
	}
	if it, ok := l.segs.tree.Max(); ok {
		seg := it.seg
		// A cut at the batch holding offset that also holds records
		// below the log start would leave the log ending below its
		// start; if that cut reached the disk before the restart below,
		// a crash would leave a log-start checkpoint beyond the end
		// (which Open refuses). Restart at the start without cutting.
		bp, found, err := seg.FindPosition(offset)
		if err != nil {
			return err
		}
		if start := l.start.Load(); found && bp.BaseOffset < start {
			return l.restartAt(start)
		}
		if _, err := seg.TruncateTo(offset); err != nil {
			return err
		}
		l.segs.Lock()
		l.segs.active = seg
		l.segs.Unlock()
	} else {
		seg, err := l.createSegment(offset)
		if err != nil {
			return err
		}
		l.segs.Lock()
		l.segs.tree.ReplaceOrInsert(segItem{base: offset, seg: seg})
		l.segs.active = seg
		l.segs.Unlock()
	}
	if start := l.start.Load(); l.segs.active.NextOffset() < start {
		// The batch holding offset also held records below the log start
		// (retention moved the start into it): nothing readable is left,
		// and the next offset must not fall below the start. Start over,
		// empty, at the start.
		return l.restartAt(start)
	}
	// The cut must be durable before anything else is written: otherwise
	// a power loss could bring back the truncated batches (they were
	// synced earlier) in place of what is appended next. Its indexes'
	// cut too: the entries past offset are zeroed only in the mapping,
	// and when the recovery point already stands at offset no later
	// flush covers this segment, so a power loss would bring back
	// entries naming offsets past its end, which the loader trusts
	// below the recovery point (fsck: "names an offset past the last
	// valid batch"; TestRaftCrashCampaign with Options.Preallocate).
	return l.segs.active.Flush()
}

// restartAt replaces every segment with one empty segment at base, which
// becomes the log start and end. Called with mu and flushMu.
//
// The order makes every crash leave an acceptable log, and never one whose
// log-start checkpoint lies beyond its end (which Open refuses,
// ErrLogStartBeyondEnd):
//
//   - base below the start: the log-start checkpoint may not name a start
//     below the current one while segments still hold records between the
//     two (retention removed them, and the checkpoint is all that keeps them
//     hidden), so it is written only after every segment is gone; until
//     then a crash reopens the old start with a suffix removed, or empty.
//   - base at the start: recorded first, so a crash part-way does not
//     reopen below it; segments then go from the newest down.
//   - base at or past the end (a raft store deleting everything, or
//     installing a snapshot past its log): the records are made durable,
//     the new empty segment is created at base (when base is past the end;
//     at the end, an empty last segment there is kept), then the start is
//     checkpointed (the commit point: a crash before it reopens the old
//     log, the new segment a gap after it that recovery removes; a crash
//     after it reopens the old segments wholly below the start, an empty
//     log at base), and the old segments go from the oldest up, so every
//     crash leaves the end at or past the start.
//   - base inside the log, above the start: written last, once the new
//     segment exists (segments go from the newest down, so a crash
//     part-way may leave a first segment ending below base); until then a
//     crash reopens the old start with a suffix removed, or the new segment
//     alone, whose base is then the start.
//
// It must be written before returning, or the next Open would find the new
// segment below the old start, or the old start below the new segment.
func (l *Log) restartAt(base int64) error {
	start := l.start.Load()
	end := l.segs.active.NextOffset()
	if base > start && base >= end {
		return l.restartPastEnd(base, end)
	}
	lower, higher := base < start, base > start
	if !lower && !higher {
		// The start does not move: recording it first keeps a crash
		// part-way from reopening below it.
		if err := l.writeOffsetCheckpoint(LogStartOffsetFile, base); err != nil {
			return err
		}
	}
	// Segments wholly below the start (a crash after an earlier
	// DeleteBefore's checkpoint can leave them) go first: removed from the
	// newest down, one could be all that a crash part-way leaves, ending
	// below the start.
	for {
		l.segs.RLock()
		first, ok := l.segs.tree.Min()
		n := l.segs.tree.Len()
		l.segs.RUnlock()
		if !ok || n == 1 || first.seg.NextOffset() > l.start.Load() {
			break
		}
		if err := l.dropSegment(first); err != nil {
			return err
		}
	}
	for {
		l.segs.RLock()
		it, ok := l.segs.tree.Max()
		l.segs.RUnlock()
		if !ok {
			break
		}
		if err := l.dropSegment(it); err != nil {
			return err
		}
	}
	if lower {
		if err := l.writeOffsetCheckpoint(LogStartOffsetFile, base); err != nil {
			return err
		}
	}
	seg, err := l.createSegment(base) // syncs the directory
	if err != nil {
		return err
	}
	if higher {
		if err := l.writeOffsetCheckpoint(LogStartOffsetFile, base); err != nil {
			seg.Close()
			return err
		}
	}
	l.segs.Lock()
	l.segs.tree.ReplaceOrInsert(segItem{base: base, seg: seg})
	l.segs.active = seg
	l.segs.Unlock()
	l.start.Store(base)
	return nil
}

// restartPastEnd is restartAt for a base at or past the end of the log (and
// above its start): see restartAt for the order. The caller (RestartAt,
// the one that restarts past the end) has synced the records below end
// already, before it took flushMu, which syncBelow takes: the old records
// reach base's checkpoint intact, so a crash after it finds the end at
// least there, not below it for lost unsynced records.
func (l *Log) restartPastEnd(base, end int64) error {
	keep := l.segs.active
	if keep.BaseOffset() != base || keep.Size() != 0 {
		// Seal the old active segment first, as roll does: a power loss
		// after the new segment's creation leaves the old one below it,
		// where the loader trusts it as sealed, so its indexes must
		// already be trimmed and synced (a truncation may have left them
		// grown, with a zero tail). A failure here fails the log
		// (RestartAt), so a sealed segment left active is never written.
		if err := l.segs.active.Seal(); err != nil {
			return err
		}
		if err := l.segs.active.Flush(); err != nil {
			return err
		}
		seg, err := l.createSegment(base) // syncs the directory
		if err != nil {
			return err
		}
		keep = seg
	}
	if err := l.writeOffsetCheckpoint(LogStartOffsetFile, base); err != nil {
		if keep != l.segs.active {
			keep.Close()
		}
		return err
	}
	if keep != l.segs.active {
		l.segs.Lock()
		l.segs.tree.ReplaceOrInsert(segItem{base: base, seg: keep})
		l.segs.active = keep
		l.segs.Unlock()
	}
	l.start.Store(base)
	for {
		l.segs.RLock()
		first, ok := l.segs.tree.Min()
		l.segs.RUnlock()
		if !ok || first.seg == keep {
			break
		}
		if err := l.dropSegment(first); err != nil {
			return err
		}
	}
	return nil
}

// dropSegment removes a segment from the tree and its files from the
// directory, durably (Segment.Remove syncs the directory). Unlike retire
// it reports a failure: a truncation that left a segment's .log in place
// would see it come back at the next Open.
func (l *Log) dropSegment(it segItem) error {
	err := it.seg.Remove()
	if err != nil && !strings.HasSuffix(it.seg.LogPath(), segment.DeletedSuffix) {
		return err // nothing was renamed: the segment stays whole and live
	}
	l.segs.Lock()
	l.segs.tree.Delete(it)
	l.segs.Unlock()
	it.seg.Release()
	return err
}
