package seglog

import (
	"errors"
	"fmt"
	"math"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Open opens the log in dir, creating the directory and an empty log if
// needed. It creates a log only in an absent or empty directory: a
// directory holding subdirectories (a Kafka log.dir) or files that are not
// log files is refused with a *NotALogError (ErrNotALog) and nothing is
// written to it; so is an absent directory inside a log's directory. It takes the directory's lock: a second Open of the same
// directory, in this process or another, fails with ErrLocked until Close.
//
// After a clean Close the segments are trusted as they are. Otherwise every
// segment from the one holding the recovery point on is scanned: batches are
// checked (framing, CRC-32C, increasing offsets), indexes rebuilt, and the
// log cut at the first invalid or partial batch. Open deletes no valid
// byte doing so, which is stricter than Kafka: only a torn tail (bytes
// after the damage that hold no valid batch) is cut away (logged); when
// valid batches follow the damage, the bytes from the damage to the end of
// the file are first copied, byte for byte and durably, into a quarantine
// file (Quarantine, "<base>-<byte>.quarantine" beside the segment), and
// every later segment, which Kafka deletes, is renamed to one if it holds a
// valid batch (deleted only if it holds none). Each quarantine is logged
// (WARN) and handed to Options.OnQuarantine; fsck lists quarantine files
// and `seglog dump FILE` reads them. Damage found below the recovery
// point — data that had been synced — is not cut: Open fails with a
// *CorruptionError naming the file and byte position and changes nothing
// (see fsck). A log-start-offset checkpoint beyond the end of the segments
// is not a reason to delete them (Kafka deletes them all): Open fails with
// a *LogStartError (ErrLogStartBeyondEnd). Leftover .deleted, .cleaned and
// .swap files are resolved as Kafka does (package layout), after those
// checks.
func Open(dir string, opts Options) (*Log, error) {
	if opts.ReadOnly {
		return openReadOnly(dir, opts)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	fs := opts.FS
	if err := refuseInLogDir(fs, dir, opts); err != nil {
		return nil, err
	}
	exists, err := checkLogDir(fs, dir)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := checkNotInLog(fs, dir); err != nil {
			return nil, err
		}
		if err := fs.MkdirAll(dir); err != nil {
			return nil, err
		}
	}
	lockPath := dir + "/" + LockFile
	_, statErr := fs.Stat(lockPath)
	if statErr != nil && !isNotExist(statErr) {
		return nil, statErr
	}
	madeLock := statErr != nil && !opts.lockHeld
	lock, err := lockDir(fs, dir, opts.lockHeld)
	if err != nil {
		if h, named, held := layout.HolderOf(err); named {
			return nil, fmt.Errorf("seglog: directory is locked by another log: %s is held by %s: %w", dir, h, err)
		} else if held {
			return nil, fmt.Errorf("seglog: directory is locked by another log: %s: %w", dir, err)
		}
		return nil, err
	}
	l := newLog(dir, fs, opts, lock)
	if err := l.load(); err != nil {
		l.closeSegments()
		if madeLock {
			// A refused Open leaves the directory as it found it: the lock
			// file is removed while still held, so no other opener can be
			// holding it.
			fs.Remove(lockPath)
		}
		lock.Close()
		return nil, err
	}
	l.commit.init(l.mu.recoveryPoint)
	l.mu.activeJitter = l.drawJitter()
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
//
// The directory is listed again under the lock: checkLogDir's listing was
// taken before it, while another Log may still have been changing it.
func (l *Log) load() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	st, err := l.dirState(names)
	if err != nil {
		return err
	}
	plan := layout.PlanLeftovers(names)
	dirChanged := false
	if len(plan.Swaps) > 0 {
		if err := layout.Apply(l.fs, l.dir, names, plan, logEnd); err != nil {
			return err
		}
		if names, err = l.fs.List(l.dir); err != nil {
			return err
		}
		plan, dirChanged = layout.Plan{}, true
	}
	files, bases := layout.SegmentFiles(names)
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
	// Check: a log-start checkpoint beyond what the segments can hold, and
	// damage in what holds synced data, fail Open before anything changes.
	if err := l.checkLogStart(st, bases); err != nil {
		return err
	}
	plans := make(map[int64]*segment.RecoveryPlan)
	for i, base := range bases {
		indexesPresent := files[base]&(layout.HasIndex|layout.HasTimeIndex) == layout.HasIndex|layout.HasTimeIndex
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
	if !plan.Empty() {
		if err := layout.Apply(l.fs, l.dir, names, plan, logEnd); err != nil {
			return err
		}
		dirChanged = true
	}
	for _, n := range layout.Orphans(names) {
		l.logger.Warn("seglog: deleting orphan index file", "file", l.path(n))
		if err := l.fs.Remove(l.path(n)); err != nil && !isNotExist(err) {
			return err
		}
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
			l.segs.tree.ReplaceOrInsert(segItem{base: base, seg: seg})
			l.segs.active = seg
			continue
		}
		seg, truncated, err := l.recoverSegment(base, p, recoverOpts(i), last)
		if err != nil {
			return err
		}
		l.segs.tree.ReplaceOrInsert(segItem{base: base, seg: seg})
		l.segs.active = seg
		// A recovered segment that ends before the next one begins lost
		// its unsynced tail whole (no torn bytes to truncate): the same
		// loss as a truncation, so the same rule applies. Not in a
		// compacted log, whose segments may end so (gapsAllowed).
		if !last && seg.NextOffset() < bases[i+1] && !l.gapsAllowed() {
			truncated = true
		}
		// What a segment lost lies below the next one's base: when that is
		// at or below the log start, only records already deleted were
		// lost, and the later segments stay (RestartAt past the end
		// creates its new segment before it checkpoints the start, then
		// removes the old ones, so a crash can leave both).
		if truncated && !last && st.haveLogStart && bases[i+1] <= st.logStart {
			truncated = false
		}
		if truncated && !last {
			// Kafka's rule: bytes lost in one segment make every later
			// segment unreachable, so Kafka deletes them. They lie above
			// the recovery point (the scan refused damage below it). Here
			// they leave the log without losing a byte: one holding any
			// valid batch is renamed to a quarantine file, only one
			// holding none is deleted.
			for _, later := range bases[i+1:] {
				q, err := segment.SetAsideSegment(l.fs, l.dir, later)
				if err != nil {
					return err
				}
				if q != nil {
					l.reportQuarantine(q)
				} else {
					l.logger.Warn("seglog: deleted a segment after a truncated one: it held no valid batch",
						"dir", l.dir, "base", later)
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
	if l.segs.active != nil {
		// checkLogStart refused a start beyond what the segments hold
		// before anything changed; recovery's cut of a torn tail, or a
		// later segment set aside, can still leave the end below it.
		// Kafka deletes every segment then; the segments stay, and the
		// inconsistency is reported.
		if err := st.logStartBeyond(l.dir, l.segs.active.NextOffset()); err != nil {
			if dirChanged {
				if serr := l.fs.SyncDir(l.dir); serr != nil {
					return errors.Join(err, serr)
				}
			}
			return err
		}
	}
	if l.segs.active == nil {
		// No segments: start empty at the log start.
		start := int64(0)
		if haveLogStart {
			start = logStart
		}
		seg, err := l.createSegment(start)
		if err != nil {
			return err
		}
		l.segs.tree.ReplaceOrInsert(segItem{base: start, seg: seg})
		l.segs.active = seg
		dirChanged = true
	}
	first, _ := l.segs.tree.Min()
	start := first.base
	if haveLogStart && logStart > start {
		start = logStart
	}
	l.start.Store(start)
	l.end.Store(l.segs.active.NextOffset())
	end := l.end.Load()
	l.mu.next = end

	if st.clean {
		l.mu.recoveryPoint = end
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
		l.mu.recoveryPoint = min(rp, end)
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
// holds no synced data). Valid batches after damage are first copied to a
// quarantine file (segment.QuarantineTail), durably, and reported; then the
// plan is applied. The last segment is left active. It reports whether
// bytes were cut.
func (l *Log) recoverSegment(base int64, p *segment.RecoveryPlan, o segment.RecoverOptions, last bool) (*segment.Segment, bool, error) {
	if p == nil {
		var err error
		if p, err = segment.PlanRecovery(l.fs, l.dir, base, l.segmentOptions(), o); err != nil {
			return nil, false, err
		}
	}
	q, err := segment.QuarantineTail(l.fs, l.dir, p)
	if err != nil {
		return nil, false, err
	}
	if q != nil {
		l.reportQuarantine(q)
	}
	// Opened as sealed: an active open would trust the old index and scan
	// the tail, which is what recovery is about to distrust. Recovery
	// changes only what the scan finds wrong (segment.ApplyRecovery): an
	// intact segment costs no write and no sync.
	seg, err := segment.Open(l.fs, l.dir, base, false, l.segmentOptions())
	if err != nil {
		return nil, false, err
	}
	var res segment.RecoverResult
	if last {
		res, err = seg.ApplyRecoveryActive(p)
	} else {
		res, err = seg.ApplyRecovery(p)
	}
	if err == nil && q != nil {
		// The cut is made durable at once: a crash before some later sync
		// would otherwise bring the damage back, and the next recovery
		// would report the same quarantine again.
		err = seg.File().Sync()
	}
	if err != nil {
		seg.Close()
		return nil, false, err
	}
	// A zero tail (a preallocated file a crash left untrimmed) is cut
	// too, but it is the end of the file, not lost data: only a cut with
	// a reason drops what later segments follow.
	damaged := res.Reason != nil
	if damaged && q == nil {
		l.logger.Warn("seglog: truncated a torn tail during recovery: no valid batch followed the damage",
			"file", seg.LogPath(), "valid_bytes", res.ValidBytes, "truncated_bytes", res.TruncatedBytes, "reason", res.Reason)
	}
	return seg, damaged, nil
}

// checkLogStart refuses, before Open changes anything, a log-start
// checkpoint beyond the end the segments can reach: the offset after the
// last whole entry of the last .log (segment.ScanNextOffset), which bounds
// what recovery can keep. It reads the last .log only when the start lies
// past its base; otherwise recovery's outcome decides (load checks again).
func (l *Log) checkLogStart(st dirState, bases []int64) error {
	if !st.haveLogStart || len(bases) == 0 || st.logStart <= bases[len(bases)-1] {
		return nil
	}
	last := bases[len(bases)-1]
	end, _, err := segment.ScanNextOffset(l.fs, l.path(segment.FileName(last, segment.LogSuffix)), last)
	if err != nil {
		return err
	}
	return st.logStartBeyond(l.dir, end)
}

// reportQuarantine logs a quarantine recovery made and hands it to
// Options.OnQuarantine.
func (l *Log) reportQuarantine(q *segment.Quarantine) {
	reason := "a segment after one recovery cut: bytes lost there make it unreachable"
	if q.Reason != nil {
		reason = q.Reason.Error()
	}
	l.logger.Warn("seglog: recovery kept bytes it cut from the log in a quarantine file; they are not part of the log (read them with: seglog dump FILE)",
		"file", q.File, "source", q.Source, "pos", q.Pos, "bytes", q.Bytes, "batches", q.Batches, "records", q.Records,
		"first_offset", q.FirstOffset, "last_offset", q.LastOffset, "unsure", q.Unsure, "reason", reason)
	if f := l.opts.OnQuarantine; f != nil {
		f(*q)
	}
}

// logEnd is the segment layer's answer to layout's question of how far a
// .swap log reaches.
func logEnd(fs vfs.FS, path string, base int64) (int64, error) {
	next, _, err := segment.ScanNextOffset(fs, path, base)
	return next, err
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
	l.segs.tree.Ascend(func(it segItem) bool {
		if !it.seg.IsSealed() {
			if err := it.seg.Seal(); err != nil {
				errs = append(errs, err)
			} else if l.opts.Preallocate && l.failure.Load() == nil {
				// Sealing trimmed a preallocated .log: the trim must be
				// durable before the clean-shutdown marker vouches for
				// the file's size.
				if err := it.seg.Flush(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		it.seg.Release()
		return true
	})
	return errors.Join(errs...)
}
