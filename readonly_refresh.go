package seglog

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/seglog/seglog/segment"
)

// Refresh brings a read-only Log's view up to date with its directory:
// batches appended to the last segment since the view last looked, new
// segments rolled by a writer, and a log start raised by retention (the
// log-start-offset checkpoint). Only complete batches with valid checksums
// are published. It returns ErrStaleView when the log was truncated below
// what the view had published. On a writable Log it does nothing: its view
// is always current.
//
// Records and Read refresh by themselves when asked for an offset at or
// past the view's end, and Follow refreshes while it waits; otherwise a read-only
// Log shows the log as of its last refresh.
func (l *Log) Refresh() error {
	if l.ro == nil {
		return nil
	}
	return l.ro.refreshUnlocked(true)
}

// refreshUnlocked is refresh with v.mu taken: Refresh, and Follow's wait.
func (v *readOnly) refreshUnlocked(full bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return ErrClosed
	}
	return v.refresh(full)
}

// refresh is Refresh with v.mu held. With full, the directory is
// listed for new segments and the log start is read again; otherwise only
// the name of the segment a roll would create next is looked for, which is
// cheap enough for every poll.
func (v *readOnly) refresh(full bool) error {
	list := full
	for {
		grew, err := v.refreshStep(list)
		if err != nil {
			return err
		}
		if !grew {
			break
		}
		list = false
	}
	if !full {
		return nil
	}
	return v.refreshStart()
}

// refreshStep is one round of refresh: it extends the last segment
// and adds the segments found after it, reporting whether it added any (a
// writer may have rolled again meanwhile).
func (v *readOnly) refreshStep(list bool) (bool, error) {
	l := v.l
	lastItem, ok := l.segs.tree.Max()
	if ok {
		if _, err := v.extendLast(lastItem.seg); err != nil {
			return false, err
		}
	}
	var newer []int64
	if list || !ok {
		names, err := l.fs.List(l.dir)
		if err != nil {
			return false, err
		}
		bases, err := v.logBases(names)
		if err != nil {
			return false, err
		}
		if ok && !slices.Contains(bases, lastItem.base) {
			return false, fmt.Errorf("%w: %s is gone", ErrStaleView, lastItem.seg.LogPath())
		}
		for _, b := range bases {
			if !ok || b > lastItem.base {
				newer = append(newer, b)
			}
		}
	} else {
		next := lastItem.seg.NextOffset()
		// An empty last segment's next offset is its own base: its own
		// file is not a newer segment (taking it for one spun forever).
		err := fs.ErrNotExist
		if next > lastItem.base {
			_, err = l.fs.Stat(l.path(segment.FileName(next, segment.LogSuffix)))
		}
		if err == nil {
			newer = append(newer, next)
		} else if !isNotExist(err) {
			return false, err
		} else {
			// A roll at an offset the view has not seen the end of yet
			// (the last batch still being written) shows up in a listing.
			if err := v.maybeListNewer(lastItem.base, &newer); err != nil {
				return false, err
			}
		}
	}
	for _, b := range newer {
		if ok {
			// A writer seals a segment before it creates the next one, so
			// the older segment is complete now: publish its end, then
			// seal it in the view.
			complete, err := v.extendLast(lastItem.seg)
			if err != nil {
				return false, err
			}
			if b > l.start.Load() {
				if err := v.notLast(lastItem.seg, complete, b, len(newer)); err != nil {
					return false, err
				}
			}
			if err := lastItem.seg.Seal(); err != nil {
				return false, err
			}
		}
		seg, err := v.openViewSegment(b, false)
		if err != nil {
			return false, err
		}
		if _, err := v.scanSegment(seg, true, segment.RecoverOptions{Synced: v.rp}); err != nil {
			seg.Release()
			return false, err
		}
		l.segs.Lock()
		l.segs.tree.ReplaceOrInsert(segItem{base: b, seg: seg})
		l.segs.active = seg
		l.segs.Unlock()
		lastItem, ok = segItem{base: b, seg: seg}, true
	}
	if ok {
		l.end.Store(max(l.end.Load(), lastItem.seg.NextOffset()))
	}
	return len(newer) > 0, nil
}

// maybeListNewer lists the directory only when the last segment's file
// holds bytes the view has not published: a roll can then have happened at
// an offset the view does not know yet. The last segment's file gone means
// a writer truncated the log below it (retention never removes the active
// segment), which the view cannot follow.
func (v *readOnly) maybeListNewer(lastBase int64, newer *[]int64) error {
	l := v.l
	seg := l.floorSegment(lastBase)
	fi, err := l.fs.Stat(seg.LogPath())
	if isNotExist(err) {
		return fmt.Errorf("%w: %s is gone", ErrStaleView, seg.LogPath())
	}
	if err != nil || fi.Size() == seg.Size() {
		return err
	}
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	bases, err := v.logBases(names)
	if err != nil {
		return err
	}
	for _, b := range bases {
		if b > lastBase {
			*newer = append(*newer, b)
		}
	}
	return nil
}

// extendLast publishes what was appended to the view's last segment and
// reports whether the segment's file now ends in a whole valid batch.
func (v *readOnly) extendLast(seg *segment.Segment) (bool, error) {
	l := v.l
	if seg.IsSealed() {
		return true, nil
	}
	res, err := seg.ExtendView(0)
	if errors.Is(err, segment.ErrChanged) {
		return false, fmt.Errorf("%w: %w", ErrStaleView, err)
	}
	if err != nil {
		return false, err
	}
	complete, err := v.judge(seg, res)
	if err != nil {
		return false, err
	}
	l.end.Store(max(l.end.Load(), seg.NextOffset()))
	return complete, nil
}

// refreshStart raises the view's start to the log-start-offset checkpoint a
// writer keeps (retention, DeleteBefore), read as Open reads it.
func (v *readOnly) refreshStart() error {
	l := v.l
	st, err := readDirState(l.fs, l.dir, nil)
	if err != nil || !st.HaveLogStart {
		return err
	}
	logStart := st.LogStart
	for {
		cur := l.start.Load()
		if logStart <= cur || l.start.CompareAndSwap(cur, min(logStart, l.end.Load())) {
			return nil
		}
	}
}

// refreshIfBehind refreshes a read-only Log's view when offset lies at or
// past its end, for Records and Read: a reader asking there wants what a
// writer may have appended since. It takes the cheap path (no listing, no
// checkpoint read) so that a reader polling at the end costs a few stat
// calls; an error is left for Refresh or Follow to report.
func (l *Log) refreshIfBehind(offset int64) {
	if l.ro == nil || offset < l.end.Load() {
		return
	}
	v := l.ro
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.closed {
		if err := v.refresh(false); err != nil {
			l.logger.Debug("seglog: refreshing a read-only view", "dir", l.dir, "err", err)
		}
	}
}

// close releases a read-only Log's segments. It writes nothing.
func (v *readOnly) close() error {
	l := v.l
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return ErrClosed
	}
	v.closed = true
	l.segs.Lock()
	defer l.segs.Unlock()
	return l.closeSegments()
}
