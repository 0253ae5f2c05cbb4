package segment

import (
	"errors"
	"fmt"
	"io"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/record"
)

// ErrChanged means a segment's .log no longer holds what a read-only view
// of it had published: a writer truncated it under the view (and perhaps
// appended again). The view cannot continue; reopen it.
var ErrChanged = errors.New("segment: .log changed under a read-only view")

// viewHead is how many leading bytes of a batch a view remembers to notice
// it being overwritten: the base offset, length, epoch, magic and CRC of a
// v2 batch (the offset, size, CRC and magic of a legacy entry), so a
// different batch at the same place differs in these bytes.
const viewHead = record.PeekSize + 4

// viewMark is the last batch a view published: its position and first
// bytes.
type viewMark struct {
	pos  int64
	head [viewHead]byte
	set  bool
}

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
// The .log is judged exactly as recovery judges it, by the same plan
// (PlanRecovery with o): damage below o.Synced is a
// *record.CorruptionError and nothing is published; otherwise the entries
// up to the first one that fails are published (Size, NextOffset, reads)
// and, unlike Recover, nothing is truncated: the rest simply stays out of
// the view.
//
// With extendable the segment stays unsealed, its indexes writable (in
// memory), so ExtendView can publish batches appended to the file later;
// otherwise the indexes are sealed again.
func (s *Segment) RebuildView(o RecoverOptions, extendable bool) (ViewResult, error) {
	if !s.opts.ReadOnly {
		return ViewResult{}, fmt.Errorf("segment: rebuild view of %s: not opened read-only", s.LogPath())
	}
	if err := s.files(); err != nil {
		return ViewResult{}, err
	}
	p, err := planRecovery(s.log, s.LogPath(), s.base, s.opts, o)
	if err != nil {
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
	from := int64(0) // where the last batch is looked for, for the mark
	for _, pt := range p.points {
		err := s.offIdx.Append(pt.last, pt.pos)
		if err == nil {
			err = s.timeIdx.MaybeAppend(pt.maxTS, pt.maxTSOffset, false)
		}
		if errors.Is(err, index.ErrFull) {
			break // lookups stay correct with fewer entries
		} else if err != nil {
			return ViewResult{}, err
		}
		from = pt.pos
	}
	res := p.res
	s.size.Store(res.ValidBytes)
	s.loadMu.Lock()
	s.publishTail(p.t)
	s.loadMu.Unlock()
	if err := s.markLast(from, res.ValidBytes); err != nil {
		return ViewResult{}, err
	}
	s.needsRecovery.Store(false)
	out := ViewResult{ValidBytes: res.ValidBytes, IgnoredBytes: res.TruncatedBytes, Batches: res.Batches,
		Reason: res.Reason, NextOffset: res.NextOffset}
	if extendable {
		s.sealed.Store(false)
		return out, nil
	}
	if ts := s.maxTS.Load(); ts >= 0 {
		if err := s.timeIdx.MaybeAppend(ts, s.maxTSOffset, true); err != nil {
			return out, err
		}
	}
	if err := errors.Join(s.offIdx.Seal(), s.timeIdx.Seal()); err != nil {
		return out, err
	}
	s.sealed.Store(true)
	return out, nil
}

// markLast remembers the last entry that starts at or after from (an entry
// boundary) and ends by end, reading headers only.
func (s *Segment) markLast(from, end int64) error {
	s.view = viewMark{}
	sc := s.newHeaderScanner(from, end)
	defer sc.release()
	last := int64(-1)
	for {
		h, ok, err := sc.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		last = h.pos
	}
	if last < 0 {
		return nil
	}
	if _, err := s.log.ReadAt(s.view.head[:], last); err != nil {
		return fmt.Errorf("segment: read %s at byte %d: %w", s.LogPath(), last, err)
	}
	s.view.pos, s.view.set = last, true
	return nil
}

// ExtendView publishes the valid batches written to the .log after the
// published end of a segment made extendable by RebuildView, indexing them
// in memory as Append would have. Entries are checked as PlanRecovery
// checks them, bounded by maxEntryBytes (<= 0 means MaxStoredEntry, the
// bound of stored data, never MaxBatchBytes). A batch still being written
// fails its checksum or runs past the end of the file: it is left for a
// later call. A file now shorter than the published size, or whose last
// published batch is no longer the same, is ErrChanged. Calls must not
// overlap (the caller serializes them, as it would appends); readers may
// run concurrently. A segment not opened read-only, or sealed, is refused.
func (s *Segment) ExtendView(maxEntryBytes int) (ViewResult, error) {
	if !s.opts.ReadOnly {
		return ViewResult{}, fmt.Errorf("segment: extend view of %s: not opened read-only", s.LogPath())
	}
	if s.sealed.Load() {
		return ViewResult{}, fmt.Errorf("segment: extend view of %s: %w", s.LogPath(), ErrSealed)
	}
	if s.view.set {
		var head [viewHead]byte
		if _, err := s.log.ReadAt(head[:], s.view.pos); err != nil && !errors.Is(err, io.EOF) {
			return ViewResult{}, err
		} else if err != nil || head != s.view.head {
			return ViewResult{}, &PositionError{File: s.LogPath(), Pos: s.view.pos,
				Err: fmt.Errorf("%w: the last batch published is no longer there", ErrChanged)}
		}
	}
	t := tail{next: s.next.Load(), maxTS: s.maxTS.Load(), maxTSOffset: s.maxTSOffset, sinceLastEntry: s.sinceLastEntry}
	return s.scanView(maxEntryBytes, t)
}

// scanView validates the entries from the published size to the current
// end of the file, indexes them and publishes them, starting from tail
// state t. It checks what planRecovery checks, incrementally: a plan
// always starts at byte 0, and a follower must not rescan the segment on
// every poll.
func (s *Segment) scanView(maxEntryBytes int, t tail) (ViewResult, error) {
	if maxEntryBytes <= 0 {
		maxEntryBytes = MaxStoredEntry
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
			Err: fmt.Errorf("%w: %d bytes published, %d in the file", ErrChanged, from, fileSize)}
	}
	interval := int64(s.opts.IndexIntervalBytes)
	indexing := !s.offIdx.IsFull()
	sc := newFullScanner(s.log, path, from, fileSize, maxEntryBytes)
	// A live writer's preallocated file: the zeros after its last batch
	// are not written yet (Kafka's rule; the view publishes nothing past
	// them and cuts nothing).
	sc.zeroEnds = true
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
		if err := judgeEntry(path, h, entry, t.next, s.base, 0); err != nil {
			res.Reason = err
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
		s.view.pos, s.view.set = h.pos, true
		copy(s.view.head[:], entry)
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
