package segment

import (
	"errors"
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
// The file is read through the scanner Batches uses (windows of 256 KiB,
// or of the largest entry if larger), whose buffer is kept in *buf:
// passing the same buf to every call keeps a compaction round to one such
// buffer.
func (s *Segment) Entries(buf *[]byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		if err := s.files(); err != nil {
			yield(nil, err)
			return
		}
		sc := &scanner{chunk: fullChunk, buf: *buf}
		sc.reset(s.log, s.LogPath(), 0, s.Size(), MaxStoredEntry)
		defer func() { *buf = sc.buf }()
		for {
			h, e, ok, err := sc.nextEntry()
			if err != nil {
				yield(nil, asReadDamage(err))
				return
			}
			if !ok {
				return
			}
			// The one legacy check recovery and fsck make, or the v2 batch's.
			if h.magic != record.CurrentMagic {
				err = record.CheckLegacy(e)
			} else {
				err = record.Batch(e).Validate()
			}
			if err != nil {
				// The byte the check names, not only the entry's start:
				// a legacy wrapper holds many messages.
				pos := h.pos
				var ce *record.CorruptionError
				if errors.As(err, &ce) {
					err, pos = ce.Reason, pos+ce.Pos
				}
				yield(nil, &record.CorruptionError{File: s.LogPath(), Pos: pos, Reason: err})
				return
			}
			if !yield(e, nil) {
				return
			}
		}
	}
}
