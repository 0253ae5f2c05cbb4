package seglog

import (
	"errors"
	"fmt"
	"iter"

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
func (l *Log) Records(from int64) iter.Seq2[record.Record, error] {
	return func(yield func(record.Record, error) bool) {
		l.refreshIfBehind(from)
		if start, end := l.StartOffset(), l.EndOffset(); from < start || from > end {
			yield(record.Record{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, from, start, end))
			return
		}
		it := record.Iterator{MaxDecompressed: l.maxDecompressed()}
		seg := l.acquireFloor(from)
		pos := int64(-1)
		for seg != nil {
			var ok bool
			if pos, ok = l.yieldSegment(seg, from, pos, &it, yield); !ok {
				seg.Release()
				return
			}
			// The segment may have grown while it was read; only once a
			// later segment exists is it final (a roll seals it first).
			next := l.acquireNext(seg.BaseOffset())
			if seg.Size() > pos {
				if next != nil {
					next.Release()
				}
				continue
			}
			seg.Release()
			seg, pos = next, -1
		}
	}
}

// yieldSegment yields the records of seg at or after from and below the
// log's end, starting at byte pos (-1: find from's batch). It returns the
// position it stopped at and false when the iteration must stop.
func (l *Log) yieldSegment(seg *segment.Segment, from, pos int64, it *record.Iterator, yield func(record.Record, error) bool) (int64, bool) {
	size := seg.Size()
	if pos < 0 {
		pos = 0
		if from > seg.BaseOffset() {
			bp, ok, err := seg.FindPosition(from)
			if err != nil {
				yield(record.Record{}, err)
				return pos, false
			}
			if !ok {
				return size, true
			}
			pos = bp.Position
		}
	}
	for b, err := range seg.Batches(pos, size) {
		if err != nil {
			yield(record.Record{}, asLogCorruption(err))
			return pos, false
		}
		pos += int64(len(b))
		if b.BaseOffset() >= l.end.Load() {
			return pos, false
		}
		if b.IsControl() || b.LastOffset() < from {
			continue
		}
		if err := it.Reset(b); err != nil {
			yield(record.Record{}, fmt.Errorf("seglog: %s: %w", seg.LogPath(), err))
			return pos, false
		}
		for it.Next() {
			r := it.Record()
			if r.Offset < from {
				continue
			}
			if !yield(r, nil) {
				return pos, false
			}
		}
		if err := it.Err(); err != nil {
			yield(record.Record{}, fmt.Errorf("seglog: %s: %w", seg.LogPath(), err))
			return pos, false
		}
	}
	return pos, true
}

// OffsetForTime returns the offset of the first record, in offset order,
// whose timestamp is at or after ts, as Kafka's ListOffsets answers it: the
// first segment whose largest timestamp reaches ts is searched through its
// time index. It returns ErrTimestampNotFound when no segment reaches ts.
func (l *Log) OffsetForTime(ts int64) (int64, error) {
	start := l.StartOffset()
	seg := l.acquireFloor(start)
	for seg != nil {
		if seg.MaxTimestamp() >= ts {
			// Records below the log start are gone even where their
			// segment remains.
			off, ok, err := seg.FindOffsetForTimeFrom(ts, start)
			if err != nil {
				seg.Release()
				return 0, err
			}
			if ok && off < l.EndOffset() {
				seg.Release()
				return off, nil
			}
		}
		next := l.acquireNext(seg.BaseOffset())
		seg.Release()
		seg = next
	}
	return 0, fmt.Errorf("%w: %d", ErrTimestampNotFound, ts)
}

// asLogCorruption is kept for its callers: the segment layer's damage is
// already a *CorruptionError (record's type, which the root aliases) with
// the file and position, so there is nothing left to convert.
func asLogCorruption(err error) error { return err }
