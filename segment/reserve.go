package segment

import (
	"errors"
	"fmt"

	"github.com/seglog/seglog/vfs"
)

// Block reservation for the active .log (Options.ReserveBytes).
//
// A write that extends a file on ext4 (and xfs) first reserves blocks for
// the new pages (delayed allocation) and records them in the inode's
// extent tree; a write into blocks already reserved by fallocate skips
// that, and measured here a 100 KiB append costs about 25 µs instead of
// 33 µs (docs/benchmarks.md). FALLOC_FL_KEEP_SIZE reserves without moving
// the end of file, so the bytes past the last batch never exist as far as
// readers, recovery, fsck or Kafka are concerned: nothing else has to know.

// reserveFor makes sure the blocks for a write of [pos, end) are reserved,
// reserving the next Options.ReserveBytes when they are not. It is a hint:
// a failure (a full disk, a filesystem without fallocate) is ignored, and
// the next attempt waits for another ReserveBytes of appends, so a disk
// that cannot reserve costs one system call per ReserveBytes, not one per
// append. The write that follows reports a real lack of space.
func (s *Segment) reserveFor(pos, end int64) {
	chunk := s.opts.ReserveBytes
	if chunk <= 0 || end <= s.reserved {
		return
	}
	if s.opts.HoldReserve != nil && s.opts.HoldReserve() {
		return // asked again at the next write past the reservation
	}
	from := max(s.reserved, pos)
	n := max(chunk, end-from)
	_ = s.log.Reserve(from, n) // a hint; see above
	s.reserved = from + n
}

// releaseReserved gives back the blocks reserved past the end of the .log
// with a truncate to the current size, which frees them on ext4
// (TestReserveReleasedOnSealAndClose checks it wherever fallocate works).
// Called when the segment stops being the active one.
//
// A preallocated .log (Options.Preallocate) is trimmed here too: to its
// logical end, so a sealed or closed segment has exactly Kafka's layout.
func (s *Segment) releaseReserved() error {
	if s.reserved == 0 && !s.preallocated {
		return nil
	}
	trimmed := s.preallocated
	s.reserved, s.preallocated = 0, false
	// The modification time stays the last append's: retention by time
	// falls back to it, and the flusher may do this well after the roll.
	if err := errors.Join(s.lmap.Unmap(), vfs.TruncateKeepingModTime(s.log, s.size.Load())); err != nil {
		return fmt.Errorf("segment: releasing the space reserved past the end of %s: %w", s.LogPath(), err)
	}
	if trimmed {
		s.trimPending.Store(true)
	}
	return nil
}

// TrimPending reports whether the .log was trimmed from its preallocated
// size (Options.Preallocate) since the last Flush: until the next Flush a
// power loss may bring the untrimmed size back. A log must not let its
// recovery point pass such a segment, since recovery trusts the size of
// the segments below it.
func (s *Segment) TrimPending() bool { return s.trimPending.Load() }

// maybeWriteBack starts the writeback of the .log's pages written since the
// last one once there are Options.WriteBackBytes of them. It runs in a
// goroutine of its own, one at a time per segment: done inline,
// sync_file_range's submission of the pages cost the appender more than
// the stall it saved (docs/benchmarks.md, "Issue 32"). It is a hint, as
// reserveFor is: a failure is ignored, since the pages stay dirty in the
// page cache and the next Flush writes them and reports any error.
func (s *Segment) maybeWriteBack(end int64) {
	chunk := s.opts.WriteBackBytes
	if chunk <= 0 {
		return
	}
	if end < s.writtenBack {
		s.writtenBack = 0 // cut back: start again from the front
	}
	if end-s.writtenBack < chunk || !s.writeBackBusy.CompareAndSwap(false, true) {
		return
	}
	from := s.writtenBack
	s.writtenBack = end
	s.writeBacks.Add(1)
	go func() {
		defer s.writeBacks.Done()
		_ = vfs.WriteBack(s.log, from, end-from) // a hint; see above
		s.writeBackBusy.Store(false)
	}()
}
