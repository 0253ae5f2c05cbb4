package segment

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Remnant describes the bytes of a .log from a position (where damage
// begins, or 0 for a whole file) to its end: whether they hold valid
// entries, found by a resynchronizing scan. Recovery cuts such bytes only
// when they hold none (a torn tail); otherwise it keeps them in a
// quarantine file (Quarantine).
type Remnant struct {
	// Pos is where the bytes begin, Bytes how many there are.
	Pos, Bytes int64
	// Batches is the number of valid entries found, Records the records
	// they hold (a legacy v0/v1 entry counts as one record, its inner
	// messages being compressed or not). FirstOffset and LastOffset are
	// the first offset of the first entry found and the last offset of the
	// last one, -1 when none was found.
	Batches     int
	Records     int64
	FirstOffset int64
	LastOffset  int64
	// Unsure says the scan gave up before the end: checking every place a
	// valid entry might begin would have cost more checksum work than the
	// bound allows (a region crafted to look like batches everywhere).
	// Entries past that point are not counted, and the bytes count as
	// holding valid data: what cannot be ruled out is kept.
	Unsure bool
}

// HoldsValid reports whether the bytes must be kept: a valid entry was
// found in them, or the scan could not rule one out.
func (r Remnant) HoldsValid() bool { return r.Batches > 0 || r.Unsure }

// String describes r for log lines and errors.
func (r Remnant) String() string {
	switch {
	case r.Batches == 0 && r.Unsure:
		return fmt.Sprintf("%d bytes at byte %d, not fully checked (scan bound reached)", r.Bytes, r.Pos)
	case r.Batches == 0:
		return fmt.Sprintf("%d bytes at byte %d holding no valid batch", r.Bytes, r.Pos)
	}
	s := fmt.Sprintf("%d bytes at byte %d holding %d valid batches, %d records, offsets %d-%d",
		r.Bytes, r.Pos, r.Batches, r.Records, r.FirstOffset, r.LastOffset)
	if r.Unsure {
		s += " (and more not checked: scan bound reached)"
	}
	return s
}

// remnantBudget bounds the bytes a resynchronizing scan of n bytes
// checksums: a few passes over them. A candidate entry costs a checksum of
// its declared length, so garbage whose length fields happen to fit could
// otherwise cost one pass per byte. Random bytes pass the cheap tests
// rarely enough that up to some tens of MiB of them are scanned to the end
// within it (BenchmarkScanRemnant); past the bound the rest is kept, not
// cut (Remnant.Unsure).
// A variable so that a test can reach it with a small region.
var remnantBudget = func(n int64) int64 { return 8*n + 256<<20 }

// ScanRemnant scans the .log at path from byte pos to its end for every
// position where a valid entry begins, whatever its offsets (a legal
// length that fits in the file, a known magic, a valid checksum), and
// describes what it found. Its work is bounded (Remnant.Unsure).
func ScanRemnant(fsys vfs.FS, path string, pos int64) (Remnant, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return Remnant{}, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return Remnant{}, err
	}
	return scanRemnant(f, path, pos, size)
}

// scanRemnant is the resynchronizing scan: from pos to end it looks for
// every position where a valid entry begins, and skips each one it finds.
// A valid entry is one recovery would keep if its offsets fitted: a legal
// length that fits in the file (PeekEntry, MaxStoredEntry), a known magic,
// and a valid checksum with the v2 framing (checkEntry), plus, as cheap
// filters applied before the checksum, a known codec, no negative record
// count or last offset delta for v2, and for a legacy entry attributes
// with only known bits and key and value lengths that add up to its
// length. Offsets are not judged: a valid batch whose offsets do not fit
// the log is still data worth keeping.
//
// The same scan decides for Open (a torn tail is cut, anything else kept in
// a quarantine file), for fsck's repair and for a read-only view's report.
func scanRemnant(f io.ReaderAt, path string, pos, end int64) (Remnant, error) {
	r := Remnant{Pos: pos, Bytes: max(end-pos, 0), FirstOffset: -1, LastOffset: -1}
	sc := &scanner{chunk: fullChunk}
	sc.reset(f, path, pos, end, MaxStoredEntry)
	budget := remnantBudget(r.Bytes)
	for q := pos; end-q >= record.PeekSize; {
		// Skip, within a window, the positions no entry can begin at: an
		// unknown magic, or a length below the minimum or past the end.
		// The window already read is used to its end before another is
		// read: after a valid batch the next one is usually in it.
		var w []byte
		if q >= sc.winPos && q+record.PeekSize <= sc.winPos+int64(len(sc.win)) {
			w = sc.win[q-sc.winPos:]
		} else {
			var err error
			if w, err = sc.need(q, int(min(int64(fullChunk), end-q))); err != nil {
				return r, err
			}
		}
		n := len(w)
		i, last := 0, n-record.PeekSize
		for i <= last {
			if w[i+record.MagicOffset] > record.CurrentMagic {
				i++
				continue
			}
			l := int64(int32(binary.BigEndian.Uint32(w[i+record.LogOverhead-4:])))
			if l >= record.MinEntrySize && l+record.LogOverhead <= end-q-int64(i) {
				break
			}
			if l == 0 {
				// Zeros (a hole a crash left): no entry begins before
				// the length field reaches a non-zero byte.
				i = max(i+1, nextNonZero(w, i+record.LogOverhead)-record.LogOverhead+1)
				continue
			}
			i++
		}
		if i > last {
			q += int64(last + 1)
			continue
		}
		q += int64(i)
		h, ok, err := sc.validEntryAt(q, &budget)
		if err != nil {
			return r, err
		}
		if budget < 0 {
			r.Unsure = true
			return r, nil
		}
		if !ok {
			q++
			continue
		}
		if r.Batches == 0 {
			r.FirstOffset = h.base
		}
		r.Batches++
		r.LastOffset = h.last
		r.Records += h.records
		q += int64(h.size)
	}
	return r, nil
}

// nextNonZero returns the index of the first non-zero byte of w at or after
// from, len(w) if there is none, reading eight bytes at a time.
func nextNonZero(w []byte, from int) int {
	i := from
	for ; i+8 <= len(w); i += 8 {
		if binary.LittleEndian.Uint64(w[i:]) != 0 {
			break
		}
	}
	for ; i < len(w); i++ {
		if w[i] != 0 {
			return i
		}
	}
	return len(w)
}

// validEntryAt reports whether a valid entry (as scanRemnant defines it)
// begins at q, charging its checksum to budget; the entry's header comes
// back with records set. It returns ok = false without charging when a
// cheap test fails, and with budget below zero when the bound is reached.
func (sc *scanner) validEntryAt(q int64, budget *int64) (h header, ok bool, err error) {
	b, err := sc.need(q, record.PeekSize)
	if err != nil {
		return h, false, err
	}
	size, magic, perr := record.PeekEntry(b)
	if perr != nil || size > sc.max || int64(size) > sc.end-q {
		return h, false, nil
	}
	hb, err := sc.need(q, min(size, record.HeaderSize))
	if err != nil {
		return h, false, err
	}
	h = headerOf(hb, q, size, magic)
	if magic == record.CurrentMagic {
		bt := record.Batch(hb)
		if !bt.Codec().Valid() || bt.NumRecords() < 0 || bt.LastOffsetDelta() < 0 {
			return h, false, nil
		}
		h.records = int64(bt.NumRecords())
	} else {
		if ok, err := sc.legacyPlausible(q, size, magic); err != nil || !ok {
			return h, false, err
		}
		h.records = 1
	}
	if *budget -= int64(size); *budget < 0 {
		return h, false, nil
	}
	entry, err := sc.need(q, size)
	if err != nil {
		return h, false, err
	}
	return h, checkEntry(h, entry) == nil, nil
}

// legacyPlausible applies the cheap tests to a legacy (v0/v1) entry of
// size bytes at q: attributes with only a legacy codec (and for v1 the
// timestamp type) set, and a key length and a value length (-1 for null)
// that account for exactly the entry's bytes.
func (sc *scanner) legacyPlausible(q int64, size int, magic int8) (bool, error) {
	// v0: offset(8) size(4) crc(4) magic(1) attributes(1) keylen(4) key
	// valuelen(4) value; v1 has an 8-byte timestamp after the attributes.
	keyAt, overhead, attrMask := 18, 26, byte(0x07)
	if magic == 1 {
		keyAt, overhead, attrMask = 26, 34, 0x0f
	}
	if size < overhead {
		return false, nil
	}
	b, err := sc.need(q, keyAt+4)
	if err != nil {
		return false, err
	}
	if attr := b[record.MagicOffset+1]; attr&^attrMask != 0 || attr&0x07 > byte(record.LZ4) {
		return false, nil
	}
	k := int64(int32(binary.BigEndian.Uint32(b[keyAt:])))
	if k < -1 || max(k, 0) > int64(size-overhead) {
		return false, nil
	}
	vAt := int64(keyAt) + 4 + max(k, 0)
	vb, err := sc.need(q+vAt, 4)
	if err != nil {
		return false, err
	}
	v := int64(int32(binary.BigEndian.Uint32(vb)))
	return v >= -1 && int64(overhead)+max(k, 0)+max(v, 0) == int64(size), nil
}
