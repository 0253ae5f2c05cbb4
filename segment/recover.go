package segment

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// RecoverResult describes what Recover found.
type RecoverResult struct {
	// ValidBytes is the size of the .log after recovery: the end of the
	// last valid batch.
	ValidBytes int64
	// TruncatedBytes is how many bytes were cut from the end of the .log.
	TruncatedBytes int64
	// Batches is the number of valid entries kept (legacy entries included).
	Batches int
	// Reason says why the scan stopped before the end of the file, nil if
	// the whole file was valid. A torn tail is a *PositionError wrapping
	// ErrTornTail; a damaged entry a *record.CorruptionError (with File and
	// the file position of the entry's start; the message names the failing
	// field's position) wrapping
	// the cause: record's CRC or framing errors, record.ErrUnsupportedMagic,
	// or ErrOffsetOrder.
	Reason error
	// NextOffset is the offset after the last valid batch (the base offset
	// if none).
	NextOffset int64
	// ZeroTailBytes is how many of TruncatedBytes were a zero tail: bytes
	// that are all zero from the end of the last valid batch to the end of
	// the file, as a preallocated file (Options.Preallocate) leaves them
	// when it was not trimmed. A zero tail is the end of the file, not
	// damage: Reason stays nil, and it is cut without loss.
	ZeroTailBytes int64
	// AfterDamage describes the bytes from the damage (ValidBytes) to the
	// end of the file when Reason is set: whether valid entries follow
	// the damage (a resynchronizing scan, ScanRemnant). When they do, the
	// bytes are not a torn tail and recovery keeps them in a quarantine
	// file before it truncates (QuarantineTail).
	AfterDamage Remnant
	// Quarantine is the quarantine file Recover put the bytes after the
	// damage in, nil if it made none. PlanRecovery and ApplyRecovery
	// never set it: the caller that applies a plan quarantines first.
	Quarantine *Quarantine
}

// RecoverOptions are what a segment's recovery needs to know about the rest
// of the log. The zero value means nothing was synced and no segment
// follows: every invalid tail is cut.
type RecoverOptions struct {
	// Synced is the log's recovery point: every offset below it was
	// synced before the crash. Damage in an entry that holds an offset
	// below Synced (or a torn entry before Synced is reached) is not a torn
	// write but corruption of acknowledged data: recovery returns it as a
	// *record.CorruptionError and changes nothing. A clean end of file
	// below Synced is accepted: a truncation cuts synced data on purpose.
	Synced int64
	// NextBase is the base offset of the next segment, 0 if there is none.
	// An entry whose offsets reach it belongs to no segment (the next one
	// claims them): it is damage, treated like any other.
	NextBase int64
}

// RecoveryPlan is the outcome of scanning a segment's .log for recovery,
// computed without changing anything on disk: what to keep, what to cut,
// and the index entries to rebuild. Apply it with Segment.ApplyRecovery.
type RecoveryPlan struct {
	base     int64
	path     string
	fileSize int64
	res      RecoverResult
	t        tail
	// points are the index entries to append, in order; their count is
	// bounded by what the offset index can hold (one more, to hit ErrFull
	// exactly where an incremental rebuild would).
	points []indexPoint
}

// indexPoint is one offset-index entry and the time-index entry appended
// with it.
type indexPoint struct {
	last, pos          int64
	maxTS, maxTSOffset int64
}

// Result is what applying the plan will report.
func (p *RecoveryPlan) Result() RecoverResult { return p.res }

// PlanRecovery scans the .log of the segment at base in dir once, as
// Kafka's LogSegment.recover does, and decides what recovery keeps. It
// changes nothing on disk: index files are neither opened nor created. The
// entries are read from position 0; each must have a legal length, fit in
// the file (MaxStoredEntry: never Options.MaxBatchBytes, which bounds
// appends, not what is kept), carry a known magic and a valid checksum
// (CRC-32C for v2; CRC-32 for legacy v0/v1 entries, which are kept and
// skipped by size, their offset field being their last offset), have
// offsets above the previous entry's, within the segment's 32-bit relative
// range and below o.NextBase. The first entry that fails ends what is kept;
// if that leaves offsets below o.Synced out, the damage hit synced data
// and PlanRecovery returns a *record.CorruptionError with the file and
// byte position (errors.Is(err, record.ErrCorrupt)) instead of a plan.
// Otherwise the rest of the file after the damage is scanned for valid
// entries (RecoverResult.AfterDamage), so that the caller keeps them
// (QuarantineTail) rather than truncating them away with a torn tail.
//
// fsck's repair and Open both use it, so a directory is repaired by the
// same rules it is opened by.
func PlanRecovery(fsys vfs.FS, dir string, base int64, opts Options, o RecoverOptions) (*RecoveryPlan, error) {
	opts = opts.withDefaults()
	path := filepath.Join(dir, FileName(base, LogSuffix))
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return planRecovery(f, path, base, opts, o)
}

func planRecovery(f vfs.File, path string, base int64, opts Options, o RecoverOptions) (*RecoveryPlan, error) {
	fileSize, err := f.Size()
	if err != nil {
		return nil, err
	}
	p := &RecoveryPlan{base: base, path: path, fileSize: fileSize}
	t := tail{next: base, maxTS: -1, maxTSOffset: base}
	interval := int64(opts.IndexIntervalBytes)
	maxPoints := opts.MaxIndexBytes/8 + 1
	res := &p.res
	sc := newFullScanner(f, path, 0, fileSize, MaxStoredEntry)
	sc.zeroEnds = true
	for {
		h, entry, ok, err := sc.nextEntry()
		if err != nil {
			if !isDamage(err) {
				return nil, err
			}
			res.Reason = err
			break
		}
		if !ok && sc.zeroAt {
			zero, err := allZero(f, sc.pos, fileSize)
			if err != nil {
				return nil, err
			}
			if zero {
				res.ZeroTailBytes = fileSize - sc.pos
				break
			}
			// Zeros with data after them are damage: scan on without the
			// rule, to report it as before.
			sc.zeroEnds, sc.zeroAt = false, false
			continue
		}
		if !ok {
			break
		}
		if err := judgeEntry(path, h, entry, t.next, base, o.NextBase); err != nil {
			res.Reason = err
			break
		}
		if h.maxTS > t.maxTS {
			t.maxTS, t.maxTSOffset = h.maxTS, h.last
		}
		if t.sinceLastEntry > interval {
			if len(p.points) < maxPoints {
				p.points = append(p.points, indexPoint{last: h.last, pos: h.pos, maxTS: t.maxTS, maxTSOffset: t.maxTSOffset})
			}
			t.sinceLastEntry = 0
		}
		t.sinceLastEntry += int64(h.size)
		t.next = h.last + 1
		res.ValidBytes = h.pos + int64(h.size)
		res.Batches++
	}
	if res.Reason != nil && t.next < o.Synced {
		return nil, syncedDamage(path, res.Reason, o.Synced)
	}
	if res.Reason != nil {
		// Whether the rest is a torn tail (cut) or damage followed by
		// valid batches (kept aside) is decided by scanning all of it.
		if res.AfterDamage, err = scanRemnant(f, path, res.ValidBytes, fileSize); err != nil {
			return nil, err
		}
	}
	res.TruncatedBytes = fileSize - res.ValidBytes
	res.NextOffset = t.next
	p.t = t
	return p, nil
}

// syncedDamage turns what ended a recovery scan into the error for damage
// below the recovery point: a torn entry there is not a torn write, since
// those bytes were synced.
func syncedDamage(path string, reason error, synced int64) error {
	// After a clean shutdown everything was synced (synced is MaxInt64):
	// say so rather than print that number.
	where := fmt.Sprintf("below the recovery point %d", synced)
	if synced == math.MaxInt64 {
		where = "in a log closed cleanly"
	}
	var ce *record.CorruptionError
	if errors.As(reason, &ce) {
		return &record.CorruptionError{File: ce.File, Pos: ce.Pos,
			Reason: fmt.Errorf("%w (%s: synced data, not a torn write)", ce.Reason, where)}
	}
	var pe *PositionError
	if errors.As(reason, &pe) {
		return &record.CorruptionError{File: pe.File, Pos: pe.Pos,
			Reason: fmt.Errorf("%v (%s: synced data, not a torn write)", pe.Err, where)}
	}
	return &record.CorruptionError{File: path, Reason: reason}
}

// Recover rebuilds the segment from its .log: PlanRecovery, then
// QuarantineTail (valid batches after the damage are copied to a
// quarantine file, reported in RecoverResult.Quarantine), then
// ApplyRecovery. The synced bytes are read once. On a
// *record.CorruptionError (damage below o.Synced) nothing was changed.
//
// An active segment stays writable; a sealed one stays sealed (made
// writable for a rebuild and sealed again, indexes trimmed, only if its
// files need one; see ApplyRecovery). Recover is a writer operation
// (no concurrent readers). A torn or damaged tail above o.Synced is cut,
// reported in RecoverResult.Reason and logged, not returned as err; other
// errors are I/O failures, after which the segment's state is undefined
// until a successful Recover.
func (s *Segment) Recover(o RecoverOptions) (RecoverResult, error) {
	p, err := PlanRecovery(s.fs, s.dir, s.base, s.opts, o)
	if err != nil {
		return RecoverResult{}, err
	}
	q, err := QuarantineTail(s.fs, s.dir, p)
	if err != nil {
		return RecoverResult{}, err
	}
	res, err := s.ApplyRecovery(p)
	res.Quarantine = q
	return res, err
}

// OpenRecovered opens the segment a recovery plan is of, sealed, and
// carries the plan out as a log's recovery does: the valid batches after
// the damage are first copied to a quarantine file (QuarantineTail,
// reported in RecoverResult.Quarantine), then the plan is applied
// (ApplyRecovery; ApplyRecoveryActive with active), and when a quarantine
// was made the cut .log is synced at once: a crash before some later sync
// would bring the damage back, and the next recovery would report the same
// quarantine again. A quarantine made is in RecoverResult.Quarantine even
// when an error follows. Opened sealed, because an active open would trust the
// old index and scan the tail, which is what recovery distrusts. The
// log's Open and fsck's repair both recover segments through it. On an
// error the segment is closed and nil returned.
func OpenRecovered(fsys vfs.FS, dir string, p *RecoveryPlan, opts Options, active bool) (*Segment, RecoverResult, error) {
	q, err := QuarantineTail(fsys, dir, p)
	if err != nil {
		return nil, RecoverResult{}, err
	}
	s, err := Open(fsys, dir, p.base, false, opts)
	if err != nil {
		return nil, RecoverResult{Quarantine: q}, err
	}
	var res RecoverResult
	if active {
		res, err = s.ApplyRecoveryActive(p)
	} else {
		res, err = s.ApplyRecovery(p)
	}
	res.Quarantine = q
	if err == nil && q != nil {
		err = s.File().Sync()
	}
	if err != nil {
		return nil, res, errors.Join(err, s.Close())
	}
	return s, res, nil
}

// ApplyRecovery carries out a plan from PlanRecovery of this segment: both
// indexes get the plan's entries (the same rule as Append), the .log is
// truncated at the end of the last valid entry, a sealed segment's time
// index gets its final entry (the running maximum), and the size, next
// offset and maximum timestamp are published. The .log must not have
// changed since the plan was made.
//
// Recovery changes only what is wrong. A sealed segment whose .log is
// valid to its end and whose index files already hold exactly the
// rebuilt entries is left as it is, nothing written, truncated or synced:
// Flush then syncs its index files too, so the log makes them durable
// before its recovery point passes them, as it does the .log (a crash may
// have come between a seal's trim and its fsync, and the page cache holds
// what the disk may not yet). Otherwise the indexes are made writable, only
// the entries that differ are stored, and the segment is sealed again
// (trimmed and fsynced). An active segment stays active: its entries are
// stored the same way and nothing is synced, as for appends (a seal makes
// them durable before anything trusts them).
func (s *Segment) ApplyRecovery(p *RecoveryPlan) (RecoverResult, error) {
	return s.applyRecovery(p, false)
}

// ApplyRecoveryActive is ApplyRecovery for a log's last segment, opened
// sealed: the segment is left active, as Unseal leaves it, indexes
// writable. Its indexes are grown back to their maximum size and mapped
// (a crashed active segment's are already at that size) and get the
// plan's entries without the final time-index entry a seal adds, which is
// what the writer had stored: when they hold them already (a SIGKILL
// leaves the page cache intact), nothing is stored, truncated or synced.
func (s *Segment) ApplyRecoveryActive(p *RecoveryPlan) (RecoverResult, error) {
	return s.applyRecovery(p, true)
}

func (s *Segment) applyRecovery(p *RecoveryPlan, activate bool) (RecoverResult, error) {
	if p.base != s.base {
		return RecoverResult{}, fmt.Errorf("segment: recovery plan for base %d applied to segment %d", p.base, s.base)
	}
	if err := s.files(); err != nil {
		return RecoverResult{}, err
	}
	path := s.LogPath()
	fileSize, err := s.log.Size()
	if err != nil {
		return RecoverResult{}, err
	}
	if fileSize != p.fileSize {
		return RecoverResult{}, fmt.Errorf("segment: %s changed size (%d, planned at %d bytes) between recovery's scan and its repair", path, fileSize, p.fileSize)
	}
	wasSealed := s.sealed.Load()
	stayActive := !wasSealed || activate
	if activate && wasSealed && s.opts.ReadOnly {
		return RecoverResult{}, fmt.Errorf("segment: recover %s as the active segment: opened read-only", path)
	}
	res, t := p.res, p.t
	off, tim, err := s.rebuiltIndexes(p, !stayActive)
	if err == nil {
		tim, err = s.keepWrittenTimeEntries(p, tim)
	}
	if err != nil {
		return RecoverResult{}, err
	}
	if wasSealed && !stayActive && res.TruncatedBytes == 0 {
		same, err := s.offIdx.Holds(off)
		if err == nil && same {
			same, err = s.timeIdx.Holds(tim)
		}
		if err != nil {
			return RecoverResult{}, err
		}
		if same {
			s.publishRecovered(res, t)
			s.indexSyncPending.Store(true)
			return res, nil
		}
	}
	if wasSealed {
		if activate {
			// As Unseal: appends and truncations go through this
			// descriptor from now on.
			if err := s.holdOpen(); err != nil {
				return RecoverResult{}, err
			}
		}
		if err := s.makeIndexesWritable(); err != nil {
			return RecoverResult{}, err
		}
	}
	if _, err := s.offIdx.Rewrite(off); err != nil {
		return RecoverResult{}, err
	}
	if _, err := s.timeIdx.Rewrite(tim); err != nil {
		return RecoverResult{}, err
	}
	if res.TruncatedBytes > 0 {
		// The caller reports the cut (the Log as a torn tail or a
		// quarantine, fsck in its report): it knows which it was.
		s.reserved, s.preallocated = 0, false
		if err := errors.Join(s.lmap.Unmap(), s.log.Truncate(res.ValidBytes)); err != nil {
			return RecoverResult{}, err
		}
	}
	s.publishRecovered(res, t)
	switch {
	case wasSealed && !stayActive:
		if err := errors.Join(s.offIdx.Seal(), s.timeIdx.Seal()); err != nil {
			return res, err
		}
	case wasSealed:
		s.sealed.Store(false)
	}
	return res, nil
}

// rebuiltIndexes builds in memory what the segment's indexes hold after
// recovery: an entry pair per plan point, the same rule as Append, and,
// for a segment that is sealed afterwards, the time index's final entry
// (the running maximum) that Seal adds.
func (s *Segment) rebuiltIndexes(p *RecoveryPlan, final bool) (*index.OffsetIndex, *index.TimeIndex, error) {
	off, tim := s.offIdx.Scratch(), s.timeIdx.Scratch()
	for _, pt := range p.points {
		err := off.Append(pt.last, pt.pos)
		if err == nil {
			err = tim.MaybeAppend(pt.maxTS, pt.maxTSOffset, false)
		}
		if errors.Is(err, index.ErrFull) {
			// Data written under a larger segment.index.bytes: lookups
			// stay correct with fewer entries, only scans get longer.
			s.opts.Logger.Warn("segment: index full during recovery; later batches not indexed", "path", s.LogPath(), "pos", pt.pos)
			break
		} else if err != nil {
			return nil, nil, err
		}
	}
	if final && p.t.maxTS >= 0 {
		if err := tim.MaybeAppend(p.t.maxTS, p.t.maxTSOffset, true); err != nil {
			return nil, nil, err
		}
	}
	return off, tim, nil
}

// publishRecovered publishes what recovery found: the size, the tail
// state, and that the segment needs no more recovery.
func (s *Segment) publishRecovered(res RecoverResult, t tail) {
	s.size.Store(res.ValidBytes)
	s.loadMu.Lock()
	s.publishTail(t)
	s.loadMu.Unlock()
	s.firstTSKnown = false
	s.needsRecovery.Store(false)
}

// judgeEntry applies recovery's checks to one scanned entry of the segment
// based at base: its checksum (and v2 framing), offsets that follow next
// and stay within the segment's 32-bit relative range, and, when nextBase
// is set (> 0), below the next segment's base. Recovery and a read-only
// view's scans judge entries with it alike.
func judgeEntry(path string, h header, entry []byte, next, base, nextBase int64) error {
	if err := checkEntry(h, entry); err != nil {
		return corruptAt(path, h.pos, err)
	}
	if h.base < next || h.last < h.base || h.last-base > math.MaxInt32 {
		return corruptAt(path, h.pos, fmt.Errorf("%w: offsets [%d, %d] after next offset %d in segment %d",
			ErrOffsetOrder, h.base, h.last, next, base))
	}
	if nextBase > 0 && h.last >= nextBase {
		return corruptAt(path, h.pos, fmt.Errorf("%w: offsets [%d, %d] reach the next segment's base offset %d",
			ErrOffsetOrder, h.base, h.last, nextBase))
	}
	return nil
}

// isDamage tells damage found in the file from I/O failures.
func isDamage(err error) bool {
	var ce *record.CorruptionError
	var pe *PositionError
	return errors.As(err, &ce) || errors.As(err, &pe)
}

// checkEntry verifies an entry's checksum (and v2 framing). Positions in
// the returned error are relative to the entry.
func checkEntry(h header, entry []byte) error {
	if h.magic == record.CurrentMagic {
		return record.Batch(entry).Validate()
	}
	return record.CheckLegacy(entry)
}

// TruncateTo removes every batch from the first one whose last offset is >=
// offset to the end, exactly as Kafka's LogSegment.truncateTo: if offset
// falls inside a batch, that whole batch goes too (so NextOffset afterwards
// is the offset after the last remaining batch, which may be below offset).
// Index entries with offsets >= offset are removed. It returns the number of
// bytes removed from the .log.
//
// A sealed segment is unsealed first: truncation into it makes it the active
// segment again. Unlike Kafka, which restarts the index byte counter at 0
// and keeps a possibly stale maximum timestamp, the counter, the running
// maximum timestamp and its offset are recomputed from the last remaining
// offset-index entry, so later appends index exactly as if the removed
// batches had never been written.
//
// The new size is published before the files shrink; readers racing with
// TruncateTo may get short reads for the removed range.
func (s *Segment) TruncateTo(offset int64) (removedBytes int64, err error) {
	if s.removed.Load() {
		return 0, fmt.Errorf("segment: truncate %s: %w", s.LogPath(), ErrClosed)
	}
	if err := s.WriteDeferred(); err != nil {
		return 0, err
	}
	if err := s.Unseal(); err != nil {
		return 0, err
	}
	size := s.size.Load()
	newSize := size
	bp, found, err := s.FindPosition(offset)
	if err != nil {
		return 0, err
	}
	if found {
		newSize = bp.Position
	}
	s.size.Store(newSize)
	if err := errors.Join(s.offIdx.TruncateTo(offset), s.timeIdx.TruncateTo(offset)); err != nil {
		return 0, err
	}
	if newSize < size {
		s.reserved, s.preallocated = 0, false
		if err := errors.Join(s.lmap.Unmap(), s.log.Truncate(newSize)); err != nil {
			return 0, fmt.Errorf("segment: truncate %s to %d bytes: %w", s.LogPath(), newSize, err)
		}
	}
	if err := s.loadTail(); err != nil {
		return size - newSize, err
	}
	if newSize == 0 {
		s.created.Store(s.opts.Now().UnixNano())
		s.firstTSKnown = false
	}
	return size - newSize, nil
}
