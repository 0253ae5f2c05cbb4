package segment

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/record"
)

// Append writes b at the end of the .log, adds index entries by the rule in
// the package documentation, and then publishes the new size and next
// offset, so concurrent readers see either none or all of the batch.
//
// b must be a complete RecordBatch v2 whose bytes already carry their final
// offsets; Append does not check the CRC (the Log validated the batch) but
// refuses, with an error wrapping ErrBadAppend and without writing, a batch
// whose framing disagrees with its length, a magic other than 2, a base
// offset below NextOffset, a last offset below the base offset or more than
// 2^31-1 past the segment's base offset, a size above MaxBatchBytes, or one
// that would push the file past 2^31-1 bytes. A full index fails with an
// error wrapping index.ErrFull (ShouldRoll says when to roll first).
//
// If the write fails, the file is cut back to its previous size, so a
// failed Append leaves no trace (unless the cut fails too, which is
// reported alongside).
func (s *Segment) Append(b record.Batch) error {
	if len(s.pend.buf) > 0 {
		// Keep file order: deferred batches go first.
		if err := s.WriteDeferred(); err != nil {
			return err
		}
	}
	return s.append(b, false)
}

// AppendDeferred is Append without the write: b is copied into the
// segment's pending buffer and its index entries are added, but nothing
// reaches the file and nothing is published until WriteDeferred, which
// writes every pending batch with one write call. A group-commit writer
// uses it so that the batches of many appenders cost one system call.
// Positions, roll checks and offset checks see the pending batches.
func (s *Segment) AppendDeferred(b record.Batch) error { return s.append(b, true) }

// pending is the state of deferred batches, writer only.
type pending struct {
	buf   []byte // the batches, back to back; they start at the published size
	next  int64  // next offset after them
	maxTS int64  // running max timestamp including them
}

// WriteDeferred writes the pending batches with one write and publishes
// them. A failed write leaves them unpublished and the segment unusable
// for appends (its indexes name positions that were never written): the
// caller must stop appending and recover the segment, as the Log does by
// refusing appends until it is reopened.
func (s *Segment) WriteDeferred() error {
	if len(s.pend.buf) == 0 {
		return nil
	}
	pos := s.size.Load()
	if err := s.ensurePreallocated(); err != nil {
		s.broken = true
		return fmt.Errorf("segment: append to %s at byte %d: %w", s.LogPath(), pos, err)
	}
	s.reserveFor(pos, pos+int64(len(s.pend.buf)))
	if _, err := s.log.Write(s.pend.buf); err != nil {
		s.broken = true
		return fmt.Errorf("segment: append to %s at byte %d: %w", s.LogPath(), pos, err)
	}
	s.maxTS.Store(s.pend.maxTS)
	s.size.Store(pos + int64(len(s.pend.buf)))
	s.next.Store(s.pend.next)
	s.pend.buf = s.pend.buf[:0]
	if cap(s.pend.buf) > maxPendingKeep {
		s.pend.buf = nil // do not pin a burst's memory
	}
	return nil
}

// maxPendingKeep bounds the pending buffer kept between groups.
const maxPendingKeep = 4 << 20

// writerSize is the size of the .log as the writer sees it: published
// bytes plus pending ones.
func (s *Segment) writerSize() int64 { return s.size.Load() + int64(len(s.pend.buf)) }

func (s *Segment) append(b record.Batch, deferred bool) error {
	if s.broken {
		return fmt.Errorf("segment: append to %s: %w: an earlier deferred write failed", s.LogPath(), ErrClosed)
	}
	if s.sealed.Load() {
		return fmt.Errorf("segment: append to %s: %w", s.LogPath(), ErrSealed)
	}
	if s.removed.Load() {
		return fmt.Errorf("segment: append to %s: %w", s.LogPath(), ErrClosed)
	}
	if !s.tailLoaded.Load() {
		if err := s.loadTail(); err != nil {
			return err
		}
	}
	pos := s.writerSize()
	if err := s.checkAppend(b, pos); err != nil {
		return err
	}
	return s.write(b, b.LastOffset(), b.MaxTimestamp(), pos, deferred)
}

// write puts entry, whose checks passed, at pos (the writer's size), ending
// at offset last with max timestamp batchTS: the index rule (an offset- and
// a time-index entry when more than IndexIntervalBytes were appended since
// the last one) and the running max timestamp are applied here, for
// appends and for Writer alike.
func (s *Segment) write(entry []byte, last, batchTS, pos int64, deferred bool) error {
	n := int64(len(entry))
	indexIt := s.sinceLastEntry > int64(s.opts.IndexIntervalBytes)
	if indexIt {
		if s.offIdx.IsFull() {
			return fmt.Errorf("segment: append to %s: offset index: %w", s.LogPath(), index.ErrFull)
		}
		if s.timeIdx.IsFull() {
			return fmt.Errorf("segment: append to %s: time index: %w", s.LogPath(), index.ErrFull)
		}
	}

	// Before anything is written or pending: a failed preallocation leaves
	// the segment as it was.
	if err := s.ensurePreallocated(); err != nil {
		return err
	}
	pendingBefore := len(s.pend.buf)
	if deferred {
		if pendingBefore == 0 {
			s.pend.maxTS = s.maxTS.Load()
		}
		s.pend.buf = append(s.pend.buf, entry...)
	} else {
		s.reserveFor(pos, pos+n)
		if _, err := s.log.Write(entry); err != nil {
			return s.undoAppend(pos, fmt.Errorf("segment: append to %s at byte %d: %w", s.LogPath(), pos, err))
		}
	}
	undo := func(err error) error {
		if deferred {
			s.pend.buf = s.pend.buf[:pendingBefore]
			return err
		}
		return s.undoAppend(pos, err)
	}

	maxTS, maxTSOffset := s.maxTS.Load(), s.maxTSOffset
	if deferred {
		maxTS = s.pend.maxTS
	}
	if batchTS > maxTS {
		maxTS, maxTSOffset = batchTS, last
	}
	if indexIt {
		err := s.offIdx.Append(last, pos)
		if err == nil {
			err = s.timeIdx.MaybeAppend(maxTS, maxTSOffset, false)
		}
		if err != nil {
			// Drop whatever entry this append added; entries of earlier
			// batches have smaller offsets and stay.
			err = errors.Join(err, s.offIdx.TruncateTo(last))
			if maxTSOffset == last {
				err = errors.Join(err, s.timeIdx.TruncateTo(last))
			}
			return undo(err)
		}
		s.sinceLastEntry = 0
	}
	s.sinceLastEntry += n
	s.maxTSOffset = maxTSOffset
	if pos == 0 {
		// Kafka's rollingBasedTimestamp: the age of a segment is measured
		// from its first batch's max timestamp.
		s.firstTS, s.firstTSKnown = batchTS, true
	}
	if deferred {
		s.pend.next, s.pend.maxTS = last+1, maxTS
		return nil
	}
	// Publish last: readers load size (and next) before touching the
	// indexes or the file, so they never see past a complete batch.
	s.maxTS.Store(maxTS)
	s.size.Store(pos + n)
	s.next.Store(last + 1)
	s.maybeWriteBack(pos + n)
	return nil
}

// checkAppend validates what Append relies on before anything is written.
func (s *Segment) checkAppend(b record.Batch, pos int64) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("segment: append to %s: %w: %s", s.LogPath(), ErrBadAppend, fmt.Sprintf(format, args...))
	}
	if len(b) < record.HeaderSize {
		return bad("%d bytes, shorter than a batch header", len(b))
	}
	if b.Size() != len(b) {
		return bad("length field says %d bytes, have %d", b.Size(), len(b))
	}
	if b.Magic() != record.CurrentMagic {
		return bad("magic %d", b.Magic())
	}
	if len(b) > s.opts.MaxBatchBytes {
		return fmt.Errorf("segment: append to %s: %w: %w: %d bytes, limit %d",
			s.LogPath(), ErrBadAppend, record.ErrTooLarge, len(b), s.opts.MaxBatchBytes)
	}
	return s.checkPlace(b.BaseOffset(), b.LastOffset(), pos, len(b))
}

// checkPlace validates where an entry of n bytes spanning offsets
// [base, last] would go: after the offsets written, within the segment's
// relative offset range, and within the 32-bit positions of the file.
func (s *Segment) checkPlace(base, last, pos int64, n int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("segment: append to %s: %w: %s", s.LogPath(), ErrBadAppend, fmt.Sprintf(format, args...))
	}
	next := s.next.Load()
	if len(s.pend.buf) > 0 {
		next = s.pend.next
	}
	if base < next {
		return bad("base offset %d below next offset %d", base, next)
	}
	if last < base {
		return bad("last offset %d below base offset %d", last, base)
	}
	if last-s.base > math.MaxInt32 {
		return bad("last offset %d more than 2^31-1 past base offset %d", last, s.base)
	}
	if pos+int64(n) > math.MaxInt32 {
		return bad("file would grow past 2^31-1 bytes")
	}
	return nil
}

// undoAppend cuts the .log back to pos after a failed append and returns
// cause (joined with the cut's own failure, if any).
func (s *Segment) undoAppend(pos int64, cause error) error {
	// A truncate releases the blocks reserved past the end and the
	// preallocated range; the next append allocates again.
	s.reserved, s.preallocated = 0, false
	if err := errors.Join(s.lmap.Unmap(), s.log.Truncate(pos)); err != nil {
		return errors.Join(cause, fmt.Errorf("segment: undoing append to %s: %w", s.LogPath(), err))
	}
	return cause
}

// RollCheck describes the batch about to be appended and the roll policy,
// for ShouldRoll.
type RollCheck struct {
	// NextBatchSize is the size in bytes of the batch about to be appended.
	NextBatchSize int
	// LastOffset is the last offset of the batch about to be appended.
	LastOffset int64
	// MaxTimestamp is the max timestamp of the batch about to be appended.
	// Kafka measures a segment's age in record time when its first batch
	// has a timestamp: MaxTimestamp minus that timestamp.
	MaxTimestamp int64
	// Now is the wall clock, used for the age of a segment whose first
	// batch has no timestamp (measured from the segment's creation or
	// opening, as Kafka does).
	Now time.Time
	// MaxSegmentBytes is segment.bytes; <= 0 means no size limit other than
	// the 2^31-1 bytes positions can address.
	MaxSegmentBytes int64
	// MaxAge is segment.ms; <= 0 disables the age check.
	MaxAge time.Duration
	// Jitter is the segment's roll jitter (drawn once per segment by the
	// caller), subtracted from MaxAge.
	Jitter time.Duration
}

// ShouldRoll reports whether the batch described by r must go to a new
// segment. As Kafka's LogSegment.shouldRoll, it is true if any holds:
//
//   - Size() > MaxSegmentBytes - NextBatchSize (the batch would overflow),
//     or the file would exceed 2^31-1 bytes;
//   - the segment is not empty and its age exceeds MaxAge - Jitter, the age
//     being r.MaxTimestamp minus the first batch's max timestamp when that
//     is >= 0, else r.Now minus the segment's creation (or open) time;
//   - the offset index is full, or the time index is (its last slot is
//     reserved for the final entry written by Seal);
//   - r.LastOffset is below the base offset or more than 2^31-1 past it.
//
// ShouldRoll is meant for the active segment and the writer's goroutine.
func (s *Segment) ShouldRoll(r RollCheck) bool {
	size := s.writerSize()
	if r.MaxSegmentBytes > 0 && size > r.MaxSegmentBytes-int64(r.NextBatchSize) {
		return true
	}
	if size+int64(r.NextBatchSize) > math.MaxInt32 {
		return true
	}
	if size > 0 && r.MaxAge > 0 && s.age(r) > r.MaxAge-r.Jitter {
		return true
	}
	if s.offIdx.IsFull() || s.timeIdx.IsFull() {
		return true
	}
	rel := r.LastOffset - s.base
	return rel < 0 || rel > math.MaxInt32
}

// age is Kafka's timeWaitedForRoll.
func (s *Segment) age(r RollCheck) time.Duration {
	if !s.firstTSKnown {
		s.loadFirstTS()
	}
	if s.firstTSKnown && s.firstTS >= 0 {
		return time.Duration(r.MaxTimestamp-s.firstTS) * time.Millisecond
	}
	return r.Now.Sub(s.Created())
}

// loadFirstTS reads the first batch's max timestamp of a reopened segment.
// A read failure leaves it unknown, so the age falls back to wall-clock
// time since opening; the error will surface on the next real read.
func (s *Segment) loadFirstTS() {
	end := s.size.Load()
	if end == 0 {
		return
	}
	sc := s.newHeaderScanner(0, end)
	defer sc.release()
	h, ok, err := sc.next()
	if err != nil || !ok {
		if err != nil {
			s.opts.Logger.Warn("segment: reading first batch timestamp", "path", s.LogPath(), "err", err)
		}
		return
	}
	s.firstTS, s.firstTSKnown = h.maxTS, true
}
