package seglog

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
)

// Missing data on the read path. Offsets in a log are consecutive from
// batch to batch and from segment to segment until compaction removes
// records; a reader that finds offsets absent in a log that was never
// compacted, or an offset index naming offsets its .log no longer holds,
// stops there with a *MissingDataError instead of going on to the next
// offset it finds (docs/design.md, "Missing data").

// compacted reports whether the log has been compacted, so that a gap
// between its batches is compaction's doing. This is the one place the
// rule lives (seglog fsck applies the same one to the files): the log has
// a cleaner-offset checkpoint — the line a store's checkpoints keep, or
// its own cleaner-offset-checkpoint file, or for a partition of a Kafka
// log.dir the log.dir's line for it. replaceSegments records one before
// it first publishes cleaned segments (markCompacted), so the rule holds
// from the moment a gap can be seen, in this process and in any other.
// A checkpoint, once there, is lowered by truncation but never removed, so
// a true answer is kept; a false one is asked again at the next gap.
func (l *Log) compacted() (bool, error) {
	if l.everCompacted.Load() {
		return true, nil
	}
	ok, err := l.hasCleanerCheckpoint()
	if ok {
		l.everCompacted.Store(true)
	}
	return ok, err
}

// gapsAllowed reports whether a gap between two segments may be
// compaction's, for recovery and the read-only view deciding whether a
// segment that ends before the next one begins lost its tail: in a
// compacted log it may not have (Kafka keeps such segments, and so do we),
// and where the answer cannot be told the segments stay too, so that no
// valid segment leaves the log on a guess; reads then report the gap as
// missing data, naming why it cannot be told.
func (l *Log) gapsAllowed() bool {
	compacted, err := l.compacted()
	return compacted || err != nil
}

// hasCleanerCheckpoint reads, without caching, whether the log has a
// cleaner-offset checkpoint (compacted).
func (l *Log) hasCleanerCheckpoint() (bool, error) {
	if c := l.opts.checkpoints; c != nil && l.ro == nil {
		_, ok, err := c.Checkpoint(CleanerOffsetFile)
		return ok, err
	}
	return layout.Compacted(l.fs, l.dir)
}

// markCompacted makes the log count as compacted before a swap first
// publishes cleaned segments, whose gaps would otherwise be missing data:
// a cleaner writes its checkpoint only after the swap, and a reader (or a
// crash) in between would find gaps in a log with none. With no checkpoint
// yet it records the log start, which makes the next round's plan what it
// would be without one (a checkpoint below the start counts from the
// start). Called by replaceSegments, with swapMu, before the commit point.
func (l *Log) markCompacted() error {
	if l.everCompacted.Load() {
		return nil
	}
	has, err := l.hasCleanerCheckpoint()
	if err != nil && !errors.Is(err, layout.ErrBadCheckpoint) {
		return fmt.Errorf("seglog: replace segments: reading the cleaner checkpoint: %w", err)
	}
	if !has {
		// A log.dir file that does not parse is left alone (the store
		// reports it); this log's line goes where the Log writes it.
		if err := l.writeOffsetCheckpoint(CleanerOffsetFile, l.start.Load()); err != nil {
			return fmt.Errorf("seglog: replace segments: recording the log as compacted: %w", err)
		}
	}
	l.everCompacted.Store(true)
	return nil
}

// segmentEnd returns the offset after the last entry seg's .log holds,
// found from the .log itself (the last batch within its size, located by
// the offset index entries that lie inside the file), not from its index's
// last entry, which may name offsets the .log lost.
func segmentEnd(seg *segment.Segment) (int64, error) {
	bp, ok, err := seg.LastBatchWithin(0, seg.Size())
	if err != nil || !ok {
		return seg.BaseOffset(), err
	}
	return bp.LastOffset + 1, nil
}

// checkGap is asked by a reader that has read (or looked for reached in)
// all of seg and would go on to the segment starting at nextBase: are the
// offsets in between missing? They are when seg's .log ends below nextBase
// and either seg's offset index names offsets past that end, or the log
// was never compacted. Offsets below the log start are not missing. An
// empty seg ends at its base.
func (l *Log) checkGap(seg *segment.Segment, reached, nextBase int64) error {
	if reached >= nextBase {
		return nil
	}
	claimed, _ := seg.NextOffsetErr() // the index's word when it errs; the .log decides below
	if claimed <= reached && l.everCompacted.Load() {
		// The reader got all the segment says it holds, and the rest is
		// a compaction's gap: the common case in a compacted log, decided
		// without reading anything.
		return nil
	}
	// The .log decides where the data ends: the segment's next offset
	// comes from its index's last entry, which may name offsets the .log
	// lost, and a reader may not have got to legacy entries (Records
	// skips them).
	end, err := segmentEnd(seg)
	if err != nil {
		return err
	}
	from := max(end, l.StartOffset())
	if from >= nextBase {
		return nil
	}
	if claimed > end {
		return &MissingDataError{Dir: l.dir, From: from, To: nextBase, File: indexPath(seg),
			Reason: fmt.Sprintf("%s names offsets up to %d, past the end of %s", filepath.Base(indexPath(seg)), claimed-1, holds(seg, end))}
	}
	compacted, err := l.compacted()
	if compacted {
		return nil
	}
	e := &MissingDataError{Dir: l.dir, From: from, To: nextBase, File: seg.LogPath(),
		Reason: fmt.Sprintf("%s, the next segment starts at %d, and the log was never compacted (it has no cleaner-offset checkpoint)", holds(seg, end), nextBase)}
	if err != nil {
		// Undecidable: reported, never skipped.
		e.Reason = fmt.Sprintf("%s, the next segment starts at %d, and whether compaction removed the offsets between cannot be told: %v", holds(seg, end), nextBase, err)
	}
	return e
}

// holds says what seg's .log holds, given the offset after its last entry.
func holds(seg *segment.Segment, end int64) string {
	name := filepath.Base(seg.LogPath())
	if end <= seg.BaseOffset() {
		return fmt.Sprintf("%s (%d bytes), which holds no offset", name, seg.Size())
	}
	return fmt.Sprintf("%s, which holds offsets up to %d", name, end-1)
}

// lookupMissing tells an index lookup that failed in a sealed segment
// because an entry points past the end of the .log (segment.FindPosition
// and FindOffsetForTimeFrom refuse it) from other damage: when the .log
// ends at or below offset, the offset the lookup was for, the data the
// index names is gone, and that is a *MissingDataError for the offsets
// from the .log's end to the next segment. Any other error is returned as
// it is.
func (l *Log) lookupMissing(seg *segment.Segment, offset int64, err error) error {
	if !seg.IsSealed() || !errors.Is(err, index.ErrCorrupt) {
		return err
	}
	end, serr := segmentEnd(seg)
	if serr != nil || end > offset {
		return err
	}
	to := l.baseAfter(seg)
	if to == math.MaxInt64 {
		claimed, _ := seg.NextOffsetErr()
		to = max(claimed, l.EndOffset())
	}
	from := max(end, l.StartOffset())
	if from >= to {
		return err
	}
	return &MissingDataError{Dir: l.dir, From: from, To: to, File: indexPath(seg),
		Reason: fmt.Sprintf("%s points past the end of %s", filepath.Base(indexPath(seg)), holds(seg, end))}
}

// indexPath is the path of seg's offset index.
func indexPath(seg *segment.Segment) string {
	return filepath.Join(seg.Dir(), layout.FileName(seg.BaseOffset(), layout.IndexSuffix))
}
