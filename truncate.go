package seglog

import (
	"fmt"

	"github.com/seglog/seglog/segment"
)

// TruncateTo removes every record at or after offset, as a replica does when
// it diverged from its leader. Segments wholly at or after offset are
// removed (their files renamed to .deleted and unlinked once no reader holds
// them); the segment holding offset is cut at the start of the batch that
// holds it and becomes the active segment. A batch is never split, so when
// offset falls inside a batch the log ends before that batch: EndOffset
// tells where it ended. An offset below the log start empties the log and
// restarts it at offset. The truncation is synced before TruncateTo
// returns, so a power loss cannot bring truncated records back; the
// recovery point follows the new end and is checkpointed at once, so a
// crash cannot skip recovering bytes appended after the truncation.
func (l *Log) TruncateTo(offset int64) error {
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
	// Slices made before now learn that their bytes may be gone. This is
	// recorded when the cut is done (or failed half-way), not before: a Read
	// that started while the cut was under way may have computed its range
	// from the old state, and only a record newer than its start tells it.
	defer l.truncations.record(offset)
	// Remove whole segments from the newest down.
	var doomed []*segment.Segment
	l.segMu.Lock()
	for {
		it, ok := l.segs.Max()
		if !ok || it.base < offset || (it.base == offset && l.segs.Len() == 1 && offset >= l.start.Load()) {
			break
		}
		l.segs.Delete(it)
		doomed = append(doomed, it.seg)
	}
	l.segMu.Unlock()
	for _, s := range doomed {
		l.retire(s)
	}

	if it, ok := l.segs.Max(); ok {
		seg := it.seg
		if seg != l.active {
			if err := seg.Unseal(); err != nil {
				return err
			}
		}
		if _, err := seg.TruncateTo(offset); err != nil {
			return err
		}
		l.segMu.Lock()
		l.active = seg
		l.segMu.Unlock()
	} else {
		seg, err := l.createSegment(offset)
		if err != nil {
			return err
		}
		l.segMu.Lock()
		l.segs.ReplaceOrInsert(segItem{base: offset, seg: seg})
		l.active = seg
		l.segMu.Unlock()
		l.start.Store(offset)
	}
	end := l.active.NextOffset()
	if start := l.start.Load(); end < start && offset >= start {
		// The batch holding offset also held records below the log start
		// (retention moved the start into it): nothing readable is left, and
		// the next offset must not fall below the start. Start over, empty,
		// at the start.
		if err := l.resetAt(start); err != nil {
			return err
		}
		end = start
	} else if start > end {
		l.start.Store(end)
	}
	// The cut must be durable before anything else is written: otherwise
	// a power loss could bring back the truncated batches (they were
	// synced earlier) in place of what is appended next.
	if err := l.active.File().Sync(); err != nil {
		return l.fail(err)
	}
	l.end.Store(end)
	l.next = end

	l.activeJitter = l.drawJitter()
	l.commit.lower(end)
	if l.recoveryPoint > end {
		l.recoveryPoint = end
		if err := writeOffsetCheckpoint(l.fs, l.dir, RecoveryPointFile, end); err != nil {
			return err
		}
	}
	return nil
}

// resetAt replaces every segment with one empty segment at base. Called
// with mu.
func (l *Log) resetAt(base int64) error {
	l.segMu.Lock()
	var doomed []*segment.Segment
	l.segs.Ascend(func(it segItem) bool {
		doomed = append(doomed, it.seg)
		return true
	})
	l.segs.Clear(false)
	l.segMu.Unlock()
	for _, s := range doomed {
		l.retire(s)
	}
	seg, err := l.createSegment(base)
	if err != nil {
		return err
	}
	l.segMu.Lock()
	l.segs.ReplaceOrInsert(segItem{base: base, seg: seg})
	l.active = seg
	l.segMu.Unlock()
	return nil
}
