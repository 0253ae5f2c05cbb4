package seglog

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
)

// ErrReadOnly is returned by every method that would change a Log opened
// with Options.ReadOnly (Append, AppendBatch, AppendEpoch, TruncateTo,
// DeleteBefore, RestartAt, Roll, Sync, SetLimits, SetCleanerCheckpoint);
// nothing is changed.
var ErrReadOnly = errors.New("seglog: log opened read-only")

// ErrStaleView: a read-only Log found the log changed under it in a way a
// view cannot follow (a writer truncated it below what the view had
// published). Reopen the log to see it as it is now.
var ErrStaleView = errors.New("seglog: the log was truncated under a read-only view; reopen it")

// readOnly is a Log opened with Options.ReadOnly: its view of the
// directory, built from the load plan without applying it (load) and
// brought up to date by refreshes. It writes nothing, ever. The Log's
// methods that would change the log refuse with ErrReadOnly when l.ro is
// set; those a view does its own way (Close, Refresh, UnservedTail,
// Follow's wait, a read at or past the end) hand over to it. Reads are the
// Log's own: the view fills the same segment tree.
type readOnly struct {
	l *Log
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
	l.ro = &readOnly{l: l}
	if err := l.ro.load(); err != nil {
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
func (v *readOnly) viewSegmentOptions() segment.Options {
	l := v.l
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
func (v *readOnly) openViewSegment(base int64, sealedRebuild bool) (*segment.Segment, error) {
	l := v.l
	o := v.viewSegmentOptions()
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
func (v *readOnly) logBases(names []string) ([]int64, error) {
	l := v.l
	if swaps := layout.PlanLeftovers(names).Swaps; len(swaps) > 0 {
		return nil, fmt.Errorf("%w: %s holds an interrupted segment swap (%s); open it writable once, or run seglog fsck --repair, to complete it",
			ErrReadOnly, l.dir, strings.Join(swaps, ", "))
	}
	_, bases := layout.SegmentFiles(names)
	return bases, nil
}

// load builds the view from the directory's load plan (loadplan.Plan, the
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
func (v *readOnly) load() error {
	l := v.l
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	if _, err := v.logBases(names); err != nil {
		return err
	}
	st, err := readDirState(l.fs, l.dir, names)
	if err != nil {
		return err
	}
	p := planLoad(names, st)
	bases := p.Bases
	v.rp = p.Synced
	for i, base := range bases {
		last := i == len(bases)-1
		// A trusted segment's indexes must also hold whole entries: the
		// view cannot rebuild a torn one on disk, so it rebuilds it in
		// memory. The last segment is always scanned: it is the one that
		// grows.
		trusted := p.Trusted(i) && !last && v.indexesIntact(base)
		seg, err := v.openViewSegment(base, !trusted && !last)
		if err != nil {
			return err
		}
		l.segs.tree.ReplaceOrInsert(segItem{base: base, seg: seg})
		if trusted {
			continue
		}
		complete, err := v.scanSegment(seg, last, p.RecoverOptions(i))
		if err != nil {
			return err
		}
		if !last && !p.LostBelowStart(i) {
			if err := v.notLast(seg, complete, bases[i+1], len(bases)-i-1); err != nil {
				empty, serr := v.holdNothing(bases[i+1:])
				if serr != nil {
					return serr
				}
				if !empty {
					return err
				}
				// The later segments hold no valid byte (an empty segment
				// a crash left after a roll or a restart): a writable open
				// deletes them, losing nothing, and the view ends here.
				v.tailSeg, v.tailReason = nil, nil
				break
			}
		}
	}
	start, end := int64(0), int64(0)
	if st.HaveLogStart {
		start = st.LogStart
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
	l.mu.recoveryPoint = min(p.Synced, end)
	return nil
}

// indexesIntact reports whether both index files of the segment at base are
// there with a whole number of entries; otherwise the view rebuilds them.
func (v *readOnly) indexesIntact(base int64) bool {
	l := v.l
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
func (v *readOnly) scanSegment(seg *segment.Segment, extendable bool, o segment.RecoverOptions) (bool, error) {
	l := v.l
	res, err := seg.RebuildView(o, extendable)
	if errors.Is(err, ErrCorrupt) {
		return false, fmt.Errorf("seglog: read-only open of %s (run seglog fsck): %w", l.dir, err)
	}
	if err != nil {
		return false, err
	}
	return v.judge(seg, res)
}

// judge tells corruption from a tail that is merely not served yet,
// and remembers, for UnservedTail, why seg's scan stopped (seg is the
// view's last segment whenever the scan is not an error).
func (v *readOnly) judge(seg *segment.Segment, res segment.ViewResult) (bool, error) {
	l := v.l
	v.tailSeg, v.tailReason = seg, res.Reason
	if res.Reason == nil {
		return true, nil
	}
	if res.NextOffset < v.rp {
		return false, &CorruptionError{File: seg.LogPath(), Pos: res.ValidBytes,
			Reason: fmt.Errorf("damage below the recovery point %d (run seglog fsck): %w", v.rp, res.Reason)}
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
func (v *readOnly) notLast(seg *segment.Segment, complete bool, nextBase int64, later int) error {
	l := v.l
	var what string
	if complete {
		if !l.endsShort(seg, nextBase) {
			return nil
		}
		what = fmt.Sprintf("the segment ends at offset %d and the next begins at %d: offsets %d-%d are missing",
			seg.NextOffset(), nextBase, seg.NextOffset(), nextBase-1)
	} else {
		what = damageText(v.tailReason)
	}
	v.tailSeg, v.tailReason = nil, nil
	return &CorruptionError{File: seg.LogPath(), Pos: seg.Size(), Reason: fmt.Errorf(
		"%s; %d later segment(s) follow: a writable open cuts the log here and keeps their valid batches in quarantine files (read-only open of %s; run seglog fsck %s)",
		what, later, l.dir, l.dir)}
}

// holdNothing reports whether none of the segments at bases holds a valid
// entry (segment.ScanRemnant of each .log).
func (v *readOnly) holdNothing(bases []int64) (bool, error) {
	l := v.l
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
	return l.ro.unservedTail()
}

func (v *readOnly) unservedTail() (t UnservedTail, ok bool, err error) {
	l := v.l
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return t, false, ErrClosed
	}
	seg, reason := v.tailSeg, v.tailReason
	if seg == nil || reason == nil {
		return t, false, nil
	}
	rem, err := segment.ScanRemnant(l.fs, seg.LogPath(), seg.Size())
	if err != nil || rem.Bytes == 0 {
		return t, false, err
	}
	return UnservedTail{File: seg.LogPath(), Reason: reason, Remnant: rem}, true, nil
}
