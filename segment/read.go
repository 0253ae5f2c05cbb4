package segment

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// BatchPosition locates a batch in the .log.
type BatchPosition struct {
	// Position is the byte position of the batch in the .log.
	Position int64
	// Size is the batch's size in bytes, log overhead included.
	Size int64
	// BaseOffset and LastOffset are the batch's first and last offsets. A
	// legacy (v0/v1) entry only records its last offset; BaseOffset is
	// reported equal to it.
	BaseOffset, LastOffset int64
}

// FindPosition returns the first batch whose last offset is >= offset, as
// Kafka's LogSegment.translateOffset does: the offset index gives the floor
// entry (or the start of the file), then batch headers are read forward
// (whole batches are never read). The batch may begin before offset; callers
// skip its earlier records. It returns false if no such batch lies within
// the published size. Damage met on the way (an impossible length field, an
// entry running past the published end) is an error carrying the file and
// position.
func (s *Segment) FindPosition(offset int64) (BatchPosition, bool, error) {
	if err := s.files(); err != nil {
		return BatchPosition{}, false, err
	}
	end := s.size.Load() // before the index: see the package doc
	if next := s.next.Load(); next >= 0 && offset >= next {
		return BatchPosition{}, false, nil
	}
	floor, ceil, hasCeil, err := s.offIdx.LookupBoundsErr(offset)
	if err != nil {
		return BatchPosition{}, false, err
	}
	if err := s.checkFloor(floor, end); err != nil {
		return BatchPosition{}, false, err
	}
	if hasCeil && ceil.Position > floor.Position && ceil.Position < end {
		// The ceiling entry names a batch whose last offset reaches
		// offset; if that batch also starts at or below offset it is the
		// answer, found with one header read instead of a scan from the
		// floor (whose own batch ends below offset). When batches are
		// larger than the index interval this is every lookup.
		bp, ok, err := s.batchAt(ceil.Position, end)
		if err != nil {
			return BatchPosition{}, false, err
		}
		if ok && bp.BaseOffset <= offset && bp.LastOffset >= offset {
			return bp, true, nil
		}
	}
	return s.findFrom(floor.Position, end, offset)
}

var headerBufs = sync.Pool{New: func() any { return new([record.HeaderSize]byte) }}

// batchAt reads the header of the batch at pos, for the shortcut above. An
// I/O error is returned; any doubt about the bytes (a legacy entry, a size
// past end) answers false and the caller scans instead, which reports
// damage with its position.
func (s *Segment) batchAt(pos, end int64) (BatchPosition, bool, error) {
	if end-pos < record.HeaderSize {
		return BatchPosition{}, false, nil
	}
	// Pooled: a stack array would escape through the ReadAt interface call
	// and cost an allocation per lookup.
	hp := headerBufs.Get().(*[record.HeaderSize]byte)
	defer headerBufs.Put(hp)
	hdr := hp[:]
	if !s.lmap.ReadAt(s.log, hdr, pos, end) {
		if _, err := s.log.ReadAt(hdr, pos); err != nil {
			return BatchPosition{}, false, fmt.Errorf("segment: reading %s at byte %d: %w", s.LogPath(), pos, err)
		}
	}
	size, magic, err := record.PeekEntry(hdr)
	if err != nil || magic != record.CurrentMagic || pos+int64(size) > end {
		return BatchPosition{}, false, nil
	}
	b := record.Batch(hdr)
	return BatchPosition{Position: pos, Size: int64(size), BaseOffset: b.BaseOffset(), LastOffset: b.LastOffset()}, true, nil
}

// checkFloor rejects an index entry that points at or past the end of a
// sealed segment's .log: nothing is appended to a sealed segment, so such an
// entry means the .log lost bytes under its index (an unrecovered crash, a
// file cut by hand), and answering "not found" would make readers skip data.
// On the active segment the entry can be one Append wrote after end was
// loaded; its batch is simply not published yet.
func (s *Segment) checkFloor(floor index.OffsetPosition, end int64) error {
	if floor.Position < end || (floor.Position == 0 && end == 0) || !s.sealed.Load() {
		return nil
	}
	return &index.Error{Op: "lookup", Path: s.offIdx.Path(), Pos: -1, Err: index.ErrCorrupt,
		Detail: fmt.Sprintf("entry for offset %d points at byte %d, the .log has %d bytes", floor.Offset, floor.Position, end)}
}

func (s *Segment) findFrom(from, end, offset int64) (BatchPosition, bool, error) {
	if from >= end {
		// An index entry appended after end was loaded: its batch is not
		// published yet, and neither is any batch with a larger offset.
		return BatchPosition{}, false, nil
	}
	sc := s.newHeaderScanner(from, end)
	defer sc.release()
	for {
		h, ok, err := sc.next()
		if err != nil || !ok {
			return BatchPosition{}, false, asReadDamage(err)
		}
		if h.last >= offset {
			return BatchPosition{Position: h.pos, Size: int64(h.size), BaseOffset: h.base, LastOffset: h.last}, true, nil
		}
	}
}

// FindOffsetForTime returns the offset of the first record, in offset order,
// whose timestamp is >= ts; false if the segment has none. See
// FindOffsetForTimeFrom.
func (s *Segment) FindOffsetForTime(ts int64) (int64, bool, error) {
	return s.FindOffsetForTimeFrom(ts, s.base)
}

// FindOffsetForTimeFrom is Kafka's LogSegment.findOffsetByTimestamp: the
// first record with timestamp >= ts and offset >= from. The time index gives
// the last entry with timestamp <= ts, the offset index a position for
// max(that entry's offset, from); batches are then scanned by header,
// skipping those whose max timestamp is below ts, and the records of the
// first candidate are decoded (CRC checked). Timestamps need not be
// monotonic: the answer is the first match in offset order after the
// indexed position. Legacy (v0/v1) entries are skipped.
func (s *Segment) FindOffsetForTimeFrom(ts, from int64) (int64, bool, error) {
	if err := s.files(); err != nil {
		return 0, false, err
	}
	end := s.size.Load()
	if ts > s.MaxTimestamp() {
		return 0, false, nil
	}
	te, err := s.timeIdx.LookupErr(ts)
	if err != nil {
		return 0, false, err
	}
	floor, err := s.offIdx.LookupErr(max(te.Offset, from))
	if err != nil {
		return 0, false, err
	}
	if err := s.checkFloor(floor, end); err != nil {
		return 0, false, err
	}
	if floor.Position >= end {
		return 0, false, nil
	}
	sc := s.newHeaderScanner(floor.Position, end)
	defer sc.release()
	var it record.Iterator
	for {
		h, ok, err := sc.next()
		if err != nil || !ok {
			return 0, false, asReadDamage(err)
		}
		if h.magic != record.CurrentMagic || h.maxTS < ts || h.last < from {
			continue
		}
		b, err := sc.need(h.pos, h.size)
		if err != nil {
			return 0, false, err
		}
		batch := record.Batch(b)
		if err := batch.Validate(); err != nil {
			return 0, false, corruptAt(s.LogPath(), h.pos, err)
		}
		if err := it.Reset(batch); err != nil {
			return 0, false, corruptAt(s.LogPath(), h.pos, err)
		}
		for it.Next() {
			if r := it.Record(); r.Timestamp >= ts && r.Offset >= from {
				return r.Offset, true, nil
			}
		}
		if err := it.Err(); err != nil {
			return 0, false, corruptAt(s.LogPath(), h.pos, err)
		}
	}
}

// ReadAt reads from the .log at pos, never past the published size: it
// returns io.EOF when p reaches beyond it. Safe for concurrent readers.
func (s *Segment) ReadAt(p []byte, pos int64) (int, error) {
	if err := s.files(); err != nil {
		return 0, err
	}
	end := s.size.Load()
	if pos < 0 {
		return 0, fmt.Errorf("segment: read %s: negative position %d", s.LogPath(), pos)
	}
	if pos >= end {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	short := false
	if int64(len(p)) > end-pos {
		p, short = p[:end-pos], true
	}
	n, err := s.log.ReadAt(p, pos)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

// File returns the open .log file, for sendfile. It stays valid, even after
// Remove, while the caller holds a reference (Acquire). Bytes beyond Size
// are not published. It is nil if the files of a sealed segment cannot be
// opened (FindPosition and ReadAt report why).
func (s *Segment) File() vfs.File {
	if s.files() != nil {
		return nil
	}
	return s.log
}

// Batches yields the v2 batches whose entries start in [fromPos, toPos),
// each validated (framing, magic, CRC-32C), in file order. fromPos must be a
// batch boundary (from FindPosition, or 0); toPos beyond Size is clamped to
// it. A batch that does not fit before a toPos below Size ends the sequence
// quietly (the caller's bound cut it); one that runs past Size is damage.
// Legacy (v0/v1) entries are skipped.
//
// A yielded Batch aliases a buffer the sequence reuses: it is valid only
// until the loop body returns. An error is yielded once, with a nil Batch,
// and ends the sequence; damage is a *record.CorruptionError (or a
// *PositionError) carrying the file and position. No buffer is sized
// beyond the bytes left in the file (see MaxStoredEntry).
func (s *Segment) Batches(fromPos, toPos int64) iter.Seq2[record.Batch, error] {
	return func(yield func(record.Batch, error) bool) {
		if err := s.files(); err != nil {
			yield(nil, err)
			return
		}
		end := s.size.Load()
		toPos = min(toPos, end)
		if fromPos < 0 {
			yield(nil, fmt.Errorf("segment: read %s: negative position %d", s.LogPath(), fromPos))
			return
		}
		if fromPos >= toPos {
			return
		}
		sc := getFullScanner(s.log, s.LogPath(), fromPos, toPos, MaxStoredEntry)
		defer putFullScanner(sc)
		for {
			h, b, ok, err := sc.nextEntry()
			if err != nil {
				if toPos < end && errors.Is(err, ErrTornTail) {
					return
				}
				yield(nil, asReadDamage(err))
				return
			}
			if !ok {
				return
			}
			if h.magic != record.CurrentMagic {
				continue
			}
			batch := record.Batch(b)
			if err := batch.Validate(); err != nil {
				yield(nil, corruptAt(s.LogPath(), h.pos, err))
				return
			}
			if !yield(batch, nil) {
				return
			}
		}
	}
}

// LastBatchWithin returns the last batch that starts at or after from (the
// start of a batch) and ends at or before limit, for cutting a read at a
// batch boundary. The offset index is searched by position for the entries
// around limit, so only the headers of the last batch or two before limit
// are read, however long the range. It returns false if no whole batch
// after from fits.
func (s *Segment) LastBatchWithin(from, limit int64) (BatchPosition, bool, error) {
	if err := s.files(); err != nil {
		return BatchPosition{}, false, err
	}
	end := s.size.Load()
	limit = min(limit, end)
	// The largest entry whose batch starts at or before limit; the scan
	// starts one entry earlier, because that batch may end past limit.
	n := s.offIdx.Entries()
	lo, hi := 0, n // entries [0, lo) start at or before limit
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		e, err := s.offIdx.EntryErr(mid)
		if err != nil {
			return BatchPosition{}, false, err
		}
		if e.Position <= limit {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	start := from
	if lo >= 2 {
		e, err := s.offIdx.EntryErr(lo - 2)
		if err != nil {
			return BatchPosition{}, false, err
		}
		start = max(start, e.Position)
	}
	sc := s.newHeaderScanner(start, end)
	defer sc.release()
	var best BatchPosition
	found := false
	for {
		h, ok, err := sc.next()
		if err != nil {
			return BatchPosition{}, false, asReadDamage(err)
		}
		if !ok || h.pos+int64(h.size) > limit {
			return best, found, nil
		}
		best = BatchPosition{Position: h.pos, Size: int64(h.size), BaseOffset: h.base, LastOffset: h.last}
		found = true
	}
}
