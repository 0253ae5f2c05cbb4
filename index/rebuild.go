package index

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
)

// Rebuilding an index without rewriting it.
//
// Recovery after a crash rebuilds a segment's indexes from its .log. Most
// of the time the files already hold exactly what the rebuild computes: a
// SIGKILL leaves the page cache, and so every entry the writer stored,
// intact. Emptying the index and appending the entries again would dirty
// every page (a crashed active index is 10 MiB of mapping) and the seal
// that followed would write them back, trim the file and fsync it, for
// nothing. So the rebuild is made in memory first (Scratch, with the same
// Append and MaybeAppend as the file), then compared with the file (Holds)
// or copied into it entry by entry, writing only what differs (Rewrite).

// Scratch returns an empty offset index that lives in memory only, with
// x's base offset and the room x has when writable (its MaxBytes, or its
// entries if the file holds more): appending to it follows Append's rules
// exactly, ErrFull included, and touches no file. Recovery builds the
// entries an index should hold in one, then compares (Holds) or copies
// (Rewrite) them.
func (x *OffsetIndex) Scratch() *OffsetIndex {
	s := &OffsetIndex{}
	x.b.scratch(&s.b)
	return s
}

// Scratch is OffsetIndex.Scratch for the time index.
func (x *TimeIndex) Scratch() *TimeIndex {
	s := &TimeIndex{}
	x.b.scratch(&s.b)
	return s
}

// Holds reports whether x, a sealed index, holds exactly want's entries
// (want from Scratch): a file of that many entries with the same bytes. It
// reads the file (at most its size, in chunks) and writes nothing.
func (x *OffsetIndex) Holds(want *OffsetIndex) (bool, error) { return x.b.holds(&want.b) }

// Holds is OffsetIndex.Holds for the time index.
func (x *TimeIndex) Holds(want *TimeIndex) (bool, error) { return x.b.holds(&want.b) }

// Rewrite makes x, a writable index, hold want's entries (want from
// Scratch) and reports whether it had to store anything: only entries that
// differ are stored, and the stale entries after want's last one are
// zeroed up to the first zero entry (the writer keeps everything past its
// last entry zero). The file is read and written with pread and pwrite,
// not through the mapping, which would fault in megabytes of a crashed
// index's unwritten pages. Nothing is synced: a writable index is made
// durable when it is sealed.
func (x *OffsetIndex) Rewrite(want *OffsetIndex) (bool, error) { return x.b.rewrite(&want.b) }

// Rewrite is OffsetIndex.Rewrite for the time index.
func (x *TimeIndex) Rewrite(want *TimeIndex) (bool, error) { return x.b.rewrite(&want.b) }

// SyncFile makes a sealed index's file durable as it stands (an fsync,
// through the descriptor SealUnsynced kept when it did the trim, else
// through the file's current name; a writable index is left alone:
// sealing makes it durable, Flush flushes its mapping). Recovery that found
// a sealed index already right leaves it as it is; the log syncs it
// (through Segment.Flush) before the recovery point passes it, because a
// crash may have come between the seal's trim and its fsync.
func (x *OffsetIndex) SyncFile() error { return x.b.syncFile() }

// SyncFile is OffsetIndex.SyncFile for the time index.
func (x *TimeIndex) SyncFile() error { return x.b.syncFile() }

// scratch makes s an empty in-memory twin of x (see Scratch).
func (x *base) scratch(s *base) {
	x.mu.RLock()
	room := max(x.maxBytes, x.n.Load()*x.entrySize) / x.entrySize
	path := x.path
	x.mu.RUnlock()
	s.entrySize, s.base, s.maxBytes = x.entrySize, x.base, x.maxBytes
	s.path = path + " (in memory)"
	s.mem, s.writable, s.lastFor = true, true, -1
	s.maxEntries.Store(room)
}

// grow makes an in-memory index's buffer reach end bytes.
func (x *base) grow(end int64) {
	if end <= int64(len(x.buf)) {
		return
	}
	if end <= int64(cap(x.buf)) {
		x.buf = x.buf[:end]
		return
	}
	nb := make([]byte, end, max(end, 2*int64(cap(x.buf)), 64*x.entrySize))
	copy(nb, x.buf)
	x.buf = nb
}

// holds compares a sealed index's file with w's entries.
func (x *base) holds(w *base) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false, x.errorf("compare", -1, ErrClosed, "")
	}
	if x.writable {
		return false, x.errorf("compare", -1, ErrReadOnly, "the index is writable, not sealed")
	}
	want := w.buf[:w.n.Load()*w.entrySize]
	if x.diskSize != int64(len(want)) {
		return false, nil
	}
	if len(want) == 0 {
		return true, nil
	}
	if x.buf != nil {
		return bytes.Equal(x.buf[:len(want)], want), nil
	}
	f, err := x.fs.Open(x.path)
	if err != nil {
		return false, x.errorf("compare", -1, err, "")
	}
	defer f.Close()
	chunk := make([]byte, min(len(want), warmChunk))
	for off := 0; off < len(want); off += len(chunk) {
		c := chunk[:min(len(chunk), len(want)-off)]
		if _, err := f.ReadAt(c, int64(off)); err != nil {
			return false, x.errorf("compare", int64(off), err, "")
		}
		if !bytes.Equal(c, want[off:off+len(c)]) {
			return false, nil
		}
	}
	return true, nil
}

// rewrite copies w's entries into a writable index, storing only the
// entries that differ.
//
// The file is read and written with pread and pwrite, not through the
// mapping: a fault on a mapped page that is not in the page cache reads
// around it, as far as the device's readahead goes (8 MiB on the machine
// this was measured on), and on a crashed active index of unwritten
// extents that is megabytes of pages zero-filled per fault, about 3 ms
// each; a pread of an entry reads a few pages.
//
// After the entries, stale ones are zeroed up to the first zero entry, not
// to the end of the file. The writer keeps everything past its last entry
// zero (a truncation zeroes what it drops, appends only add at the end),
// so after a SIGKILL the first zero entry is where the old entries ended.
// After a power loss the file may mix page versions and hold stale entries
// past a zero one; they are past the count, where nothing reads (lookups
// stop at the count, a seal trims them off, the next recovery derives the
// count again), and the file was already in that state before this
// recovery ran.
func (x *base) rewrite(w *base) (changed bool, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return false, x.errorf("rewrite", -1, ErrClosed, "")
	}
	if !x.writable {
		return false, x.errorf("rewrite", -1, ErrReadOnly, "")
	}
	es := x.entrySize
	k := w.n.Load()
	size := int64(len(x.buf)) // the mapping covers the whole (grown) file
	if k*es > size {
		return false, x.errorf("rewrite", size, ErrFull, fmt.Sprintf("%d entries", k))
	}
	want := w.buf[:k*es]
	got := make([]byte, len(want))
	if _, err := x.f.ReadAt(got, 0); err != nil {
		return false, x.errorf("rewrite", 0, err, "")
	}
	first, last := int64(-1), int64(0)
	for p := int64(0); p < int64(len(want)); p += es {
		if !bytes.Equal(got[p:p+es], want[p:p+es]) {
			if first < 0 {
				first = p
			}
			last = p + es
		}
	}
	if first >= 0 {
		if _, err := x.f.WriteAt(want[first:last], first); err != nil {
			return false, x.errorf("rewrite", first, err, "")
		}
		changed = true
	}
	// Find where the stale entries end: the first zero entry. Usually the
	// first entry read is, so the reads start at one entry (a pread reads
	// ahead in proportion to what it asks) and double.
	from, end := k*es, k*es
	limit := min(x.n.Load()*es, size)
	chunk := make([]byte, min(warmChunk/es*es, max(limit-end, 0)))
	ask := es
scan:
	for end < limit {
		c := chunk[:min(ask, int64(len(chunk)), limit-end)]
		ask *= 2
		if _, err := x.f.ReadAt(c, end); err != nil {
			return false, x.errorf("rewrite", end, err, "")
		}
		for p := int64(0); p+es <= int64(len(c)); p += es {
			if isZeroEntry(c[p : p+es]) {
				end += p
				break scan
			}
		}
		end += int64(len(c))
	}
	for p := from; p < end; {
		n := min(int64(warmChunk), end-p)
		if _, err := x.f.WriteAt(zeroChunk[:n], p); err != nil {
			return false, x.errorf("rewrite", p, err, "")
		}
		p += n
		changed = true
	}
	x.n.Store(k)
	x.lastFor = -1
	// Warm from the new end, as growLocked does from the count it found:
	// what lies past it is no entry, and warming only writes zeros there.
	x.warmEnd = k * es
	return changed, nil
}

func isZeroEntry(e []byte) bool {
	for _, b := range e {
		if b != 0 {
			return false
		}
	}
	return true
}

// syncFile makes the file durable (see SyncFile).
func (x *base) syncFile() error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return x.errorf("sync", -1, ErrClosed, "")
	}
	if x.unsynced != nil {
		defer x.mu.Unlock()
		return x.dropUnsyncedLocked(true)
	}
	writable, path := x.writable, x.path
	x.mu.Unlock()
	if writable {
		return nil
	}
	for {
		f, err := x.fs.Open(path)
		if err != nil {
			// Renamed meanwhile (retention's .deleted, a swap): sync it
			// under its new name.
			x.mu.RLock()
			renamed, now := x.path != path, x.path
			x.mu.RUnlock()
			if renamed && errors.Is(err, fs.ErrNotExist) {
				path = now
				continue
			}
			return x.errorf("sync", -1, err, "")
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return x.errorf("sync", -1, err, "")
		}
		return nil
	}
}

// Stored returns the entries x's file holds, read with pread (not through
// a mapping, as for Rewrite), up to the first zero entry (a crashed active
// index's preallocated tail; an index whose first entry is a timestamp of
// 0 at the base offset reads as empty), at most limit of them; more
// reports whether the file holds more than limit.
// Recovery checks the entries a writer made that a rebuild does not (the
// final entry Kafka's close appends to an active segment that is reopened
// later) against the .log, and keeps them.
func (x *TimeIndex) Stored(limit int) (entries []TimestampOffset, more bool, err error) {
	b := &x.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, false, b.errorf("read", -1, ErrClosed, "")
	}
	f := b.f
	if f == nil {
		if f, err = b.fs.Open(b.path); err != nil {
			return nil, false, b.errorf("read", -1, err, "")
		}
		defer f.Close()
	}
	es := b.entrySize
	n := b.diskSize / es
	if b.writable {
		n = b.n.Load()
	}
	// Entries are read a few at first, then more at a time: a pread reads
	// ahead in proportion to what it asks.
	ask := int64(4)
	buf := make([]byte, 0, warmChunk/es*es)
	for i := int64(0); i < n; {
		k := min(ask, n-i, int64(cap(buf))/es, int64(limit-len(entries))+1)
		ask *= 2
		c := buf[:k*es]
		if _, err := f.ReadAt(c, i*es); err != nil {
			return nil, false, b.errorf("read", i*es, err, "")
		}
		for p := int64(0); p < int64(len(c)); p += es {
			if isZeroEntry(c[p : p+es]) {
				return entries, false, nil
			}
			if len(entries) == limit {
				return entries, true, nil
			}
			entries = append(entries, x.decode(c, p/es))
		}
		i += k
	}
	return entries, false, nil
}
