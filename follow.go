package seglog

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/seglog/seglog/record"
)

// Polling of Follow. A waiting follower of a read-only Log stats the last
// segment's .log (and the name the next segment would have) every
// followPoll, and lists the directory every followListEvery polls as a
// fallback for rolls it could not predict; a follower of a writable Log
// only loads its end offset.
const (
	followPoll      = 10 * time.Millisecond
	followListEvery = 50
)

// Follow iterates the records from offset from like Records, but at the end
// of the log it waits for more instead of ending, as tail -f does: records
// appended by this Log's writer or, for a read-only Log, by a writer in
// another process (new batches in the last segment and new segments; only
// complete batches with valid checksums are yielded). A read-only Log
// polls its directory while it waits (a few stat calls every 10 ms).
//
// The iteration ends without an error when ctx is done (cancelling is the
// normal way to stop a follower, so it is not reported), when the loop body
// stops it, or at the first error, which it yields: ErrOffsetOutOfRange if
// from is outside [StartOffset, EndOffset] when the iteration starts,
// ErrClosed if the Log is closed, ErrStaleView if a read-only Log's
// directory was truncated under it, a *MissingDataError at offsets missing
// from a log never compacted (as Records; it does not wait past them), or
// the damage or I/O error a read met.
// Record fields are valid only until the loop body returns, as for Records.
func (l *Log) Follow(ctx context.Context, from int64) iter.Seq2[record.Record, error] {
	return func(yield func(record.Record, error) bool) {
		if err := l.Refresh(); err != nil {
			yield(record.Record{}, err)
			return
		}
		if start, end := l.StartOffset(), l.EndOffset(); from < start || from > end {
			yield(record.Record{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, from, start, end))
			return
		}
		next := from
		timer := time.NewTimer(followPoll)
		defer timer.Stop()
		for polls := 1; ; polls++ {
			if ctx.Err() != nil {
				return
			}
			if end := l.EndOffset(); next < end {
				// Records starts below the log start if retention passed
				// the follower; it resumes at the new start instead.
				next = max(next, l.StartOffset())
				for r, err := range l.Records(next) {
					if err != nil {
						yield(record.Record{}, err)
						return
					}
					if !yield(r, nil) {
						return
					}
					next = r.Offset + 1
					if ctx.Err() != nil {
						return
					}
				}
				// Everything below end was yielded or was control records
				// (or a compaction gap): without this a trailing
				// transaction marker would be read again on every poll.
				next = max(next, end)
				continue
			}
			if err := l.followWait(ctx, timer, polls%followListEvery == 0); err != nil {
				if ctx.Err() == nil {
					yield(record.Record{}, err)
				}
				return
			}
		}
	}
}

// followWait sleeps one poll interval (or until ctx is done) and then
// brings a read-only view up to date. It returns ErrClosed once the Log is
// closed.
func (l *Log) followWait(ctx context.Context, timer *time.Timer, list bool) error {
	timer.Reset(followPoll)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
	}
	if l.ro == nil {
		l.mu.Lock()
		closed := l.mu.closed
		l.mu.Unlock()
		if closed {
			return ErrClosed
		}
		return nil
	}
	return l.ro.refreshUnlocked(list)
}
