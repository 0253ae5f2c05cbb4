package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/record"
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
	// the file position of the entry, or of the damage within it) wrapping
	// the cause: record's CRC or framing errors, record.ErrTooLarge,
	// record.ErrUnsupportedMagic, or ErrOffsetOrder.
	Reason error
	// NextOffset is the offset after the last valid batch (the base offset
	// if none).
	NextOffset int64
}

// Recover rebuilds the segment from its .log, as Kafka's LogSegment.recover
// does: both indexes are emptied, the entries are read from position 0, and
// each must have a legal length, fit in the file (MaxStoredEntry: never
// Options.MaxBatchBytes, which bounds appends, not what is kept), carry a known magic and a valid
// checksum (CRC-32C for v2; CRC-32 for legacy v0/v1 entries, which are
// kept and skipped by size, their offset field being their last offset),
// and have offsets above the previous entry's and within the segment's
// 32-bit relative range. Index entries are added with the same rule as
// Append. The .log is truncated at the first entry that fails (or a partial
// one at the end), the time index gets its final entry (the running
// maximum), and the size, next offset and maximum timestamp are published.
//
// An active segment stays writable; a sealed one is made writable for the
// rebuild and sealed again (indexes trimmed). Recover is a writer operation
// (no concurrent readers). Damage is reported in RecoverResult.Reason and
// logged, not returned as err; err is reserved for I/O failures, after
// which the segment's state is undefined until a successful Recover.
func (s *Segment) Recover() (RecoverResult, error) {
	if err := s.files(); err != nil {
		return RecoverResult{}, err
	}
	path := s.LogPath()
	wasSealed := s.sealed.Load()
	if wasSealed {
		if err := s.makeIndexesWritable(); err != nil {
			return RecoverResult{}, err
		}
	}
	if err := errors.Join(s.offIdx.Reset(), s.timeIdx.Reset()); err != nil {
		return RecoverResult{}, err
	}
	fileSize, err := s.log.Size()
	if err != nil {
		return RecoverResult{}, err
	}

	t := tail{next: s.base, maxTS: -1, maxTSOffset: s.base}
	interval := int64(s.opts.IndexIntervalBytes)
	var res RecoverResult
	indexing := true
	sc := newFullScanner(s.log, path, 0, fileSize, MaxStoredEntry)
	for {
		h, entry, ok, err := sc.nextEntry()
		if err != nil {
			if !isDamage(err) {
				return RecoverResult{}, err
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
				// Data written under a larger segment.index.bytes: lookups
				// stay correct with fewer entries, only scans get longer.
				s.opts.Logger.Warn("segment: index full during recovery; later batches not indexed", "path", path, "pos", h.pos)
				indexing = false
			} else if err != nil {
				return RecoverResult{}, err
			}
			t.sinceLastEntry = 0
		}
		t.sinceLastEntry += int64(h.size)
		t.next = h.last + 1
		res.ValidBytes = h.pos + int64(h.size)
		res.Batches++
	}

	res.TruncatedBytes = fileSize - res.ValidBytes
	res.NextOffset = t.next
	if res.TruncatedBytes > 0 {
		s.opts.Logger.Warn("segment: truncating invalid tail", "path", path,
			"valid_bytes", res.ValidBytes, "truncated_bytes", res.TruncatedBytes, "reason", res.Reason)
		s.reserved = 0
		if err := errors.Join(s.lmap.Unmap(), s.log.Truncate(res.ValidBytes)); err != nil {
			return RecoverResult{}, err
		}
	}
	if t.maxTS >= 0 {
		if err := s.timeIdx.MaybeAppend(t.maxTS, t.maxTSOffset, true); err != nil {
			return RecoverResult{}, err
		}
	}
	s.size.Store(res.ValidBytes)
	s.loadMu.Lock()
	s.publishTail(t)
	s.loadMu.Unlock()
	s.firstTSKnown = false
	s.needsRecovery.Store(false)
	if wasSealed {
		if err := errors.Join(s.offIdx.Seal(), s.timeIdx.Seal()); err != nil {
			return res, err
		}
	}
	return res, nil
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
	// Legacy: offset(8) size(4) crc(4) magic(1) attributes(1) [timestamp(8)
	// for v1] key length(4) ... ; the CRC-32 (IEEE) covers magic to the end.
	const v1Min = record.LogOverhead + 22
	if h.magic == 1 && len(entry) < v1Min {
		return &record.CorruptionError{Pos: 8, Reason: fmt.Errorf("v1 entry of %d bytes, below the minimum %d", len(entry), v1Min)}
	}
	want := binary.BigEndian.Uint32(entry[record.LogOverhead:])
	if got := crc32.ChecksumIEEE(entry[record.MagicOffset:]); got != want {
		return &record.CorruptionError{Pos: record.LogOverhead, Reason: fmt.Errorf("legacy crc 0x%08x, computed 0x%08x", want, got)}
	}
	return nil
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
		s.reserved = 0
		if err := errors.Join(s.lmap.Unmap(), s.log.Truncate(newSize)); err != nil {
			return 0, fmt.Errorf("segment: truncate %s to %d bytes: %w", s.LogPath(), newSize, err)
		}
	}
	if err := s.loadTail(); err != nil {
		return size - newSize, err
	}
	if newSize == 0 {
		s.created = s.opts.Now()
		s.firstTSKnown = false
	}
	return size - newSize, nil
}
