package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/seglog/seglog/vfs"
)

// TimeIndex is a segment's `.timeindex` file: entries (T, O) meaning "the
// largest timestamp in the segment up to and including offset O is T", with
// strictly increasing timestamps and non-decreasing offsets.
type TimeIndex struct {
	b base
}

// OpenTime opens the time index at path for a segment whose first offset is
// baseOffset, creating the file if it is missing. The rules for existing
// files are those of OpenOffset, with 12-byte entries.
func OpenTime(fsys vfs.FS, path string, baseOffset int64, opts Options) (*TimeIndex, error) {
	x := &TimeIndex{}
	if err := x.b.open(fsys, path, baseOffset, TimeEntrySize, opts); err != nil {
		return nil, err
	}
	return x, nil
}

// BaseOffset returns the segment's base offset.
func (x *TimeIndex) BaseOffset() int64 { return x.b.base }

// Path returns the current file path (it changes with Rename).
func (x *TimeIndex) Path() string { return x.b.getPath() }

// Entries returns the number of entries.
func (x *TimeIndex) Entries() int { return x.b.entries() }

// MaxEntries returns the number of slots: MaxBytes/12 while writable, the
// entry count when sealed.
func (x *TimeIndex) MaxEntries() int { return int(x.b.maxEntries.Load()) }

// IsFull reports Kafka's roll condition for the time index:
// entries >= MaxEntries-1. The last slot is kept for the entry that
// MaybeAppend writes with skipFullCheck when the segment is sealed, so the
// final entry always holds the segment's largest timestamp.
func (x *TimeIndex) IsFull() bool { return x.b.n.Load() >= x.b.maxEntries.Load()-1 }

// Writable reports whether the index is writable (not sealed).
func (x *TimeIndex) Writable() bool { return x.b.isWritable() }

// MaybeAppend offers the segment's largest timestamp so far and the offset
// of the batch that reached it. The entry is written only if timestamp is
// larger than the last entry's (initially NoTimestamp, so an index of data
// without timestamps stays empty); an equal timestamp is ignored, a smaller
// one fails with ErrInvalidTimestamp, an offset smaller than the last
// entry's with ErrInvalidOffset. Unless skipFullCheck, a full index (see
// IsFull) fails with ErrFull; with it, only an index without any free slot
// does.
func (x *TimeIndex) MaybeAppend(timestamp, offset int64, skipFullCheck bool) error {
	b := &x.b
	if b.closed {
		return b.errorf("append", -1, ErrClosed, "")
	}
	if !b.writable {
		return b.errorf("append", -1, ErrReadOnly, "")
	}
	n := b.n.Load()
	pos := n * TimeEntrySize
	if max := b.maxEntries.Load(); n >= max || (!skipFullCheck && n >= max-1) {
		return b.errorf("append", pos, ErrFull, fmt.Sprintf("%d entries", n))
	}
	last := TimestampOffset{Timestamp: NoTimestamp, Offset: b.base}
	if n > 0 {
		last = x.decode(b.buf, n-1)
		if offset < last.Offset {
			return b.errorf("append", pos, ErrInvalidOffset,
				fmt.Sprintf("offset %d is smaller than the last entry's %d", offset, last.Offset))
		}
		if timestamp < last.Timestamp {
			return b.errorf("append", pos, ErrInvalidTimestamp,
				fmt.Sprintf("timestamp %d is smaller than the last entry's %d", timestamp, last.Timestamp))
		}
	}
	if timestamp <= last.Timestamp {
		return nil
	}
	if offset < b.base {
		return b.errorf("append", pos, ErrInvalidOffset,
			fmt.Sprintf("offset %d is below base offset %d", offset, b.base))
	}
	if offset-b.base > math.MaxInt32 {
		return b.errorf("append", pos, ErrOverflow,
			fmt.Sprintf("offset %d is more than 2^31-1 past base offset %d", offset, b.base))
	}
	b.warmFor(pos + TimeEntrySize)
	e := b.buf[pos : pos+TimeEntrySize]
	binary.BigEndian.PutUint64(e, uint64(timestamp))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-b.base))
	b.n.Store(n + 1) // publishes the entry to readers
	return nil
}

// Lookup returns the entry with the largest timestamp <= timestamp, or
// {NoTimestamp, BaseOffset} if there is none; callers then scan the segment
// forward from that offset. If a sealed index cannot be mapped, Lookup
// returns the "none" answer too (a scan from the segment start is slow but
// correct); LookupErr reports the error.
func (x *TimeIndex) Lookup(timestamp int64) TimestampOffset {
	to, err := x.LookupErr(timestamp)
	if err != nil {
		return x.none()
	}
	return to
}

func (x *TimeIndex) none() TimestampOffset {
	return TimestampOffset{Timestamp: NoTimestamp, Offset: x.b.base}
}

// LookupErr is Lookup that reports failures to map a sealed index and use
// after Close.
func (x *TimeIndex) LookupErr(timestamp int64) (TimestampOffset, error) {
	buf, n, excl, err := x.b.acquire()
	if err != nil {
		return x.none(), err
	}
	to := x.none()
	if n > 0 {
		if slot := searchTime(buf, n, timestamp); slot >= 0 {
			to = x.decode(buf, slot)
		}
	}
	x.b.release(excl)
	return to, nil
}

func (x *TimeIndex) decode(buf []byte, i int64) TimestampOffset {
	p := i * TimeEntrySize
	return TimestampOffset{Timestamp: be64(buf, p), Offset: x.b.base + int64(be32(buf, p+8))}
}

// searchTime returns the slot of the entry with the largest timestamp <= ts
// among the n entries in buf, or -1, using the warm-section binary search.
func searchTime(buf []byte, n int64, ts int64) int64 {
	const warm = warmBytes / TimeEntrySize
	buf = buf[:n*TimeEntrySize]
	firstHot := max(0, n-1-warm)
	lo, hi := int64(0), firstHot
	if be64(buf, firstHot*TimeEntrySize) < ts {
		lo, hi = firstHot, n-1
	} else if be64(buf, 0) > ts {
		return -1
	}
	// Invariant: entry lo <= ts, the answer is in [lo, lo+size-1].
	// Halving a size instead of moving both ends lets the compiler use a
	// conditional move: the branch on the key would be mispredicted half
	// the time. Keys are distinct, so this matches Kafka's search, which
	// stops early on an exact match.
	for size := hi - lo + 1; size > 1; {
		half := size / 2
		if mid := lo + half; be64(buf, mid*TimeEntrySize) <= ts {
			lo = mid
		}
		size -= half
	}
	return lo
}

// Entry returns entry i (0 <= i < Entries()), or {NoTimestamp, BaseOffset}
// on failure; EntryErr reports the error.
func (x *TimeIndex) Entry(i int) TimestampOffset {
	to, err := x.EntryErr(i)
	if err != nil {
		return x.none()
	}
	return to
}

// EntryErr returns entry i or an error wrapping ErrOutOfRange, ErrClosed or
// the mapping failure.
func (x *TimeIndex) EntryErr(i int) (TimestampOffset, error) {
	buf, n, excl, err := x.b.acquire()
	if err != nil {
		return x.none(), err
	}
	defer x.b.release(excl)
	if i < 0 || int64(i) >= n {
		return x.none(), x.b.errorf("entry", int64(i)*TimeEntrySize, ErrOutOfRange,
			fmt.Sprintf("entry %d of %d", i, n))
	}
	return x.decode(buf, int64(i)), nil
}

// LastEntry returns the last entry, or {NoTimestamp, BaseOffset} if there is
// none (or it cannot be read). For a sealed segment this is its largest
// timestamp, which time-based retention uses; it does not map the index.
func (x *TimeIndex) LastEntry() TimestampOffset {
	e, _ := x.LastEntryErr()
	return e
}

// LastEntryErr is LastEntry that reports a failure to read the entry.
func (x *TimeIndex) LastEntryErr() (TimestampOffset, error) {
	raw, err := x.b.lastRaw()
	if err != nil || raw == nil {
		return x.none(), err
	}
	return x.decode(raw, 0), nil
}

// TruncateTo removes the entries with offset >= offset.
func (x *TimeIndex) TruncateTo(offset int64) error {
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
			return int64(be32(b.buf, int64(i)*TimeEntrySize+8)) >= rel
		}))
	}
	return b.truncateLocked(k)
}

// Reset removes every entry (before the segment rebuilds its indexes).
func (x *TimeIndex) Reset() error { return x.b.reset() }

// SanityCheck verifies the file: its size is a whole number of entries,
// timestamps strictly increase (MaybeAppend never writes an equal one, so
// two zero entries of an untrimmed preallocated tail are caught), offsets
// are not below the base offset and do not decrease. Damage is reported as
// an *Error wrapping ErrCorrupt with the byte position of the offending
// entry.
func (x *TimeIndex) SanityCheck() error {
	b := &x.b
	if err := b.checkSize(); err != nil {
		return err
	}
	buf, n, excl, err := b.acquire()
	if err != nil {
		return err
	}
	defer b.release(excl)
	var prev TimestampOffset
	for i := int64(0); i < n; i++ {
		p := i * TimeEntrySize
		e := x.decode(buf, i)
		switch {
		case e.Offset < b.base:
			return b.errorf("sanity check", p+8, ErrCorrupt,
				fmt.Sprintf("entry %d: offset %d is below base offset %d", i, e.Offset, b.base))
		case i > 0 && e.Timestamp <= prev.Timestamp:
			return b.errorf("sanity check", p, ErrCorrupt,
				fmt.Sprintf("entry %d: timestamp %d is not larger than the previous entry's %d",
					i, e.Timestamp, prev.Timestamp))
		case i > 0 && e.Offset < prev.Offset:
			return b.errorf("sanity check", p+8, ErrCorrupt,
				fmt.Sprintf("entry %d: offset %d is smaller than the previous entry's %d", i, e.Offset, prev.Offset))
		}
		prev = e
	}
	return nil
}

// Flush makes appended entries durable. A sealed index has nothing to flush.
// Flush is a writer operation: call it from the appender or otherwise
// ordered with Append.
func (x *TimeIndex) Flush() error { return x.b.flush() }

// Seal trims the file to its entries, makes it durable and releases the
// mapping; the index is read-only and lazily mapped afterwards. The caller
// appends the segment's final entry (MaybeAppend with skipFullCheck) first.
func (x *TimeIndex) Seal() error { return x.b.seal(true) }

// SealUnsynced is OffsetIndex.SealUnsynced for the time index.
func (x *TimeIndex) SealUnsynced() error { return x.b.seal(false) }

// MakeWritable grows a sealed index back to MaxBytes (preallocated) and maps
// it read-write, for a segment that becomes active again.
func (x *TimeIndex) MakeWritable() error {
	x.b.mu.Lock()
	defer x.b.mu.Unlock()
	return x.b.makeWritableLocked()
}

// Close trims a writable index (as Kafka does) and releases the file and
// mapping. Later calls fail with ErrClosed; Close itself is idempotent.
func (x *TimeIndex) Close() error { return x.b.close() }

// Rename renames the file (for example to a .deleted name) while the index
// stays usable.
func (x *TimeIndex) Rename(newPath string) error { return x.b.rename(newPath) }

// Delete closes the index without trimming and removes the file.
func (x *TimeIndex) Delete() error { return x.b.delete() }
