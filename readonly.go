package seglog

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
)

// ErrReadOnly is returned by every method that would change a Log opened
// with Options.ReadOnly (Append, AppendBatch, TruncateTo, DeleteBefore,
// Sync); nothing is changed.
var ErrReadOnly = errors.New("seglog: log opened read-only")

// ErrStaleView: a read-only Log found the log changed under it in a way a
// view cannot follow (a writer truncated it below what the view had
// published). Reopen the log to see it as it is now.
var ErrStaleView = errors.New("seglog: the log was truncated under a read-only view; reopen it")

// readOnlyState is what a read-only Log keeps about its view of the
// directory.
type readOnlyState struct {
	// mu serializes refreshes (the view's only writer) and Close.
	mu     mutex[rankViewT]
	closed bool
	// rp is the recovery point the view was opened with (MaxInt64 after a
	// clean shutdown: every byte was synced): damage below it is
	// corruption, above it a torn tail that is not served.
	rp int64
	// tailSeg is the view's last segment and tailReason why its scan
	// stopped before the end of its file (nil when it reached the end):
	// what UnservedTail reports.
	tailSeg    *segment.Segment
	tailReason error
}

// minEntryBytes is the smallest entry a .log can hold: a v0 message with
// no key and no value (12 bytes of log overhead and 14 of message).
const minEntryBytes = 26

// nopCloser stands in for the directory lock a read-only Log does not take.
type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// openReadOnly is Open with Options.ReadOnly: see the Options field. It
// builds the Log's view of dir without writing anything there.
func openReadOnly(dir string, opts Options) (*Log, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	fi, err := opts.FS.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: errors.New("not a directory")}
	}
	// The same refusal as a writable Open's: a Kafka log.dir or a
	// directory of other files is not read as an empty log.
	if _, err := checkLogDir(opts.FS, dir); err != nil {
		return nil, err
	}
	l := newLog(dir, newReadOnlyFS(opts.FS), opts, nopCloser{})
	l.ro = &readOnlyState{}
	if err := l.loadView(); err != nil {
		l.segs.Lock()
		l.closeSegments()
		l.segs.Unlock()
		return nil, err
	}
	return l, nil
}

// viewSegmentOptions are the segment options of a read-only view: .log
// files opened read-only, and entries bounded by the file (and the 32-bit
// positions of a segment), never by MaxBatchBytes, which limits appends,
// not what a log may hold.
func (l *Log) viewSegmentOptions() segment.Options {
	o := l.segmentOptions()
	o.ReadOnly = true
	o.ReserveBytes = 0
	o.MaxBatchBytes = segment.MaxStoredEntry
	return o
}

// openViewSegment opens the segment at base for the view, sealed. One that
// will be rebuilt and sealed at once (sealedRebuild) gets in-memory
// indexes sized for its file rather than the writer's preallocation: an
// index entry follows at least one whole entry (26 bytes or more, for the
// smallest legacy one), so the file's size bounds the entries, and a log
// with many segments to rebuild does not hold MaxIndexBytes of memory for
// each while it does.
func (l *Log) openViewSegment(base int64, sealedRebuild bool) (*segment.Segment, error) {
	o := l.viewSegmentOptions()
	if sealedRebuild {
		fi, err := l.fs.Stat(l.path(segment.FileName(base, segment.LogSuffix)))
		if err != nil {
			return nil, err
		}
		entries := fi.Size()/minEntryBytes + 2
		o.MaxIndexBytes = int(min(int64(o.MaxIndexBytes), max(entries*index.TimeEntrySize, 24)))
	}
	return segment.Open(l.fs, l.dir, base, false, o)
}

// logBases returns the base offsets of the directory's .log files, sorted.
// Leftovers (.deleted, .cleaned, checkpoint .tmp files) and orphan indexes
// are not segments and are ignored, and so is a .swap that a writable Open
// deletes (layout.PlanLeftovers). A .swap a writable Open would complete is
// refused: the view it leads to cannot be had without renaming files.
func (l *Log) logBases(names []string) ([]int64, error) {
	if swaps := layout.PlanLeftovers(names).Swaps; len(swaps) > 0 {
		return nil, fmt.Errorf("%w: %s holds an interrupted segment swap (%s); open it writable once, or run seglog fsck --repair, to complete it",
			ErrReadOnly, l.dir, strings.Join(swaps, ", "))
	}
	_, bases := layout.SegmentFiles(names)
	return bases, nil
}

// loadView builds the view from the directory's load plan (planLoad, the
// plan a writable Open applies) without applying any of it: the segments,
// the start and end offsets. The directory's state (clean marker, recovery
// point, log start, a Kafka log.dir's lines for this partition) is read as
// Open reads it. The segments the plan scans, the last segment, and any
// whose indexes are missing or torn are scanned by recovery's rules and
// indexed in memory; the others are trusted as a writable Open trusts them.
// Where a writable Open would change the directory to go on, the view
// cannot: a swap to complete is refused (logBases), a cut followed by
// segments holding data is a *CorruptionError (notLast), and leftovers,
// orphans and the marker are left where they are.
func (l *Log) loadView() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	if _, err := l.logBases(names); err != nil {
		return err
	}
	st, err := readDirState(l.fs, l.dir, names)
	if err != nil {
		return err
	}
	p := planLoad(names, st)
	bases := p.bases
	l.ro.rp = p.synced
	for i, base := range bases {
		last := i == len(bases)-1
		// A trusted segment's indexes must also hold whole entries: the
		// view cannot rebuild a torn one on disk, so it rebuilds it in
		// memory. The last segment is always scanned: it is the one that
		// grows.
		trusted := p.trusted(i) && !last && l.indexesIntact(base)
		seg, err := l.openViewSegment(base, !trusted && !last)
		if err != nil {
			return err
		}
		l.segs.tree.ReplaceOrInsert(segItem{base: base, seg: seg})
		if trusted {
			continue
		}
		complete, err := l.scanSegment(seg, last, p.recoverOptions(i))
		if err != nil {
			return err
		}
		if !last && !p.lostBelowStart(i) {
			if err := l.notLast(seg, complete, bases[i+1], len(bases)-i-1); err != nil {
				empty, serr := l.holdNothing(bases[i+1:])
				if serr != nil {
					return serr
				}
				if !empty {
					return err
				}
				// The later segments hold no valid byte (an empty segment
				// a crash left after a roll or a restart): a writable open
				// deletes them, losing nothing, and the view ends here.
				l.ro.tailSeg, l.ro.tailReason = nil, nil
				break
			}
		}
	}
	start, end := int64(0), int64(0)
	if st.haveLogStart {
		start = st.logStart
	}
	if first, ok := l.segs.tree.Min(); ok {
		lastSeg, _ := l.segs.tree.Max()
		// Nothing appends to a view; its last segment is the one that
		// grows (Segments reports it as active).
		l.segs.active = lastSeg.seg
		start = max(start, first.base)
		end = lastSeg.seg.NextOffset()
		if err := st.logStartBeyond(l.dir, end); err != nil {
			// A writable Open refuses it too: the view must not hide the
			// segments behind a start they never reach.
			return err
		}
	} else {
		end = start
	}
	l.start.Store(start)
	l.end.Store(end)
	l.mu.next = end
	l.mu.recoveryPoint = min(p.synced, end)
	return nil
}

// indexesIntact reports whether both index files of the segment at base are
// there with a whole number of entries; otherwise the view rebuilds them.
func (l *Log) indexesIntact(base int64) bool {
	for _, s := range []struct {
		suffix string
		size   int64
	}{{segment.IndexSuffix, index.OffsetEntrySize}, {segment.TimeIndexSuffix, index.TimeEntrySize}} {
		fi, err := l.fs.Stat(l.path(segment.FileName(base, s.suffix)))
		if err != nil || fi.Size()%s.size != 0 {
			return false
		}
	}
	return true
}

// scanSegment rebuilds seg's indexes in memory and publishes its valid
// batches; extendable keeps it open to later growth (the last segment).
// It reports whether the whole file was valid. Damage below the recovery
// point is a *CorruptionError; past it, the rest of the file is a torn tail
// (or a batch a writer is still writing) and is just not served.
func (l *Log) scanSegment(seg *segment.Segment, extendable bool, o segment.RecoverOptions) (bool, error) {
	res, err := seg.RebuildView(o, extendable)
	if errors.Is(err, ErrCorrupt) {
		return false, fmt.Errorf("seglog: read-only open of %s (run seglog fsck): %w", l.dir, err)
	}
	if err != nil {
		return false, err
	}
	return l.judgeView(seg, res)
}

// judgeView tells corruption from a tail that is merely not served yet,
// and remembers, for UnservedTail, why seg's scan stopped (seg is the
// view's last segment whenever the scan is not an error).
func (l *Log) judgeView(seg *segment.Segment, res segment.ViewResult) (bool, error) {
	l.ro.tailSeg, l.ro.tailReason = seg, res.Reason
	if res.Reason == nil {
		return true, nil
	}
	if res.NextOffset < l.ro.rp {
		return false, &CorruptionError{File: seg.LogPath(), Pos: res.ValidBytes,
			Reason: fmt.Errorf("damage below the recovery point %d (run seglog fsck): %w", l.ro.rp, res.Reason)}
	}
	l.logger.Debug("seglog: read-only view ends before the end of a segment file",
		"file", seg.LogPath(), "valid_bytes", res.ValidBytes, "ignored_bytes", res.IgnoredBytes, "reason", res.Reason)
	return false, nil
}

// notLast refuses a segment that is not the view's last one and whose
// valid batches end before its file does (complete false) or before the
// next segment's base: a writable Open would cut the log there and set the
// later segments aside (quarantine), so the view cannot serve them as part
// of the log, and hiding them without a word would be silent loss.
func (l *Log) notLast(seg *segment.Segment, complete bool, nextBase int64, later int) error {
	var what string
	if complete {
		if !l.endsShort(seg, nextBase) {
			return nil
		}
		what = fmt.Sprintf("the segment ends at offset %d and the next begins at %d: offsets %d-%d are missing",
			seg.NextOffset(), nextBase, seg.NextOffset(), nextBase-1)
	} else {
		what = damageText(l.ro.tailReason)
	}
	l.ro.tailSeg, l.ro.tailReason = nil, nil
	return &CorruptionError{File: seg.LogPath(), Pos: seg.Size(), Reason: fmt.Errorf(
		"%s; %d later segment(s) follow: a writable open cuts the log here and keeps their valid batches in quarantine files (read-only open of %s; run seglog fsck %s)",
		what, later, l.dir, l.dir)}
}

// holdNothing reports whether none of the segments at bases holds a valid
// entry (segment.ScanRemnant of each .log).
func (l *Log) holdNothing(bases []int64) (bool, error) {
	for _, b := range bases {
		rem, err := segment.ScanRemnant(l.fs, l.path(segment.FileName(b, segment.LogSuffix)), 0)
		if err != nil || rem.HoldsValid() {
			return false, err
		}
	}
	return true, nil
}

// damageText is what a scan's reason says without the file and position
// its error repeats.
func damageText(reason error) string {
	var ce *CorruptionError
	var pe *segment.PositionError
	switch {
	case errors.As(reason, &ce):
		return ce.Reason.Error()
	case errors.As(reason, &pe):
		return pe.Err.Error()
	case reason != nil:
		return reason.Error()
	}
	return "its valid batches end here"
}

// UnservedTail describes the bytes at the end of a read-only Log's last
// segment file that its view does not serve, as of its last refresh: from
// the end of the last valid batch (Remnant.Pos) to the end of the file.
// Reason says why the scan stopped there. The Remnant says what the bytes
// hold: none valid (Remnant.HoldsValid false) is a torn tail, or a batch a
// writer is still writing, which a writable Open cuts; valid batches after
// the damage are data a writable Open keeps in a quarantine file.
type UnservedTail struct {
	File   string
	Reason error
	segment.Remnant
}

// UnservedTail reports, for a Log opened with Options.ReadOnly, the bytes
// at the end of its last segment file that it does not serve (ok false
// when it serves the whole file, or the Log is writable: a writable Open
// cut or set aside such bytes). Damage anywhere else fails the read-only
// Open itself. It reads the unserved bytes to say whether valid batches
// follow the damage; it writes nothing.
func (l *Log) UnservedTail() (t UnservedTail, ok bool, err error) {
	if l.ro == nil {
		return t, false, nil
	}
	l.ro.mu.Lock()
	defer l.ro.mu.Unlock()
	if l.ro.closed {
		return t, false, ErrClosed
	}
	seg, reason := l.ro.tailSeg, l.ro.tailReason
	if seg == nil || reason == nil {
		return t, false, nil
	}
	rem, err := segment.ScanRemnant(l.fs, seg.LogPath(), seg.Size())
	if err != nil || rem.Bytes == 0 {
		return t, false, err
	}
	return UnservedTail{File: seg.LogPath(), Reason: reason, Remnant: rem}, true, nil
}

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
	l.ro.mu.Lock()
	defer l.ro.mu.Unlock()
	if l.ro.closed {
		return ErrClosed
	}
	return l.refreshLocked(true)
}

// refreshLocked is Refresh with ro.mu held. With full, the directory is
// listed for new segments and the log start is read again; otherwise only
// the name of the segment a roll would create next is looked for, which is
// cheap enough for every poll.
func (l *Log) refreshLocked(full bool) error {
	list := full
	for {
		grew, err := l.refreshStep(list)
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
	return l.refreshStart()
}

// refreshStep is one round of refreshLocked: it extends the last segment
// and adds the segments found after it, reporting whether it added any (a
// writer may have rolled again meanwhile).
func (l *Log) refreshStep(list bool) (bool, error) {
	lastItem, ok := l.segs.tree.Max()
	if ok {
		if _, err := l.extendLast(lastItem.seg); err != nil {
			return false, err
		}
	}
	var newer []int64
	if list || !ok {
		names, err := l.fs.List(l.dir)
		if err != nil {
			return false, err
		}
		bases, err := l.logBases(names)
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
			if err := l.maybeListNewer(lastItem.base, &newer); err != nil {
				return false, err
			}
		}
	}
	for _, b := range newer {
		if ok {
			// A writer seals a segment before it creates the next one, so
			// the older segment is complete now: publish its end, then
			// seal it in the view.
			complete, err := l.extendLast(lastItem.seg)
			if err != nil {
				return false, err
			}
			if b > l.start.Load() {
				if err := l.notLast(lastItem.seg, complete, b, len(newer)); err != nil {
					return false, err
				}
			}
			if err := lastItem.seg.Seal(); err != nil {
				return false, err
			}
		}
		seg, err := l.openViewSegment(b, false)
		if err != nil {
			return false, err
		}
		if _, err := l.scanSegment(seg, true, segment.RecoverOptions{Synced: l.ro.rp}); err != nil {
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
func (l *Log) maybeListNewer(lastBase int64, newer *[]int64) error {
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
	bases, err := l.logBases(names)
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
func (l *Log) extendLast(seg *segment.Segment) (bool, error) {
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
	complete, err := l.judgeView(seg, res)
	if err != nil {
		return false, err
	}
	l.end.Store(max(l.end.Load(), seg.NextOffset()))
	return complete, nil
}

// refreshStart raises the view's start to the log-start-offset checkpoint a
// writer keeps (retention, DeleteBefore), read as Open reads it.
func (l *Log) refreshStart() error {
	st, err := readDirState(l.fs, l.dir, nil)
	if err != nil || !st.haveLogStart {
		return err
	}
	logStart := st.logStart
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
	l.ro.mu.Lock()
	defer l.ro.mu.Unlock()
	if !l.ro.closed {
		if err := l.refreshLocked(false); err != nil {
			l.logger.Debug("seglog: refreshing a read-only view", "dir", l.dir, "err", err)
		}
	}
}

// closeReadOnly releases a read-only Log's segments. It writes nothing.
func (l *Log) closeReadOnly() error {
	l.ro.mu.Lock()
	defer l.ro.mu.Unlock()
	if l.ro.closed {
		return ErrClosed
	}
	l.ro.closed = true
	l.segs.Lock()
	defer l.segs.Unlock()
	return l.closeSegments()
}
