package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/seglog/seglog/vfs"
)

// OffsetIndex is a segment's `.index` file: a sparse map from offsets to
// byte positions of batches in the `.log`, with strictly increasing offsets.
type OffsetIndex struct {
	b base
}

// OpenOffset opens the offset index at path for a segment whose first offset
// is baseOffset, creating the file if it is missing.
//
// An existing file's entry count is its size divided by 8; Kafka trims index
// files when a segment is sealed or closed, so the count is exact for those.
// The active segment's file after a crash is still at its preallocated size
// with a zero tail, which the count includes and SanityCheck rejects (the
// segment then rebuilds its indexes). A sealed index is neither read nor
// mapped by OpenOffset.
func OpenOffset(fsys vfs.FS, path string, baseOffset int64, opts Options) (*OffsetIndex, error) {
	x := &OffsetIndex{}
	if err := x.b.open(fsys, path, baseOffset, OffsetEntrySize, opts); err != nil {
		return nil, err
	}
	return x, nil
}

// BaseOffset returns the segment's base offset.
func (x *OffsetIndex) BaseOffset() int64 { return x.b.base }

// Path returns the current file path (it changes with Rename).
func (x *OffsetIndex) Path() string { return x.b.getPath() }

// Entries returns the number of entries.
func (x *OffsetIndex) Entries() int { return x.b.entries() }

// MaxEntries returns the number of slots: MaxBytes/8 while writable, the
// entry count when sealed.
func (x *OffsetIndex) MaxEntries() int { return int(x.b.maxEntries.Load()) }

// IsFull reports whether no slot is left (Kafka's roll condition).
func (x *OffsetIndex) IsFull() bool { return x.b.n.Load() >= x.b.maxEntries.Load() }

// Writable reports whether the index is writable (not sealed).
func (x *OffsetIndex) Writable() bool { return x.b.isWritable() }

// Append adds an entry: the batch whose last offset is offset starts at
// position. offset must be larger than the last entry's offset and than the
// base offset, offset-base and position must fit in an int32. It fails with
// ErrFull when the index is full and ErrReadOnly when it is sealed.
//
// Kafka's own append accepts the base offset itself on an empty index, but
// no Kafka writer produces that entry (a segment's first batch is never
// indexed), and an entry at the base offset is what a zero tail decodes to,
// so it is refused here and rejected by SanityCheck.
func (x *OffsetIndex) Append(offset, position int64) error {
	b := &x.b
	if b.closed {
		return b.errorf("append", -1, ErrClosed, "")
	}
	if !b.writable {
		return b.errorf("append", -1, ErrReadOnly, "")
	}
	n := b.n.Load()
	pos := n * OffsetEntrySize
	if n >= b.maxEntries.Load() {
		return b.errorf("append", pos, ErrFull, fmt.Sprintf("%d entries", n))
	}
	last := b.base
	if n > 0 {
		last = b.base + int64(be32(b.buf, pos-OffsetEntrySize))
	}
	if offset <= last {
		return b.errorf("append", pos, ErrInvalidOffset,
			fmt.Sprintf("offset %d is not larger than the last entry's or base offset %d", offset, last))
	}
	if offset-b.base > math.MaxInt32 {
		return b.errorf("append", pos, ErrOverflow,
			fmt.Sprintf("offset %d is more than 2^31-1 past base offset %d", offset, b.base))
	}
	if position < 0 || position > math.MaxInt32 {
		return b.errorf("append", pos, ErrOverflow, fmt.Sprintf("position %d", position))
	}
	b.warmFor(pos + OffsetEntrySize)
	e := b.buf[pos : pos+OffsetEntrySize]
	binary.BigEndian.PutUint32(e, uint32(offset-b.base))
	binary.BigEndian.PutUint32(e[4:], uint32(position))
	b.n.Store(n + 1) // publishes the entry to readers
	return nil
}

// Lookup returns the entry with the largest offset <= target, or
// {BaseOffset, 0} if there is none. It is the answer callers scan the `.log`
// forward from. If a sealed index cannot be mapped, Lookup returns
// {BaseOffset, 0} too, which is slow but correct for such callers; use
// LookupErr to see the error.
func (x *OffsetIndex) Lookup(target int64) OffsetPosition {
	op, err := x.LookupErr(target)
	if err != nil {
		return OffsetPosition{Offset: x.b.base}
	}
	return op
}

// LookupErr is Lookup that reports failures to map a sealed index and use
// after Close.
func (x *OffsetIndex) LookupErr(target int64) (OffsetPosition, error) {
	none := OffsetPosition{Offset: x.b.base}
	buf, n, excl, err := x.b.acquire()
	if err != nil {
		return none, err
	}
	// No defer: this is the hot path of every fetch.
	op := none
	if rel, ok := relKey(target, x.b.base); ok && n > 0 {
		if slot := searchOffset(buf, n, rel); slot >= 0 {
			op = x.decode(buf, slot)
		}
	}
	x.b.release(excl)
	return op, nil
}

// LookupBoundsErr returns the floor entry Lookup returns and, when there is
// one, the entry after it: the first entry with an offset above target.
// Under the indexing rule (a batch's last offset maps to its start) the
// ceiling entry names a batch whose last offset is at least target, which
// lets a caller check that one batch header before scanning from the floor.
func (x *OffsetIndex) LookupBoundsErr(target int64) (floor, ceil OffsetPosition, hasCeil bool, err error) {
	floor = OffsetPosition{Offset: x.b.base}
	buf, n, excl, err := x.b.acquire()
	if err != nil {
		return floor, OffsetPosition{}, false, err
	}
	if rel, ok := relKey(target, x.b.base); ok && n > 0 {
		slot := searchOffset(buf, n, rel)
		if slot >= 0 {
			floor = x.decode(buf, slot)
		}
		if slot+1 < n {
			ceil, hasCeil = x.decode(buf, slot+1), true
		}
	}
	x.b.release(excl)
	return floor, ceil, hasCeil, nil
}

func (x *OffsetIndex) decode(buf []byte, i int64) OffsetPosition {
	p := i * OffsetEntrySize
	return OffsetPosition{
		Offset:   x.b.base + int64(be32(buf, p)),
		Position: int64(uint32(be32(buf, p+4))),
	}
}

// searchOffset returns the slot of the entry with the largest relative
// offset <= rel among the n entries in buf, or -1, using Kafka's warm-section
// binary search (see the package comment).
func searchOffset(buf []byte, n int64, rel int32) int64 {
	const warm = warmBytes / OffsetEntrySize
	buf = buf[:n*OffsetEntrySize]
	firstHot := max(0, n-1-warm)
	lo, hi := int64(0), firstHot
	if be32(buf, firstHot*OffsetEntrySize) < rel {
		lo, hi = firstHot, n-1
	} else if be32(buf, 0) > rel {
		return -1
	}
	// Invariant: entry lo <= rel, the answer is in [lo, lo+size-1].
	// Halving a size instead of moving both ends lets the compiler use a
	// conditional move: the branch on the key would be mispredicted half
	// the time. Keys are distinct, so this matches Kafka's search, which
	// stops early on an exact match.
	for size := hi - lo + 1; size > 1; {
		half := size / 2
		if mid := lo + half; be32(buf, mid*OffsetEntrySize) <= rel {
			lo = mid
		}
		size -= half
	}
	return lo
}

// Entry returns entry i (0 <= i < Entries()). On failure (i out of range, a
// sealed index that cannot be mapped, a closed index) it returns
// {BaseOffset, 0}; EntryErr reports the error.
func (x *OffsetIndex) Entry(i int) OffsetPosition {
	op, err := x.EntryErr(i)
	if err != nil {
		return OffsetPosition{Offset: x.b.base}
	}
	return op
}

// EntryErr returns entry i or an error wrapping ErrOutOfRange, ErrClosed or
// the mapping failure.
func (x *OffsetIndex) EntryErr(i int) (OffsetPosition, error) {
	buf, n, excl, err := x.b.acquire()
	if err != nil {
		return OffsetPosition{Offset: x.b.base}, err
	}
	defer x.b.release(excl)
	if i < 0 || int64(i) >= n {
		return OffsetPosition{Offset: x.b.base}, x.b.errorf("entry", int64(i)*OffsetEntrySize, ErrOutOfRange,
			fmt.Sprintf("entry %d of %d", i, n))
	}
	return x.decode(buf, int64(i)), nil
}

// LastOffset returns the last entry's offset, or BaseOffset when there are
// no entries (or the last entry cannot be read). It does not map a sealed
// index.
func (x *OffsetIndex) LastOffset() int64 {
	raw, err := x.b.lastRaw()
	if err != nil || raw == nil {
		return x.b.base
	}
	return x.b.base + int64(be32(raw, 0))
}

// LastEntry returns the last entry, or {BaseOffset, 0} when there are none
// or it cannot be read; LastEntryErr reports the error.
func (x *OffsetIndex) LastEntry() OffsetPosition {
	e, err := x.LastEntryErr()
	if err != nil {
		return OffsetPosition{Offset: x.b.base}
	}
	return e
}

// LastEntryErr returns the last entry ({BaseOffset, 0} when there are
// none). Like LastOffset it reads a sealed index's final 8 bytes with ReadAt
// instead of mapping the file.
func (x *OffsetIndex) LastEntryErr() (OffsetPosition, error) {
	raw, err := x.b.lastRaw()
	if err != nil || raw == nil {
		return OffsetPosition{Offset: x.b.base}, err
	}
	return x.decode(raw, 0), nil
}

// UpperBoundOffset returns the offset of the first entry whose position is
// >= position, and false if there is none (Kafka's fetchUpperBoundOffset,
// used to bound aborted-transaction lookups of a fetch).
func (x *OffsetIndex) UpperBoundOffset(position int64) (int64, bool, error) {
	buf, n, excl, err := x.b.acquire()
	if err != nil {
		return 0, false, err
	}
	defer x.b.release(excl)
	i := int64(sort.Search(int(n), func(i int) bool {
		return int64(uint32(be32(buf, int64(i)*OffsetEntrySize+4))) >= position
	}))
	if i == n {
		return 0, false, nil
	}
	return x.decode(buf, i).Offset, true, nil
}

// TruncateTo removes the entries with offset >= offset. On a sealed index the
// file is cut to the remaining entries.
func (x *OffsetIndex) TruncateTo(offset int64) error {
	b := &x.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.errorf("truncate", -1, ErrClosed, "")
	}
	if err := b.mapLocked(); err != nil {
		return err
	}
	n := b.n.Load()
	var k int64
	if offset > b.base {
		rel := min(offset-b.base, math.MaxInt32+1)
		k = int64(sort.Search(int(n), func(i int) bool {
			return int64(be32(b.buf, int64(i)*OffsetEntrySize)) >= rel
		}))
	}
	return b.truncateLocked(k)
}

// Reset removes every entry (before the segment rebuilds its indexes).
func (x *OffsetIndex) Reset() error { return x.b.reset() }

// SanityCheck verifies the file: its size is a whole number of entries,
// offsets are strictly increasing and all larger than the base offset (a
// zero entry, as in the preallocated tail of a file not trimmed before a
// crash, decodes as the base offset), and positions are not decreasing.
// Damage is reported as an *Error wrapping ErrCorrupt with the byte position
// of the offending entry. A sealed index is mapped to be checked.
func (x *OffsetIndex) SanityCheck() error {
	b := &x.b
	if err := b.checkSize(); err != nil {
		return err
	}
	buf, n, excl, err := b.acquire()
	if err != nil {
		return err
	}
	defer b.release(excl)
	prevOff, prevPos := int32(0), int32(0)
	for i := int64(0); i < n; i++ {
		p := i * OffsetEntrySize
		off, pos := be32(buf, p), be32(buf, p+4)
		switch {
		case off <= 0:
			return b.errorf("sanity check", p, ErrCorrupt,
				fmt.Sprintf("entry %d: offset %d is not larger than base offset %d", i, b.base+int64(off), b.base))
		case off <= prevOff:
			return b.errorf("sanity check", p, ErrCorrupt,
				fmt.Sprintf("entry %d: offset %d is not larger than the previous entry's %d",
					i, b.base+int64(off), b.base+int64(prevOff)))
		case pos < prevPos:
			return b.errorf("sanity check", p+4, ErrCorrupt,
				fmt.Sprintf("entry %d: position %d is smaller than the previous entry's %d", i, pos, prevPos))
		}
		prevOff, prevPos = off, pos
	}
	return nil
}

// Flush makes appended entries durable (msync, then fdatasync for the size).
// A sealed index has nothing to flush. Flush is a writer operation: call it
// from the appender or otherwise ordered with Append.
func (x *OffsetIndex) Flush() error { return x.b.flush() }

// Seal trims the file to its entries, makes it durable and releases the
// mapping; the index is read-only and lazily mapped afterwards.
func (x *OffsetIndex) Seal() error { return x.b.seal(true) }

// SealUnsynced is Seal without making the trimmed file durable: no msync,
// no fsync, so it does not wait for the filesystem's journal (a sync
// there waits behind any other file's sync in progress, hundreds of
// milliseconds behind a sealed segment's). The caller makes it durable
// later with SyncFile, before anything relies on it surviving a crash;
// until then the trimmed file's descriptor stays open for it.
func (x *OffsetIndex) SealUnsynced() error { return x.b.seal(false) }

// MakeWritable grows a sealed index back to MaxBytes (preallocated) and maps
// it read-write, for a segment that becomes active again.
func (x *OffsetIndex) MakeWritable() error {
	x.b.mu.Lock()
	defer x.b.mu.Unlock()
	return x.b.makeWritableLocked()
}

// Close trims a writable index (as Kafka does) and releases the file and
// mapping. Later calls fail with ErrClosed; Close itself is idempotent.
func (x *OffsetIndex) Close() error { return x.b.close() }

// Rename renames the file (for example to a .deleted name) while the index
// stays usable.
func (x *OffsetIndex) Rename(newPath string) error { return x.b.rename(newPath) }

// Delete closes the index without trimming and removes the file.
func (x *OffsetIndex) Delete() error { return x.b.delete() }
