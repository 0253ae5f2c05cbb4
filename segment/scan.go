package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Read sizes of the scanner's window. Header scans touch a few dozen bytes
// per batch, so one small read serves many small batches; full scans read
// big windows so recovery of a 1 GiB file is a few thousand reads.
const (
	headerChunk = 4 << 10
	fullChunk   = 256 << 10
	// pooledMax is the largest buffer a pooled header scanner keeps; a
	// bigger one (grown to read a big batch) is dropped on release.
	pooledMax = 64 << 10
)

// MaxStoredEntry is the largest entry a scan of stored data accepts: an
// entry must fit in a segment, whose positions are 32-bit. Stored batches
// are bounded by this and by the file, never by Options.MaxBatchBytes,
// which limits what is appended: a limit lowered after a batch was stored
// must not turn that batch into damage (Kafka lowers max.message.bytes
// without losing data). Buffers are sized only after an entry's length
// was checked against the bytes the file holds.
const MaxStoredEntry = math.MaxInt32

// header is what a scanner learns about one entry of the .log from its
// first bytes.
type header struct {
	pos   int64 // file position of the entry
	size  int   // entry size including the 12-byte log overhead
	magic int8
	// base and last are the batch's first and last offsets. A legacy
	// (v0/v1) entry only records its last offset (the offset field of a
	// compressed wrapper); base is set to it too.
	base, last int64
	// maxTS is the batch's max timestamp, the wrapper timestamp of a v1
	// entry, -1 for v0.
	maxTS int64
	// records is the entry's record count, set only by a resynchronizing
	// scan (validEntryAt).
	records int64
}

// scanner reads consecutive entries of a .log between pos and end through a
// window buffer. Bytes it returns are valid until its next call. Sizes read
// from the file are checked against end (and, for whole entries, against
// max) before any buffer is sized by them.
type scanner struct {
	f      io.ReaderAt
	path   string
	pos    int64 // position of the next entry
	end    int64
	max    int // largest whole entry read (nextEntry)
	chunk  int
	buf    []byte
	win    []byte // file bytes [winPos, winPos+len(win))
	winPos int64
	pooled bool
	// zeroEnds makes a zero header (the offset and length fields, or
	// what is left of the file if shorter, all zero) end the scan like the
	// end of the file, with zeroAt set: the start of a preallocated file's
	// zero tail. Callers that need the rest of the file to be zero check
	// it (allZero).
	zeroEnds bool
	zeroAt   bool
}

var headerScanners = sync.Pool{New: func() any {
	return &scanner{buf: make([]byte, headerChunk), chunk: headerChunk, pooled: true}
}}

// newHeaderScanner returns a pooled scanner for header walks over
// [from, end); call release when done.
func (s *Segment) newHeaderScanner(from, end int64) *scanner {
	sc := headerScanners.Get().(*scanner)
	sc.reset(s.log, s.LogPath(), from, end, MaxStoredEntry)
	return sc
}

// newFullScanner returns an unpooled scanner for reading whole batches.
func newFullScanner(f vfs.File, path string, from, end int64, maxEntry int) *scanner {
	sc := &scanner{chunk: fullChunk}
	sc.reset(f, path, from, end, maxEntry)
	return sc
}

// fullScanners keep the 256 KiB windows of the scanners behind Batches:
// a sequential read of a log of many segments (Records) would otherwise
// allocate one per segment and pass.
var fullScanners = sync.Pool{New: func() any { return &scanner{chunk: fullChunk} }}

// getFullScanner is newFullScanner from the pool; call putFullScanner when
// no batch it returned is in use any more.
func getFullScanner(f vfs.File, path string, from, end int64, maxEntry int) *scanner {
	sc := fullScanners.Get().(*scanner)
	sc.reset(f, path, from, end, maxEntry)
	return sc
}

func putFullScanner(sc *scanner) {
	sc.f, sc.win = nil, nil
	if cap(sc.buf) > 4*fullChunk {
		sc.buf = nil // grown for a big batch: do not pin it
	}
	fullScanners.Put(sc)
}

func (sc *scanner) reset(f io.ReaderAt, path string, from, end int64, maxEntry int) {
	sc.f, sc.path, sc.pos, sc.end, sc.max = f, path, from, end, maxEntry
	sc.win, sc.winPos = nil, 0
	sc.zeroEnds, sc.zeroAt = false, false
}

func (sc *scanner) release() {
	if !sc.pooled {
		return
	}
	sc.f, sc.win = nil, nil
	if cap(sc.buf) > pooledMax {
		sc.buf = make([]byte, headerChunk)
	}
	headerScanners.Put(sc)
}

// need returns the n bytes at file position p; the caller guarantees
// p+n <= end and that n is bounded (header size, or an entry size already
// checked against max).
func (sc *scanner) need(p int64, n int) ([]byte, error) {
	if p >= sc.winPos && p+int64(n) <= sc.winPos+int64(len(sc.win)) {
		off := p - sc.winPos
		return sc.win[off : off+int64(n) : off+int64(n)], nil
	}
	got, err := sc.fill(p, n)
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			// The file is shorter than the size we were told: it shrank
			// under us (truncation) or was damaged outside our control.
			err = io.ErrUnexpectedEOF
		}
		sc.win = nil
		return nil, fmt.Errorf("segment: read %s at byte %d: %w", sc.path, p, err)
	}
	return sc.win[:n:n], nil
}

// upTo is need for a reader that lets the file shrink under it (a live
// log truncated while fsck or the ui reads it): it returns the n bytes at
// p, or fewer when the file turns out to end before p+n, and lowers end to
// where it ends. Errors other than the end of the file come back as the
// file gave them.
func (sc *scanner) upTo(p int64, n int) ([]byte, error) {
	if p >= sc.winPos && p+int64(n) <= sc.winPos+int64(len(sc.win)) {
		off := p - sc.winPos
		return sc.win[off : off+int64(n) : off+int64(n)], nil
	}
	want := min(int64(max(n, sc.chunk)), sc.end-p)
	n = min(n, int(want))
	got, err := sc.fill(p, n)
	if err != nil && !errors.Is(err, io.EOF) {
		sc.win = nil
		return nil, err
	}
	if int64(got) < want {
		sc.end = p + int64(got)
		n = min(n, got)
	}
	return sc.win[:n:n], nil
}

// fill reads the window [p, p+max(n, chunk)), clipped to end, and returns
// how many of its bytes the file gave. The part the window already holds
// (the start of a batch cut by its end) moves to the front instead of
// being read again: with 100 KiB batches in 256 KiB windows that was a
// fifth of every byte read.
func (sc *scanner) fill(p int64, n int) (int, error) {
	want := int64(max(n, sc.chunk))
	want = min(want, sc.end-p)
	keep := 0
	if p >= sc.winPos && p < sc.winPos+int64(len(sc.win)) {
		keep = int(min(sc.winPos+int64(len(sc.win))-p, want))
	}
	if int64(cap(sc.buf)) < want {
		nb := make([]byte, want)
		if keep > 0 {
			copy(nb, sc.win[p-sc.winPos:])
		}
		sc.buf = nb
	} else if keep > 0 {
		copy(sc.buf[:keep], sc.win[p-sc.winPos:])
	}
	got, err := sc.f.ReadAt(sc.buf[keep:want], p+int64(keep))
	got += keep
	sc.win, sc.winPos = sc.buf[:got], p
	return got, err
}

// next reads the header of the entry at sc.pos and advances past the entry.
// It returns ok = false at end. A size field below the legal minimum or an
// unknown magic or a size above max is a *record.CorruptionError; an entry that runs past end
// (or fewer than record.PeekSize bytes before end) is a *PositionError
// wrapping ErrTornTail. sc.pos stays at the entry on error.
func (sc *scanner) next() (h header, ok bool, err error) {
	if sc.pos >= sc.end {
		return h, false, nil
	}
	if sc.zeroEnds {
		b, err := sc.need(sc.pos, int(min(sc.end-sc.pos, record.LogOverhead)))
		if err != nil {
			return h, false, err
		}
		if isZero(b) {
			sc.zeroAt = true
			return h, false, nil
		}
	}
	if sc.end-sc.pos < record.PeekSize {
		return h, false, &PositionError{File: sc.path, Pos: sc.pos, Err: ErrTornTail}
	}
	b, err := sc.need(sc.pos, record.PeekSize)
	if err != nil {
		return h, false, err
	}
	size, magic, err := record.PeekEntry(b)
	if err != nil {
		return h, false, corruptAt(sc.path, sc.pos, err)
	}
	if size > sc.max {
		// Checked before the torn-tail case, as Kafka's FileLogInputStream
		// does: a wild length field is damage, not a short write.
		return h, false, corruptAt(sc.path, sc.pos,
			fmt.Errorf("%w: entry of %d bytes, limit %d", record.ErrTooLarge, size, sc.max))
	}
	if int64(size) > sc.end-sc.pos {
		return h, false, &PositionError{File: sc.path, Pos: sc.pos,
			Err: fmt.Errorf("%w: entry of %d bytes, %d left", ErrTornTail, size, sc.end-sc.pos)}
	}
	b, err = sc.need(sc.pos, min(size, record.HeaderSize))
	if err != nil {
		return h, false, err
	}
	h = headerOf(b, sc.pos, size, magic)
	sc.pos += int64(size)
	return h, true, nil
}

// headerOf builds the header of the entry at pos from its first
// min(size, record.HeaderSize) bytes b, whose size and magic PeekEntry
// accepted.
func headerOf(b []byte, pos int64, size int, magic int8) header {
	h := header{pos: pos, size: size, magic: magic, maxTS: -1}
	if magic == record.CurrentMagic {
		bt := record.Batch(b)
		h.base, h.last, h.maxTS = bt.BaseOffset(), bt.LastOffset(), bt.MaxTimestamp()
		return h
	}
	h.last = int64(binary.BigEndian.Uint64(b))
	h.base = h.last
	if magic == 1 {
		// v1: offset, size, crc, magic, attributes, then the timestamp;
		// PeekEntry guarantees at least 26 bytes.
		h.maxTS = int64(binary.BigEndian.Uint64(b[18:]))
	}
	return h
}

// nextEntry is next plus the entry's whole bytes.
func (sc *scanner) nextEntry() (h header, entry []byte, ok bool, err error) {
	start := sc.pos
	h, ok, err = sc.next()
	if !ok || err != nil {
		return h, nil, ok, err
	}
	entry, err = sc.need(start, h.size)
	if err != nil {
		sc.pos = start
		return h, nil, false, err
	}
	return h, entry, true, nil
}

// ScanNextOffset walks the entry headers of the .log file at path, whose
// segment starts at base, and returns the offset after its last whole
// entry and the position where the whole entries end. It stops quietly at
// the first entry that is damaged or cut short: it answers "how far does
// this file reach", as the swap protocol needs, not "is it valid".
func ScanNextOffset(fsys vfs.FS, path string, base int64) (next, end int64, err error) {
	f, err := fsys.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, 0, err
	}
	sc := headerScanners.Get().(*scanner)
	defer sc.release()
	sc.reset(f, path, 0, size, MaxStoredEntry)
	next = base
	for {
		h, ok, err := sc.next()
		if err != nil {
			if isDamage(err) {
				return next, sc.pos, nil
			}
			return 0, 0, err
		}
		if !ok {
			return next, sc.pos, nil
		}
		next = h.last + 1
	}
}

// LogEnd is ScanNextOffset's next offset alone: the layout.LogEnd the swap
// protocol asks of a .log (layout.Apply, layout.Resolve), for the Log's
// Open and fsck's repair alike.
func LogEnd(fsys vfs.FS, path string, base int64) (int64, error) {
	next, _, err := ScanNextOffset(fsys, path, base)
	return next, err
}
