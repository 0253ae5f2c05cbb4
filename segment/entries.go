package segment

import (
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/seglog/seglog/record"
)

// Entries yields every entry of the segment from its start, in file order,
// whatever its magic: v2 batches CRC-checked as Batches yields them, and
// legacy (v0/v1) messages, which Batches skips, framed and checked against
// their CRC-32 (IEEE, from the magic byte on, as Kafka checks it).
// Compaction rewrites legacy messages too, as Kafka's cleaner does. An
// entry is valid only inside the loop body. Damage is a
// *record.CorruptionError carrying the file and position; no buffer is
// sized beyond the bytes the segment holds.
//
// The file is read through a window of 1 MiB, or of the largest entry if
// larger, kept in *buf: passing the same buf to every call keeps a
// compaction round to one such buffer.
func (s *Segment) Entries(buf *[]byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		size := s.Size()
		// One read per window rather than two per entry.
		lo, hi := int64(0), int64(0) // the file range *buf holds
		need := func(pos int64, n int) ([]byte, error) {
			if pos+int64(n) > hi {
				want := min(max(int64(n), 1<<20), size-pos)
				if int64(cap(*buf)) < want {
					*buf = make([]byte, want)
				}
				w := (*buf)[:want]
				if _, err := s.ReadAt(w, pos); err != nil {
					return nil, entryReadErr(s.LogPath(), pos, err)
				}
				lo, hi = pos, pos+want
			}
			return (*buf)[pos-lo : pos-lo+int64(n) : pos-lo+int64(n)], nil
		}
		for pos := int64(0); pos < size; {
			if size-pos < record.PeekSize {
				yield(nil, &record.CorruptionError{File: s.LogPath(), Pos: pos, Reason: io.ErrUnexpectedEOF})
				return
			}
			hdr, err := need(pos, record.PeekSize)
			if err != nil {
				yield(nil, err)
				return
			}
			n, magic, err := record.PeekEntry(hdr)
			if err == nil && int64(n) > size-pos {
				err = fmt.Errorf("entry of %d bytes runs past the segment's %d", n, size)
			}
			if err != nil {
				yield(nil, &record.CorruptionError{File: s.LogPath(), Pos: pos, Reason: err})
				return
			}
			e, err := need(pos, n)
			if err != nil {
				yield(nil, err)
				return
			}
			// The one legacy check recovery and fsck make, or the v2 batch's.
			if magic != record.CurrentMagic {
				err = record.CheckLegacy(e)
			} else {
				err = record.Batch(e).Validate()
			}
			if err != nil {
				var ce *record.CorruptionError
				if errors.As(err, &ce) {
					err = ce.Reason
					pos += ce.Pos
				}
				yield(nil, &record.CorruptionError{File: s.LogPath(), Pos: pos, Reason: err})
				return
			}
			if !yield(e, nil) {
				return
			}
			pos += int64(n)
		}
	}
}

// entryReadErr is a read error of Entries: the end of the file inside the
// segment's size is damage, anything else an I/O error.
func entryReadErr(file string, pos int64, err error) error {
	if errors.Is(err, io.EOF) {
		return &record.CorruptionError{File: file, Pos: pos, Reason: io.ErrUnexpectedEOF}
	}
	return fmt.Errorf("segment: reading %s at %d: %w", file, pos, err)
}
