package seglog

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/seglog/seglog/internal/sealed"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
)

// ErrSegmentsChanged: a compaction's swap found that the segments it was to
// replace were removed or replaced since it read them (retention,
// truncation, another compaction). Nothing was changed; the rewrite is
// discarded and may be retried on the new segments.
var ErrSegmentsChanged = errors.New("seglog: segments changed during the rewrite")

// ErrSegmentsBusy: a compaction's swap found the .deleted files of an earlier
// segment at the base offset of one it replaces, still held by a reader
// or by file.delete.delay.ms. Renaming over them would take them from
// under that reader, so nothing was changed; retry once they are gone.
var ErrSegmentsBusy = errors.New("seglog: an earlier segment at the same offset is still being deleted")

// acquireSealed returns the sealed segments from the one holding from
// (or the first) whose records all lie below to, in offset order, each
// held by a reference. The active segment is never part of a run. Release
// the run when done.
func (l *Log) acquireSealed(from, to int64) *sealed.Run {
	r := &sealed.Run{FS: l.fs, Own: true, Gen: l.truncations.current()}
	l.segs.RLock()
	defer l.segs.RUnlock()
	start := probe(from)
	if s := l.floorSegment(from); s != nil {
		start = probe(s.BaseOffset())
	}
	l.segs.tree.AscendGreaterOrEqual(start, func(it segItem) bool {
		if it.seg == l.segs.active || it.seg.NextOffset() > to || !it.seg.Acquire() {
			return false
		}
		r.Segs = append(r.Segs, it.seg)
		r.Next = append(r.Next, it.seg.NextOffset())
		return true
	})
	return r
}

// newCleaned creates the .cleaned files of a segment at base in the log's
// directory (segment.NewCleaned), for replaceSegments.
func (l *Log) newCleaned(base int64) (*segment.Cleaned, error) {
	if l.ro != nil {
		return nil, ErrReadOnly
	}
	return segment.NewCleaned(l.fs, l.dir, base, l.segmentOptions())
}

// replaceSegments swaps the finished cleaned segments news in for the
// segments of run, Kafka's replaceSegments (§9.5 of the format notes),
// through layout's .cleaned/.swap protocol: the .cleaned files are renamed
// to .swap in descending base order and the directory synced (the commit
// point: before it a crash leaves .cleaned files that loading deletes,
// after it loading completes the swap); the old segments are renamed to
// .deleted; the .swap files take their final names and the directory is
// synced; then the segment set is changed in one step under the segment
// lock. Readers holding old segments keep reading them (their files are
// unlinked when the last reference goes, after file.delete.delay.ms), and
// appends to the active segment never wait: only retention, truncation,
// Close and other swaps are serialized with it.
//
// news must cover the run's offsets: the first starts at the run's base
// offset and the last ends at the run's next offset, so that loading,
// which deletes every old file in the range the .swap files cover, never
// keeps an old segment beside a new one. replaceSegments consumes news:
// on any failure their files are deleted. If the run changed since it was
// acquired, it returns ErrSegmentsChanged and changes nothing; if an
// earlier segment at one of its base offsets is still being deleted,
// ErrSegmentsBusy. A failure
// after the commit point makes the Log refuse appends until reopened
// (loading then finishes the swap).
//
// Before its commit point the first swap of a log records a cleaner-offset
// checkpoint (the log start) if the log has none, so that the gaps cleaned
// segments leave are never taken for missing data (MissingDataError), even
// by a reader in another process or after a crash before the cleaner
// writes its own checkpoint.
func (l *Log) replaceSegments(run *sealed.Run, news []*segment.Cleaned) (err error) {
	committed := false
	defer func() {
		if err != nil && !committed {
			for _, w := range news {
				w.Abort()
			}
		}
	}()
	if l.ro != nil {
		return ErrReadOnly
	}
	if run.Len() == 0 || len(news) == 0 {
		return fmt.Errorf("seglog: replace segments: nothing to replace")
	}
	first, runEnd := run.Segs[0], run.Next[run.Len()-1]
	for i, w := range news {
		if !w.Finished() || (i > 0 && w.BaseOffset() < news[i-1].NextOffset()) || w.BaseOffset() < first.BaseOffset() {
			return fmt.Errorf("seglog: replace segments: cleaned segment %d is unfinished or out of order", w.BaseOffset())
		}
	}

	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.mu.Lock()
	closed := l.mu.closed
	werr := l.writable()
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if werr != nil {
		return werr
	}
	// A truncation since the run was acquired may have cut one of its
	// segments and appended anew, leaving the same segment object with
	// other contents: the rewrite would bring back what it removed.
	if !l.holdsRun(run) || l.truncations.affects(run.Gen, max(runEnd, run.Through)-1) {
		return ErrSegmentsChanged
	}
	// Checked only now: a rewrite a truncation overtook read the cut
	// segment and ends short of the run, and that is ErrSegmentsChanged
	// (retried), not a caller's mistake.
	if news[0].BaseOffset() != first.BaseOffset() || news[len(news)-1].NextOffset() != runEnd {
		return fmt.Errorf("seglog: replace segments: cleaned segments cover [%d, %d), the run [%d, %d)",
			news[0].BaseOffset(), news[len(news)-1].NextOffset(), first.BaseOffset(), runEnd)
	}
	// Compaction replaces the segment at a group's base offset again and
	// again: the previous one's .deleted files may still be there.
	for _, s := range run.Segs {
		for _, suf := range []string{layout.LogSuffix, layout.IndexSuffix, layout.TimeIndexSuffix} {
			if _, err := l.fs.Stat(l.path(layout.FileName(s.BaseOffset(), suf) + layout.DeletedSuffix)); err == nil {
				return ErrSegmentsBusy
			} else if !isNotExist(err) {
				return err
			}
		}
	}

	// Before anything cleaned can be seen: its gaps are compaction's, not
	// missing data, for readers here and in other processes, and after a
	// crash at any point from here on.
	if err := l.markCompacted(); err != nil {
		return err
	}

	// Descending order: if renaming stops half-way, the .swap files made
	// lie above the .cleaned files left, so loading abandons them all.
	order := slices.Clone(news)
	slices.SortFunc(order, func(a, b *segment.Cleaned) int { return cmp.Compare(b.BaseOffset(), a.BaseOffset()) })
	var cleaned []string
	for _, w := range order {
		cleaned = append(cleaned, w.Names()...)
	}
	swaps, err := layout.CommitCleaned(l.fs, l.dir, cleaned)
	if err != nil {
		if len(swaps) < len(cleaned) {
			// Not committed: take back the renames made.
			for _, s := range swaps {
				if rerr := l.fs.Remove(l.path(s)); rerr != nil && !isNotExist(rerr) {
					l.logger.Warn("seglog: removing swap file", "file", s, "err", rerr)
				}
			}
			return err
		}
		committed = true
		return l.fail(err)
	}
	committed = true

	for _, s := range run.Segs {
		if err := s.Remove(); err != nil {
			return l.fail(fmt.Errorf("seglog: swap: removing %s: %w", s.LogPath(), err))
		}
	}
	for _, s := range swaps {
		if err := l.fs.Rename(l.path(s), l.path(strings.TrimSuffix(s, layout.SwapSuffix))); err != nil {
			return l.fail(fmt.Errorf("seglog: swap: %w", err))
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	opened := make([]*segment.Segment, 0, len(news))
	for _, w := range news {
		s, err := segment.Open(l.fs, l.dir, w.BaseOffset(), false, l.segmentOptions())
		if err != nil {
			for _, o := range opened {
				o.Close()
			}
			return l.fail(err)
		}
		opened = append(opened, s)
	}
	l.segs.Lock()
	for _, s := range run.Segs {
		l.segs.tree.Delete(probe(s.BaseOffset()))
	}
	for _, s := range opened {
		l.segs.tree.ReplaceOrInsert(segItem{base: s.BaseOffset(), seg: s})
	}
	l.segs.Unlock()
	for _, s := range run.Segs {
		l.retire(s)
	}
	return nil
}

// holdsRun reports whether every segment of run is still in the log, in
// its place and not active, with no other segment among them.
func (l *Log) holdsRun(run *sealed.Run) bool {
	l.segs.RLock()
	defer l.segs.RUnlock()
	lo, hi := run.Segs[0].BaseOffset(), run.Segs[run.Len()-1].BaseOffset()
	i, ok := 0, true
	l.segs.tree.AscendRange(probe(lo), probe(hi+1), func(it segItem) bool {
		if i >= run.Len() || it.seg != run.Segs[i] || it.seg == l.segs.active {
			ok = false
			return false
		}
		i++
		return true
	})
	return ok && i == run.Len()
}

// acquireAfter returns, with a reference, the segment a reader goes on to
// once it has read all of seg: the next one in the log while seg is still
// there. If seg left the log meanwhile (a swap merged it with its
// neighbours, or retention removed it), the next one after its base may
// skip what a merged segment kept of seg's successors, so the reader is
// sent to the segment now holding seg's next offset.
func (l *Log) acquireAfter(seg *segment.Segment) *segment.Segment {
	l.segs.RLock()
	defer l.segs.RUnlock()
	var s *segment.Segment
	if it, ok := l.segs.tree.Get(probe(seg.BaseOffset())); ok && it.seg == seg {
		s = l.nextSegment(seg.BaseOffset())
	} else if s = l.floorSegment(seg.NextOffset()); s == nil {
		s = l.nextSegment(seg.BaseOffset())
	}
	if s != nil && !s.Acquire() {
		return nil
	}
	return s
}

// baseAfter returns the base offset of the segment that follows seg's base
// in the log, or MaxInt64 when there is none: no batch of seg may reach it.
func (l *Log) baseAfter(seg *segment.Segment) int64 {
	l.segs.RLock()
	defer l.segs.RUnlock()
	if s := l.nextSegment(seg.BaseOffset()); s != nil {
		return s.BaseOffset()
	}
	return math.MaxInt64
}
