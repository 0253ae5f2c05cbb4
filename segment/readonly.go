package segment

import (
	"errors"
	"fmt"
	"math"

	"github.com/seglog/seglog/index"
)

// ErrShrunk means a segment's .log is now shorter than what a read-only view
// of it had already published: a writer truncated it (or deleted and
// recreated it) under the view. The view cannot continue; reopen it.
var ErrShrunk = errors.New("segment: .log shrank under a read-only view")

// ViewResult describes what RebuildView or ExtendView found.
type ViewResult struct {
	// ValidBytes is the published size of the .log after the call: the end
	// of the last valid batch.
	ValidBytes int64
	// IgnoredBytes is how many bytes after ValidBytes the file holds that
	// were not published: a torn tail, damage, or a batch still being
	// written. They are left in the file.
	IgnoredBytes int64
	// Batches is the number of valid entries the call added.
	Batches int
	// Reason says why the scan stopped before the end of the file, nil if it
	// reached the end. The errors are those of RecoverResult.Reason.
	Reason error
	// NextOffset is the offset after the last valid batch.
	NextOffset int64
}

// RebuildView rebuilds the segment's indexes from its .log without
// changing the .log, for a read-only view of a directory that must not be
// modified (a consumer, a follower of another process's log, a directory
// owned by another user). The segment must have been opened sealed with
// Options.ReadOnly, and its FS must keep index files where writing them
// harms nothing (the read-only Log gives it a filesystem that keeps every
// index file it writes in memory): the indexes are emptied and rebuilt
// there.
//
// Entries are checked exactly as Recover checks them (framing, size within
// maxEntryBytes and the file, magic, checksum, offset order). The scan stops
// at the first entry that fails; unlike Recover, nothing is truncated: the
// bytes from there on are simply not published (Size, NextOffset, reads end
// before them).
//
// With extendable the segment stays unsealed, its indexes writable (in
// memory), so ExtendView can publish batches appended to the file later;
// otherwise the indexes are sealed again.
func (s *Segment) RebuildView(maxEntryBytes int, extendable bool) (ViewResult, error) {
	if !s.opts.ReadOnly {
		return ViewResult{}, fmt.Errorf("segment: rebuild view of %s: not opened read-only", s.LogPath())
	}
	if err := s.files(); err != nil {
		return ViewResult{}, err
	}
	if s.sealed.Load() {
		if err := s.makeIndexesWritable(); err != nil {
			return ViewResult{}, err
		}
	}
	if err := errors.Join(s.offIdx.Reset(), s.timeIdx.Reset()); err != nil {
		return ViewResult{}, err
	}
	s.size.Store(0)
	t := tail{next: s.base, maxTS: -1, maxTSOffset: s.base}
	res, err := s.scanView(maxEntryBytes, t)
	if err != nil {
		return res, err
	}
	s.needsRecovery.Store(false)
	if extendable {
		s.sealed.Store(false)
		return res, nil
	}
	if ts := s.maxTS.Load(); ts >= 0 {
		if err := s.timeIdx.MaybeAppend(ts, s.maxTSOffset, true); err != nil {
			return res, err
		}
	}
	if err := errors.Join(s.offIdx.Seal(), s.timeIdx.Seal()); err != nil {
		return res, err
	}
	s.sealed.Store(true)
	return res, nil
}

// ExtendView publishes the valid batches written to the .log after the
// published end of a segment made extendable by RebuildView, indexing them
// in memory as Append would have. A batch still being written fails its
// checksum or runs past the end of the file: it is left for a later call.
// A file now shorter than the published size is ErrShrunk. Calls must not
// overlap (the caller serializes them, as it would appends); readers may
// run concurrently.
func (s *Segment) ExtendView(maxEntryBytes int) (ViewResult, error) {
	if !s.opts.ReadOnly || s.sealed.Load() {
		return ViewResult{}, fmt.Errorf("segment: extend view of %s: %w", s.LogPath(), ErrSealed)
	}
	t := tail{next: s.next.Load(), maxTS: s.maxTS.Load(), maxTSOffset: s.maxTSOffset, sinceLastEntry: s.sinceLastEntry}
	return s.scanView(maxEntryBytes, t)
}

// scanView validates the entries from the published size to the current
// end of the file, indexes them and publishes them, starting from tail
// state t.
func (s *Segment) scanView(maxEntryBytes int, t tail) (ViewResult, error) {
	if maxEntryBytes <= 0 {
		maxEntryBytes = math.MaxInt32
	}
	path := s.LogPath()
	from := s.size.Load()
	fileSize, err := s.log.Size()
	if err != nil {
		return ViewResult{}, err
	}
	res := ViewResult{ValidBytes: from, NextOffset: t.next}
	if fileSize < from {
		return res, &PositionError{File: path, Pos: fileSize,
			Err: fmt.Errorf("%w: %d bytes published, %d in the file", ErrShrunk, from, fileSize)}
	}
	interval := int64(s.opts.IndexIntervalBytes)
	indexing := !s.offIdx.IsFull()
	sc := newFullScanner(s.log, path, from, fileSize, maxEntryBytes)
	for {
		h, entry, ok, err := sc.nextEntry()
		if err != nil {
			if !isDamage(err) {
				return res, err
			}
			res.Reason = err
			break
		}
		if !ok {
			break
		}
		if err := checkEntry(h, entry); err != nil {
			res.Reason = corruptAt(path, h.pos, err)
			break
		}
		if h.base < t.next || h.last < h.base || h.last-s.base > math.MaxInt32 {
			res.Reason = corruptAt(path, h.pos, fmt.Errorf("%w: offsets [%d, %d] after next offset %d in segment %d",
				ErrOffsetOrder, h.base, h.last, t.next, s.base))
			break
		}
		if h.maxTS > t.maxTS {
			t.maxTS, t.maxTSOffset = h.maxTS, h.last
		}
		if indexing && t.sinceLastEntry > interval {
			err := s.offIdx.Append(h.last, h.pos)
			if err == nil {
				err = s.timeIdx.MaybeAppend(t.maxTS, t.maxTSOffset, false)
			}
			if errors.Is(err, index.ErrFull) {
				// Lookups stay correct with fewer entries; only scans from
				// the last entry get longer.
				indexing = false
			} else if err != nil {
				return res, err
			}
			t.sinceLastEntry = 0
		}
		t.sinceLastEntry += int64(h.size)
		t.next = h.last + 1
		res.ValidBytes = h.pos + int64(h.size)
		res.Batches++
	}
	res.IgnoredBytes = fileSize - res.ValidBytes
	res.NextOffset = t.next
	// The bytes first, then the offsets: a reader that sees the new next
	// offset finds its batch within the published size.
	s.size.Store(res.ValidBytes)
	s.loadMu.Lock()
	s.publishTail(t)
	s.loadMu.Unlock()
	return res, nil
}
