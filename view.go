package seglog

import (
	"context"
	"iter"

	"github.com/seglog/seglog/record"
)

// View is a read-only handle on a Log: its bounds, its segments and its
// records, and nothing that changes it. No method of a View appends,
// rolls, deletes, truncates, syncs or closes the log, so an embedder
// (package store, package raftlog) can hand a View of a log it owns to
// its callers and keep every write its own. A View is a small value;
// copy it freely. It is safe for concurrent use, as the Log is. The zero
// View has no log and must not be used.
//
// A View answers for the Log it was taken from, and the Log's owner may
// close it under the View: a store closes an idle partition, a deleted
// topic's, or all of them when it closes. Reading a closed Log never
// reads freed state: Read, Records, Follow and OffsetForTime answer
// ErrClosed once the Log is closed (a read that a Close overtakes returns
// ErrClosed too, or the records it had already read), and so does
// UnservedTail of a read-only Log (a writable one has no unserved tail). The bounds (StartOffset, EndOffset, Size, NumSegments) keep
// answering the values they had when the Log closed, and Segments is
// empty. A View holds nothing that needs releasing; the owner's own
// handle (store.Store.AcquireLog's release) says how long the Log stays
// open.
type View struct{ l *Log }

// View returns a read-only handle on l.
func (l *Log) View() View { return View{l} }

// Dir returns the log's directory.
func (v View) Dir() string { return v.l.Dir() }

// StartOffset returns the first offset of the log (Log.StartOffset).
func (v View) StartOffset() int64 { return v.l.StartOffset() }

// EndOffset returns the offset the next appended record will get
// (Log.EndOffset): the log holds [StartOffset, EndOffset).
func (v View) EndOffset() int64 { return v.l.EndOffset() }

// Size returns the total bytes of the log's segment files.
func (v View) Size() int64 { return v.l.Size() }

// NumSegments returns how many segments the log has.
func (v View) NumSegments() int { return v.l.NumSegments() }

// Segments returns a snapshot of the log's segments in offset order
// (Log.Segments); it is empty once the Log is closed.
func (v View) Segments() []SegmentInfo { return v.l.Segments() }

// Read returns up to maxBytes of whole batches from offset on, for
// sending without copying (Log.Read). It answers ErrClosed once the Log
// is closed.
func (v View) Read(offset int64, maxBytes int, opts ReadOptions) (*Slice, error) {
	sl, err := v.l.Read(offset, maxBytes, opts)
	if (err != nil || sl.Len() == 0) && v.l.isClosed() {
		// A closed Log's segments are gone: it reads as empty, which is
		// not the answer (and would keep a caught-up reader polling).
		if sl != nil {
			sl.Close()
		}
		return nil, ErrClosed
	}
	return sl, err
}

// Records iterates the records from offset from to the end of the log
// (Log.Records). An iteration that finds the Log closed (before it
// starts or under it) ends with ErrClosed.
func (v View) Records(from int64) iter.Seq2[record.Record, error] {
	return func(yield func(record.Record, error) bool) {
		for r, err := range v.l.Records(from) {
			if err != nil {
				if v.l.isClosed() {
					err = ErrClosed
				}
				yield(record.Record{}, err)
				return
			}
			if !yield(r, nil) {
				return
			}
		}
		// A closed Log yields nothing: the iteration says why instead
		// of passing for the end of the log.
		if v.l.isClosed() {
			yield(record.Record{}, ErrClosed)
		}
	}
}

// Follow iterates the records from offset from like Records and waits
// for more at the end of the log (Log.Follow). It ends with ErrClosed
// once the Log is closed.
func (v View) Follow(ctx context.Context, from int64) iter.Seq2[record.Record, error] {
	return v.l.Follow(ctx, from)
}

// OffsetForTime returns the offset of the first record whose timestamp
// is at or after ts (Log.OffsetForTime). It answers ErrClosed once the
// Log is closed.
func (v View) OffsetForTime(ts int64) (int64, error) {
	off, err := v.l.OffsetForTime(ts)
	if err != nil && v.l.isClosed() {
		return 0, ErrClosed
	}
	return off, err
}

// UnservedTail reports the bytes a read-only Log does not serve at the
// end of its last segment (Log.UnservedTail).
func (v View) UnservedTail() (UnservedTail, bool, error) { return v.l.UnservedTail() }

// isClosed reports whether Close has begun. A View asks only when a read
// came back empty or failed, so the reads that find records take no lock
// for it.
func (l *Log) isClosed() bool {
	if l.ro != nil {
		l.ro.mu.Lock()
		defer l.ro.mu.Unlock()
		return l.ro.closed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.closed
}
