package seglog

import (
	"errors"
	"fmt"
	"iter"
	"math"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
)

// ErrTimestampNotFound: no record has a timestamp at or after the one asked
// for.
var ErrTimestampNotFound = errors.New("seglog: no record at or after the timestamp")

// Records iterates the records from offset from to the end of the log as it
// is when the iteration reaches it, decoding (and decompressing) each batch.
// Control records (transaction markers) are skipped. A Record's Key, Value
// and Headers are valid only until the loop body returns: copy what must be
// kept. The iteration stops at the first error, which names the file and
// byte position for damaged data; from outside [StartOffset, EndOffset]
// yields ErrOffsetOutOfRange.
//
// A TruncateTo that overtakes the iteration never makes it yield a record
// the truncation removed once TruncateTo has returned, nor report the log
// corrupt because bytes it was reading were cut or overwritten. If the
// truncation removed the iteration's position or any record it already
// yielded, the iteration ends with an error matching ErrTruncated;
// otherwise it goes on, from where it was, with whatever the log holds
// there now. An iteration that retention (DeleteBefore) overtakes ends with
// ErrOffsetOutOfRange at the first record below the new start, as a Kafka
// consumer's next fetch there would; it never yields a record below a start
// that DeleteBefore had set when the record was read.
//
// The iteration never jumps over missing data: offsets absent between
// segments of a log never compacted, or named by an offset index past the
// end of its .log, end it with a *MissingDataError (ErrMissingData) after
// every record before them. A compacted log's gaps are skipped, as Kafka's
// consumers skip them. Gaps between batches inside one segment are not
// looked for: the iteration cannot tell one from legacy (v0/v1) entries,
// which it skips without reading their offsets.
func (l *Log) Records(from int64) iter.Seq2[record.Record, error] {
	return func(yield func(record.Record, error) bool) {
		l.refreshIfBehind(from)
		c := cursor{log: l, gen: l.truncations.current(), next: from}
		c.it.MaxDecompressed = l.maxDecompressed()
		if start, end := l.StartOffset(), l.EndOffset(); from < start || from > end {
			yield(record.Record{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, from, start, end))
			return
		}
		for {
			if c.run(yield) == stopped {
				return
			}
			// At the end, or overtaken by a truncation: decide which.
			low, now := l.truncations.settle(c.gen)
			if low == math.MaxInt64 {
				// No truncation since the last pass: the end, unless
				// retention removed the segment it was moving to.
				if start := l.StartOffset(); c.next < start {
					yield(record.Record{}, fmt.Errorf("%w: the iteration at %d fell below the log start %d", ErrOffsetOutOfRange, c.next, start))
				}
				return
			}
			if low < c.next {
				yield(record.Record{}, fmt.Errorf("%w: offsets from %d were removed while an iteration stood at %d", ErrTruncated, low, c.next))
				return
			}
			// Nothing the iteration has seen or stands on was removed:
			// go on from the same offset in the truncated log.
			c.gen = now
			if start := l.StartOffset(); c.next < start {
				yield(record.Record{}, fmt.Errorf("%w: %d is below the start %d", ErrOffsetOutOfRange, c.next, start))
				return
			}
		}
	}
}

// cursor is a Records iteration: the offset it has reached and the
// truncation generation its segment references and byte positions are
// valid for.
type cursor struct {
	log  *Log
	gen  uint64
	next int64 // every record below has been yielded (or skipped)
	it   record.Iterator
}

// How a pass of a cursor ended.
type passEnd int

const (
	exhausted passEnd = iota // the end of the log, or a truncation began
	stopped                  // the consumer stopped, or an error was yielded
)

// run yields records from c.next until the end of the log, the consumer
// stops, an error, or a truncation that began after c.gen (it then stops
// before yielding anything that truncation may have removed).
func (c *cursor) run(yield func(record.Record, error) bool) passEnd {
	l := c.log
	seg := l.acquireFloor(c.next)
	pos := int64(-1)
	for seg != nil {
		var end passEnd
		var more bool
		pos, more, end = c.yieldSegment(seg, pos, yield)
		if !more {
			seg.Release()
			return end
		}
		// The segment may have grown while it was read; only once a
		// later segment exists is it final (a roll seals it first).
		next := l.acquireAfter(seg)
		if seg.Size() > pos {
			if next != nil {
				next.Release()
			}
			continue
		}
		if next != nil {
			// Every record of seg below the log's end has been yielded:
			// offsets up to the next segment's base that it did not
			// hold are a compaction's gap or missing data.
			if err := l.checkGap(seg, c.next, next.BaseOffset()); err != nil {
				next.Release()
				seg.Release()
				return c.failed(err, yield)
			}
		}
		seg.Release()
		seg, pos = next, -1
	}
	return exhausted
}

// failed ends a pass at err: it yields err, unless a truncation under way
// or done since c.gen may have caused it (a file cut or rewritten under
// the reader), in which case the caller settles what happened.
func (c *cursor) failed(err error, yield func(record.Record, error) bool) passEnd {
	if c.log.truncations.begunSince(c.gen) {
		return exhausted
	}
	yield(record.Record{}, err)
	return stopped
}

// yieldSegment yields the records of seg at or after c.next and below the
// log's end, starting at byte pos (-1: find c.next's batch). It returns the
// position it stopped at and whether the iteration may go on to what
// follows in the log; if not, how the pass ended.
func (c *cursor) yieldSegment(seg *segment.Segment, pos int64, yield func(record.Record, error) bool) (int64, bool, passEnd) {
	l := c.log
	// fail yields err, unless a truncation under way or done since c.gen
	// may have caused it (a file cut or rewritten under the reader): the
	// caller then settles what happened.
	fail := func(err error) (int64, bool, passEnd) {
		return pos, false, c.failed(err, yield)
	}
	size := seg.Size()
	if pos < 0 {
		pos = 0
		if c.next > seg.BaseOffset() {
			bp, ok, err := seg.FindPosition(c.next)
			if err != nil {
				return fail(l.lookupMissing(seg, c.next, err))
			}
			if !ok {
				return size, true, exhausted
			}
			pos = bp.Position
		}
	}
	// Offsets must rise from batch to batch and stay inside the segment's
	// range [base, next segment's base): a batch that breaks this has a
	// valid CRC (the base offset lies outside it) but would hand out
	// offsets that belong to other records, so it is damage.
	prevLast := int64(-1)
	nextBase := l.baseAfter(seg)
	for b, err := range seg.Batches(pos, size) {
		if err != nil {
			return fail(err)
		}
		if base, last := b.BaseOffset(), b.LastOffset(); base < seg.BaseOffset() || base <= prevLast || last >= nextBase {
			return fail(&CorruptionError{File: seg.LogPath(), Pos: pos, Reason: fmt.Errorf(
				"%w: batch offsets [%d, %d] after %d, in the segment [%d, %d)", segment.ErrOffsetOrder, base, last, prevLast, seg.BaseOffset(), nextBase)})
		}
		prevLast = b.LastOffset()
		at := pos
		pos += int64(len(b))
		if b.BaseOffset() >= l.end.Load() {
			return pos, false, exhausted
		}
		if b.LastOffset() < c.next {
			continue
		}
		if b.IsControl() {
			c.next = b.LastOffset() + 1
			continue
		}
		if err := c.it.Reset(b); err != nil {
			return fail(batchDamage(seg.LogPath(), at, err))
		}
		for c.it.Next() {
			// The record is not copied out before yield: at 100-byte
			// records a copy of the 88-byte struct was a tenth of the
			// iteration.
			off := c.it.Offset()
			if off < c.next {
				continue
			}
			// The start first, then the truncations: a truncation below
			// the start begins before it lowers the start, so a start
			// seen lowered here is a truncation seen begun below, and a
			// start DeleteBefore had raised is never missed because a
			// truncation lowered it in between (the other order let a
			// record retention had removed through).
			if start := l.start.Load(); off < start {
				// Retention removed it since the iteration began: a
				// Kafka consumer fetching here would be told the same.
				yield(record.Record{}, fmt.Errorf("%w: the iteration at %d fell below the log start %d", ErrOffsetOutOfRange, off, start))
				return pos, false, stopped
			}
			// The bytes were read before this check: a truncation that
			// returned before them is seen here, and the record is held
			// back until the caller knows whether it removed it.
			if l.truncations.begunSince(c.gen) {
				return pos, false, exhausted
			}
			if !yield(c.it.Record(), nil) {
				return pos, false, stopped
			}
			c.next = off + 1
		}
		if err := c.it.Err(); err != nil {
			return fail(batchDamage(seg.LogPath(), at, err))
		}
		c.next = max(c.next, b.LastOffset()+1)
	}
	// The pass read everything up to size, including legacy (v0/v1)
	// entries, which it skips without yielding: size, not the sum of the
	// batches yielded, is where the next pass starts.
	return size, true, exhausted
}

// OffsetForTime returns the offset of the first record, in offset order,
// whose timestamp is at or after ts, as Kafka's ListOffsets answers it: the
// first segment whose largest timestamp reaches ts is searched through its
// time index. It returns ErrTimestampNotFound when no segment reaches ts.
// The answer is never an offset below the start or one that a truncation
// which returned before OffsetForTime did removed: a lookup that a
// truncation overtakes starts over (and gives up with ErrTruncated if
// truncations keep cutting under it). Missing data the search passes
// before it finds an answer (MissingDataError) may have held the answer:
// that is the error returned, not an offset after the gap.
func (l *Log) OffsetForTime(ts int64) (int64, error) {
	for attempt := 0; attempt < maxReadAttempts; attempt++ {
		gen := l.truncations.current()
		off, err := l.offsetForTime(ts)
		last := int64(math.MaxInt64) // a miss or an error may come from a cut
		if err == nil {
			last = off
		}
		if l.truncations.overtook(gen, last) {
			continue
		}
		if err == nil && off < l.StartOffset() {
			continue // retention moved the start past it meanwhile
		}
		return off, err
	}
	return 0, fmt.Errorf("%w: looking up timestamp %d", ErrTruncated, ts)
}

// offsetForTime is one attempt of OffsetForTime.
func (l *Log) offsetForTime(ts int64) (int64, error) {
	start := l.StartOffset()
	seg := l.acquireFloor(start)
	for seg != nil {
		searched := false
		if seg.MaxTimestamp() >= ts {
			// Records below the log start are gone even where their
			// segment remains.
			off, ok, err := seg.FindOffsetForTimeFrom(ts, start)
			if err != nil {
				claimed, _ := seg.NextOffsetErr()
				err = l.lookupMissing(seg, claimed-1, err)
				seg.Release()
				return 0, err
			}
			if ok && off < l.EndOffset() {
				seg.Release()
				return off, nil
			}
			searched = true
		}
		next := l.acquireAfter(seg)
		if next != nil {
			// Offsets missing before the next segment may have held
			// the answer: it cannot be given. A segment whose time index
			// promised a match it did not yield is checked against its
			// .log (as if nothing of it had been reached), which costs a
			// lookup; the others only compare offsets.
			reached, _ := seg.NextOffsetErr() // checkGap judges a wrong one
			if searched {
				reached = seg.BaseOffset()
			}
			if err := l.checkGap(seg, reached, next.BaseOffset()); err != nil {
				next.Release()
				seg.Release()
				return 0, err
			}
		}
		seg.Release()
		seg = next
	}
	return 0, fmt.Errorf("%w: %d", ErrTimestampNotFound, ts)
}

// batchDamage places a record decoding error of the batch at byte at of
// file as the segment layer places its own: the error points at the
// batch's start (where fsck and dump point too) and the message names the
// failing byte. Errors that are not damage (a decompression limit) pass
// unchanged.
func batchDamage(file string, at int64, err error) error {
	var ce *record.CorruptionError
	if !errors.As(err, &ce) {
		return err
	}
	return &CorruptionError{File: file, Pos: at, Reason: fmt.Errorf("%w (at byte %d)", ce.Reason, at+ce.Pos)}
}
