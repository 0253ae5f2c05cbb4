package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/seglog/seglog/record"
)

// DefaultMaxEntryBytes is the read limit: the largest entry a Scanner
// reads into memory when NewScanner is given none. It is not a rule about
// the data (a log stores batches of any size its segments hold, and a
// topic may raise max.message.bytes at any time), only a bound on what one
// untrusted length field can make a reader allocate. An entry the file
// holds but that is larger than it comes back as KindReadLimit, never as
// damage, and nothing is cut there.
const DefaultMaxEntryBytes = 64 << 20

// Kind classifies what a Scanner found wrong with an entry; the values
// are the names fsck reports them by (fsck.Kind is this type, and
// docs/fsck.md describes each).
type Kind string

// The kinds a Scanner reports.
const (
	KindTornTail  Kind = "torn-tail"  // partial entry at the end of the file
	KindBadLength Kind = "bad-length" // length field too small, too large, or past the end of the file
	KindBadMagic  Kind = "bad-magic"  // magic byte other than 0, 1 or 2
	KindCRC       Kind = "crc"        // checksum mismatch
	KindBadHeader Kind = "bad-header" // other header damage: unknown codec, negative count
	// KindReadLimit is an entry the file holds whole but that is larger
	// than the scanner's read limit: not verified, not damage.
	KindReadLimit Kind = "read-limit"
)

// readChunk is how much of a .log a Scanner reads per call: large enough
// that system calls cost nothing next to the CRC, small enough to stay in
// cache.
const readChunk = 4 << 20

// Entry is one entry of a .log file as Scanner saw it: a valid batch (or
// legacy v0/v1 message set entry), or a damaged region.
type Entry struct {
	// Pos is the entry's (or the damaged region's) byte position in the file.
	Pos int64
	// Size is the entry's size in bytes; for damage, the length of the
	// damaged region: the bytes up to the next valid batch or the end of
	// the file.
	Size int64
	// Magic is the entry's format: 2 for RecordBatch v2, 0 or 1 for legacy.
	Magic int8
	// Batch holds the entry's bytes; it aliases the scanner's buffer and is
	// valid until the next call to Next. For legacy entries only the first
	// 17 bytes follow the v2 layout (offset, length, magic). Nil for damage.
	Batch record.Batch
	// Err is the damage found at Pos; nil for a valid entry.
	Err error
	// Kind classifies Err.
	Kind Kind
	// ToEnd says the damaged region runs to the end of the file: no valid
	// batch follows it in this file.
	ToEnd bool
	// Torn says the damage looks like an interrupted write: a last entry
	// whose length runs past the end of the file, a fragment shorter than
	// an entry header, or only zero bytes to the end of the file.
	Torn bool
}

// Damaged reports whether the entry is a damaged region, or an entry
// larger than the read limit (OverLimit), which could not be verified.
func (e *Entry) Damaged() bool { return e.Err != nil }

// OverLimit reports whether the entry is one the file holds whole but
// that is larger than the scanner's read limit: it was skipped by its
// length field without reading or verifying it. It is not damage; Kind is
// KindReadLimit, Size the declared size, and Batch holds only the entry's
// header (record.HeaderSize bytes for v2, record.PeekSize for legacy), so
// its offsets can be read but not trusted.
func (e *Entry) OverLimit() bool { return e.Kind == KindReadLimit }

// LastOffset is the entry's last offset: base offset plus last offset
// delta for v2, the offset field for legacy entries (which Kafka sets to
// the last inner offset).
func (e *Entry) LastOffset() int64 {
	if e.Magic == record.CurrentMagic {
		return e.Batch.LastOffset()
	}
	return e.Batch.BaseOffset()
}

// BaseOffset is the entry's first offset (the offset field for legacy
// entries, whose first inner offset is not in the header).
func (e *Entry) BaseOffset() int64 { return e.Batch.BaseOffset() }

// Scanner walks the entries of a .log file front to back and reports
// damage as regions instead of stopping at it: the scan fsck, seglog dump
// and the ui make. Each entry is framed by record.PeekEntry and verified
// whole as recovery verifies it (record.Batch.Validate, record.CheckLegacy).
// It reads the file in 4 MiB chunks through io.ReaderAt (never mapping it,
// so a concurrent truncation cannot fault the process) and never allocates
// more than the larger of 4 MiB and the read limit, whatever a length
// field says. After damage it resynchronizes on the next position holding a
// CRC-valid v2 batch whose base offset is at least the minimum set by
// SetMinOffset: where the log's offsets go on. (Recovery's resynchronizing
// scan, ScanRemnant, asks another question, whether the bytes after
// damage hold any valid entry at all, whatever its offsets, to decide
// between cutting and quarantining them.)
type Scanner struct {
	// sc reads the file, as recovery's scans do, through a window of
	// readChunk bytes (or of the entry, if larger), letting the file
	// shrink under it (scanner.upTo): sc.end is the file's size.
	sc       scanner
	maxBatch int
	minOff   int64
	pos      int64

	zeroTail int64 // bytes of the zero tail found at the end (ZeroTail)
	budget   int64 // bytes a resynchronization may still checksum
}

// NewScanner returns a scanner over the first size bytes of r. maxEntry
// is the read limit: the largest entry it reads into memory (<= 0 means
// DefaultMaxEntryBytes); larger ones come back as OverLimit entries.
func NewScanner(r io.ReaderAt, size int64, maxEntry int) *Scanner {
	if maxEntry <= 0 {
		maxEntry = DefaultMaxEntryBytes
	}
	s := &Scanner{maxBatch: maxEntry}
	s.sc.chunk = readChunk
	s.sc.reset(r, "", 0, size, MaxStoredEntry)
	return s
}

// SetMinOffset sets the smallest base offset a batch must have to end a
// resynchronization: the offset after the last good batch. It keeps a
// batch quoted inside a record value from being taken for the next one.
func (s *Scanner) SetMinOffset(off int64) { s.minOff = off }

// Pos returns the position of the next entry.
func (s *Scanner) Pos() int64 { return s.pos }

// Size returns the size of the file being scanned (it shrinks if the file
// is found shorter than announced, as when a live log truncates it).
func (s *Scanner) Size() int64 { return s.sc.end }

// Next returns the next entry, ok = false at the end of the file. err is
// only for I/O failures; damage comes back as an Entry with Err set.
func (s *Scanner) Next() (e Entry, ok bool, err error) {
	if s.pos >= s.sc.end {
		return Entry{}, false, nil
	}
	p := s.pos
	rem := s.sc.end - p
	if zero, err := s.zeroTailAt(p, rem); err != nil || zero {
		return Entry{}, false, err
	}
	if rem < record.PeekSize {
		e, err := s.damage(p, 0, KindTornTail, fmt.Errorf("%d bytes at the end of the file, too few for an entry header", rem), true)
		return e, err == nil, err
	}
	h, err := s.sc.upTo(p, int(min(rem, record.HeaderSize)))
	if err != nil {
		return Entry{}, false, err
	}
	if len(h) < record.PeekSize {
		return s.Next()
	}
	size, magic, perr := record.PeekEntry(h)
	switch {
	case perr != nil && errors.Is(perr, record.ErrUnsupportedMagic):
		e, err := s.damage(p, 0, KindBadMagic, fmt.Errorf("magic byte %d at byte %d, not 0, 1 or 2", magic, p+record.MagicOffset), false)
		return e, err == nil, err
	case perr != nil:
		n := int32(binary.BigEndian.Uint32(h[8:]))
		e, err := s.damage(p, 0, KindBadLength, fmt.Errorf("length field %d (at byte %d) is below the minimum for magic %d", n, p+8, magic), false)
		return e, err == nil, err
	case int64(size) > rem:
		e, err := s.damage(p, 0, KindBadLength, fmt.Errorf("entry of %d bytes (length field at byte %d) runs %d bytes past the end of the file", size, p+8, int64(size)-rem), true)
		return e, err == nil, err
	case size > s.maxBatch:
		return s.overLimit(p, size, magic, h)
	}
	b, err := s.sc.upTo(p, size)
	if err != nil {
		return Entry{}, false, err
	}
	if len(b) < size { // shrank while reading
		return s.Next()
	}
	if kind, verr := validate(b, magic, p); verr != nil {
		e, err := s.damage(p, int64(size), kind, verr, false)
		return e, err == nil, err
	}
	s.pos = p + int64(size)
	return Entry{Pos: p, Size: int64(size), Magic: magic, Batch: record.Batch(b)}, true, nil
}

// overLimit returns the entry at p, which the file holds but which is
// larger than the read limit, without reading it: the scan goes on after
// it by its length field.
func (s *Scanner) overLimit(p int64, size int, magic int8, h []byte) (Entry, bool, error) {
	n := record.PeekSize
	if magic == record.CurrentMagic && len(h) >= record.HeaderSize {
		n = record.HeaderSize
	}
	s.pos = p + int64(size)
	return Entry{Pos: p, Size: int64(size), Magic: magic, Batch: record.Batch(bytes.Clone(h[:n])), Kind: KindReadLimit,
		Err: fmt.Errorf("entry larger than the read limit: %d bytes, limit %d (raise --max-entry-bytes to verify it); it was not read, and nothing is cut there", size, s.maxBatch)}, true, nil
}

// validate checks one whole entry, at file position p, with recovery's
// checkEntry (plus a v2 batch's last offset delta, which recovery judges
// with the offsets), and classifies what is wrong with it. Problems are reported at p, the entry's start (where
// the engine reports them and where a cut would go); the messages name the
// position of the field at fault as well.
func validate(b []byte, magic int8, p int64) (Kind, error) {
	err := checkEntry(header{magic: magic}, b) // recovery's verdict on it
	var crc *record.LegacyCRCError
	var ce *record.CorruptionError
	switch {
	case err == nil:
	case errors.As(err, &crc):
		return KindCRC, fmt.Errorf("legacy v%d entry: stored CRC-32 0x%08x (at byte %d), computed 0x%08x", magic, crc.Stored, p+record.LegacyCRCOffset, crc.Computed)
	case magic != record.CurrentMagic:
		return KindBadLength, fmt.Errorf("v1 entry of %d bytes (length field at byte %d), below the minimum %d", len(b), p+8, record.LegacyV1MinSize)
	case errors.As(err, &ce) && ce.Pos == 17:
		bt := record.Batch(b)
		return KindCRC, fmt.Errorf("stored CRC-32C 0x%08x (at byte %d), computed 0x%08x", bt.CRC(), p+ce.Pos, bt.ComputeCRC())
	default:
		return KindBadHeader, record.Offset(err, "", p) // the field's file position
	}
	if magic == record.CurrentMagic {
		if d := record.Batch(b).LastOffsetDelta(); d < 0 {
			return KindBadHeader, fmt.Errorf("negative last offset delta %d", d)
		}
	}
	return "", nil
}

// damage builds the entry for a damaged region starting at p and moves the
// scanner to the next valid batch. hint is the damaged entry's declared
// size when it is plausible (the next batch is tried there first).
func (s *Scanner) damage(p, hint int64, kind Kind, cause error, maybeTorn bool) (Entry, error) {
	next, err := s.resync(p, hint)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Pos: p, Size: next - p, Err: cause, Kind: kind, ToEnd: next >= s.sc.end}
	if e.ToEnd {
		zero, err := s.zeroFrom(p)
		if err != nil {
			return Entry{}, err
		}
		e.Torn = maybeTorn || zero
		if zero {
			e.Err = fmt.Errorf("%d zero bytes to the end of the file", s.sc.end-p)
		}
	}
	if kind == KindTornTail && !e.ToEnd {
		e.Kind = KindBadLength
	}
	s.pos = next
	return e, nil
}

// resync finds the first position after p where a valid batch starts, or
// the end of the file.
func (s *Scanner) resync(p, hint int64) (int64, error) {
	// Checksumming candidates is bounded so that a file crafted to look
	// like a batch at every byte costs a few passes over it, not one per
	// byte; past the budget the rest of the file counts as damaged.
	s.budget = 8*(s.sc.end-p) + 64<<20
	if hint > 0 && p+hint < s.sc.end {
		ok, err := s.validAt(p + hint)
		if err != nil || ok {
			return p + hint, err
		}
	}
	for q := p + 1; q+record.HeaderSize <= s.sc.end; {
		// Look for the magic byte, 16 bytes into a candidate.
		w, err := s.sc.upTo(q+record.MagicOffset, int(min(readChunk, s.sc.end-q-record.MagicOffset)))
		if err != nil {
			return 0, err
		}
		i := bytes.IndexByte(w, record.CurrentMagic)
		if i < 0 {
			q += int64(len(w))
			continue
		}
		q += int64(i)
		if q+record.HeaderSize > s.sc.end {
			break
		}
		ok, err := s.validAt(q)
		if err != nil {
			return 0, err
		}
		if ok {
			return q, nil
		}
		q++
	}
	return s.sc.end, nil
}

// validAt reports whether a v2 batch with a valid CRC and plausible offsets
// starts at q. The cheap header tests run first so that a resync through
// garbage computes few checksums.
func (s *Scanner) validAt(q int64) (bool, error) {
	if q+record.HeaderSize > s.sc.end {
		return false, nil
	}
	h, err := s.sc.upTo(q, record.HeaderSize)
	if err != nil || len(h) < record.HeaderSize {
		return false, err
	}
	b := record.Batch(h)
	n := int64(b.BatchLength())
	if b.Magic() != record.CurrentMagic || n < record.HeaderSize-record.LogOverhead ||
		q+n+record.LogOverhead > s.sc.end || n+record.LogOverhead > int64(s.maxBatch) ||
		b.BaseOffset() < s.minOff || b.LastOffsetDelta() < 0 || !b.Codec().Valid() || b.NumRecords() < 0 {
		return false, nil
	}
	if s.budget -= n; s.budget < 0 {
		return false, nil
	}
	full, err := s.sc.upTo(q, int(n+record.LogOverhead))
	if err != nil || int64(len(full)) < n+record.LogOverhead {
		return false, err
	}
	return record.Batch(full).Validate() == nil, nil
}

// ZeroTail returns how many bytes at the end of the file were a zero tail:
// bytes that are all zero from the end of the last entry to the end of the
// file, as a preallocated file (seglog's Options.Preallocate, Kafka's
// log.preallocate) holds them past its last batch until it is trimmed. The
// scan ends there as at the end of the file, as recovery's does: they are
// neither damage nor data.
func (s *Scanner) ZeroTail() int64 { return s.zeroTail }

// zeroTailAt reports whether the rem bytes from p to the end of the file
// are a zero tail, and if so ends the scan there. Only a zero length
// field starts one, so a batch costs no extra read.
func (s *Scanner) zeroTailAt(p, rem int64) (bool, error) {
	h, err := s.sc.upTo(p, int(min(rem, record.LogOverhead)))
	if err != nil || int64(len(h)) < min(rem, record.LogOverhead) {
		return false, err
	}
	for _, c := range h {
		if c != 0 {
			return false, nil
		}
	}
	zero, err := s.zeroFrom(p)
	if err != nil || !zero {
		return false, err
	}
	s.zeroTail = rem
	s.pos = s.sc.end
	return true, nil
}

// zeroFrom reports whether every byte from p to the end of the file is
// zero: the trace of a preallocated or zero-filled tail.
func (s *Scanner) zeroFrom(p int64) (bool, error) {
	for p < s.sc.end {
		w, err := s.sc.upTo(p, int(min(readChunk, s.sc.end-p)))
		if err != nil {
			return false, err
		}
		if len(w) == 0 {
			return true, nil
		}
		for _, c := range w {
			if c != 0 {
				return false, nil
			}
		}
		p += int64(len(w))
	}
	return true, nil
}
