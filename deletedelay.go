package seglog

import (
	"sync"
	"time"

	"github.com/seglog/seglog/segment"
)

// SetFileDeleteDelay sets Kafka's file.delete.delay.ms for segments the log
// removes from now on (DeleteBefore, truncation): their files are renamed
// to .deleted at once, as always, but unlinked only once d has passed by
// the log's clock (Options.Clock) and the last reader has let go, whichever
// is later. Zero, the default, unlinks when the last reader lets go. Close
// ends every delay: a .deleted file left by a crash is removed by the next
// Open anyway.
func (l *Log) SetFileDeleteDelay(d time.Duration) {
	l.delayed.mu.Lock()
	l.delayed.delay = max(d, 0)
	l.delayed.mu.Unlock()
}

// ExpireDeleted unlinks (by dropping the delay's hold) the removed segments
// whose file.delete.delay.ms has passed by the log's clock, and returns
// how many holds it dropped; a segment a reader still holds is unlinked
// when that reader lets go. A timer calls it when a delay ends; a caller
// with its own clock (a cleaner under test) may call it at any time.
func (l *Log) ExpireDeleted() int {
	return l.delayed.expire(l.opts.Clock.Now(), false)
}

// delayedDeletes holds a reference on each removed segment until its
// file.delete.delay.ms ends; the segment's own reference count then
// decides when the files go, so the later of the delay and the last
// reader wins without any other bookkeeping.
type delayedDeletes struct {
	mu      sync.Mutex
	delay   time.Duration
	pending []delayedSegment
	closed  bool
}

type delayedSegment struct {
	seg *segment.Segment
	due time.Time
}

// hold keeps s's files until the delay ends. Called by retire after
// Remove, before the Log drops its own reference.
func (d *delayedDeletes) hold(l *Log, s *segment.Segment) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.delay <= 0 || d.closed || !s.Acquire() {
		return
	}
	d.pending = append(d.pending, delayedSegment{seg: s, due: l.opts.Clock.Now().Add(d.delay)})
	// The timer runs on real time; under a test clock it may find nothing
	// due, and the test calls ExpireDeleted after advancing its clock.
	time.AfterFunc(d.delay, func() { l.ExpireDeleted() })
}

// expire drops the holds that are due at now, or all of them when all is
// set (Close), and reports how many it dropped.
func (d *delayedDeletes) expire(now time.Time, all bool) int {
	d.mu.Lock()
	var due []*segment.Segment
	kept := d.pending[:0]
	for _, p := range d.pending {
		if all || !p.due.After(now) {
			due = append(due, p.seg)
		} else {
			kept = append(kept, p)
		}
	}
	clear(d.pending[len(kept):])
	d.pending = kept
	if all {
		d.closed = true
	}
	d.mu.Unlock()
	// Releasing unlinks files: done outside the lock.
	for _, s := range due {
		s.Release()
	}
	return len(due)
}

// releaseAll ends every delay; Close calls it so no descriptor outlives
// the Log.
func (d *delayedDeletes) releaseAll() { d.expire(time.Time{}, true) }
