package fsck

import (
	"encoding/binary"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// maxIndexFile bounds the index files read into memory. Kafka's default
// segment.index.bytes is 10 MiB; a file far above any sane setting is
// reported rather than read.
const maxIndexFile = 256 << 20

// idxEntry is one decoded index entry. For the offset index key is the
// absolute offset and val the position; for the time index key is the
// absolute offset and val the timestamp.
type idxEntry struct {
	key, val int64
	at       int64 // byte position of the entry in the index file
}

// idxCheck verifies one index file in step with the batches of its
// segment, which arrive in file order.
type idxCheck struct {
	c    *checker
	sr   *segResult
	name string
	time bool
	ok   bool // the file was read; otherwise every method is a no-op
	ents []idxEntry
	j    int
	// gap is set between a damaged region and the next valid batch: entries
	// describing the damaged bytes are not reported on their own, the
	// damage is.
	gap bool
	// zeroFirst says ents[0] is a sealed time index's first slot of twelve
	// zero bytes, and zeroFill the zero slots after it. The slot is the
	// entry (timestamp 0, offset base) if the segment's first batch is
	// the single offset base with max timestamp 0, as Kafka and seglog
	// write it; otherwise it is zero fill (firstTimeBatch decides).
	zeroFirst bool
	zeroFill  int
	// multi is an offset-index entry naming an offset past the batch it
	// points at, waiting for the batch holding that offset: Kafka 3.x
	// indexed a follower's append of several batches by the append's last
	// offset and its first batch's position.
	multi *idxEntry
}

// onDamage skips the entries that point into the damaged region [pos,
// end) of the .log.
func (x *idxCheck) onDamage(pos, end int64) {
	x.gap = true
	for x.ok && !x.time && x.j < len(x.ents) && x.ents[x.j].val < end {
		if e := x.ents[x.j]; e.val < pos {
			return // reported by the next valid batch
		}
		x.j++
	}
}

func (x *idxCheck) problem(pos int64, kind Kind, sev Severity, format string, args ...any) {
	x.sr.indexBad = true
	x.c.addf(x.name, pos, kind, sev, fixAction{op: fixIndex, base: x.sr.base}, format, args...)
}

// loadIndex reads and structurally checks the segment's .index or
// .timeindex.
func (c *checker) loadIndex(sr *segResult, suffix string, active bool) *idxCheck {
	x := &idxCheck{c: c, sr: sr, name: layout.FileName(sr.base, suffix), time: suffix == layout.TimeIndexSuffix}
	if !c.present[x.name] {
		x.problem(0, KindIndexMissing, Error, "missing; repair rebuilds it from %s", layout.FileName(sr.base, layout.LogSuffix))
		return x
	}
	data, err := vfs.ReadFileLimit(c.fs, c.path(x.name), maxIndexFile)
	if err != nil {
		if isNotExist(err) {
			x.problem(0, KindIndexMissing, Error, "missing; repair rebuilds it from %s", layout.FileName(sr.base, layout.LogSuffix))
		} else {
			x.problem(0, KindIndexSize, Error, "cannot read: %v", err)
		}
		return x
	}
	c.r.Stats.IndexBytes += int64(len(data))
	es := index.OffsetEntrySize
	if x.time {
		es = index.TimeEntrySize
	}
	if r := len(data) % es; r != 0 {
		x.problem(int64(len(data)-r), KindIndexSize, Error, "size %d is not a multiple of the %d-byte entry size", len(data), es)
	}
	n := len(data) / es
	k := n
	for k > 0 && allZero(data[(k-1)*es:k*es]) {
		k--
	}
	if x.time && k == 0 && n > 0 && !active {
		// Zeros only: the first slot may be the entry (0, base).
		x.zeroFirst, x.zeroFill, k = true, n-1, 1
	} else if k < n && !active {
		x.untrimmed(int64(k*es), n-k)
	}
	x.ok = true
	prevKey, prevVal := int64(-1), int64(-1)
	for i := 0; i < k; i++ {
		e := data[i*es:]
		at := int64(i * es)
		var rel int32
		var val int64
		if x.time {
			val = int64(binary.BigEndian.Uint64(e))
			rel = int32(binary.BigEndian.Uint32(e[8:]))
		} else {
			rel = int32(binary.BigEndian.Uint32(e))
			val = int64(int32(binary.BigEndian.Uint32(e[4:])))
		}
		key := sr.base + int64(rel)
		switch {
		case rel < 0:
			x.problem(at, KindIndexEntry, Error, "negative relative offset %d", rel)
			continue
		case val < 0:
			x.problem(at, KindIndexEntry, Error, "negative %s %d", x.valName(), val)
			continue
		case !x.time && key <= prevKey:
			x.problem(at, KindIndexOrder, Error, "offset %d is not above the previous entry's offset %d", key, prevKey)
			continue
		case x.time && val < prevVal:
			x.problem(at, KindIndexOrder, Error, "timestamp %d is below the previous entry's timestamp %d", val, prevVal)
			continue
		case x.time && key < prevKey:
			x.problem(at, KindIndexOrder, Error, "offset %d is below the previous entry's offset %d", key, prevKey)
			continue
		}
		prevKey, prevVal = key, val
		x.ents = append(x.ents, idxEntry{key: key, val: val, at: at})
	}
	return x
}

func (x *idxCheck) valName() string {
	if x.time {
		return "timestamp"
	}
	return "position"
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// onOffsetBatch checks the offset-index entries pointing at or before the
// valid batch [base, last] at position pos.
func (x *idxCheck) onOffsetBatch(pos, base, last int64) {
	if m := x.multi; m != nil {
		switch {
		case base > m.key:
			x.multi = nil
			x.problem(m.at, KindIndexEntry, Error, "entry names offset %d but points at the batch at position %d, and no batch after it holds that offset", m.key, m.val)
		case m.key <= last:
			x.multi = nil
			x.problem(m.at, KindIndexContains, Warning, "entry names offset %d of the batch at position %d but points at the earlier batch at position %d (Kafka 3.x indexed an append of several batches this way; Kafka 4.x and seglog index each batch's last offset)", m.key, pos, m.val)
		}
	}
	for x.ok && x.j < len(x.ents) && x.ents[x.j].val <= pos {
		e := x.ents[x.j]
		x.j++
		if m := x.multi; m != nil {
			// The batches of one append lie before the next entry's.
			x.multi = nil
			x.problem(m.at, KindIndexEntry, Error, "entry names offset %d but points at the batch at position %d, and no batch before the next entry holds that offset", m.key, m.val)
		}
		switch {
		case e.val < pos:
			x.problem(e.at, KindIndexEntry, Error, "entry (offset %d, position %d) does not point at the start of a valid batch (the next one starts at %d)", e.key, e.val, pos)
		case e.key == last:
		case e.key >= base && e.key < last:
			x.problem(e.at, KindIndexContains, Warning, "entry names offset %d inside the batch [%d, %d] at position %d; Kafka 4.x and seglog index a batch's last offset, older Kafka versions other offsets of it", e.key, base, last, pos)
		case e.key > last && x.multi == nil:
			x.multi = &e
		default:
			x.problem(e.at, KindIndexEntry, Error, "entry names offset %d but the batch at position %d holds offsets [%d, %d]", e.key, pos, base, last)
		}
	}
}

// finishOffset returns the entries left after the last valid batch, which
// point past the end of the segment's data: the caller decides whether
// they are evidence of missing data or stale entries to rebuild
// (reportPast).
func (x *idxCheck) finishOffset() []idxEntry {
	if m := x.multi; m != nil {
		x.multi = nil
		x.problem(m.at, KindIndexEntry, Error, "entry names offset %d, past the last valid batch", m.key)
	}
	var past []idxEntry
	for x.ok && x.j < len(x.ents) {
		past = append(past, x.ents[x.j])
		x.j++
	}
	return past
}

// reportPast reports offset-index entries past the last valid batch, which
// ends at byte end, as entries to rebuild.
func (x *idxCheck) reportPast(past []idxEntry, end int64) {
	for _, e := range past {
		x.problem(e.at, KindIndexEntry, Error, "entry (offset %d, position %d) points past the last valid batch, which ends at byte %d", e.key, e.val, end)
	}
}

// onTimeBatch checks the time-index entries naming offsets up to the valid
// batch [base, last], whose max timestamp is maxTS; before is the
// segment's running maximum before this batch. An entry (T, O) must say
// "T is the largest timestamp so far, first reached by the batch whose
// last offset is O".
func (x *idxCheck) onTimeBatch(base, last, maxTS, before int64) {
	if x.zeroFirst {
		x.firstTimeBatch(base == x.sr.base && last == base && maxTS == 0 && before < 0)
	}
	for x.ok && x.j < len(x.ents) && x.ents[x.j].key < base {
		e := x.ents[x.j]
		x.j++
		if x.gap {
			continue
		}
		x.problem(e.at, KindIndexEntry, Error, "entry (timestamp %d, offset %d) names an offset outside every valid batch", e.val, e.key)
	}
	x.gap = false
	for x.ok && x.j < len(x.ents) && x.ents[x.j].key <= last {
		e := x.ents[x.j]
		x.j++
		reached := e.val == maxTS && before < maxTS
		switch {
		case reached && e.key == last:
		case reached:
			x.problem(e.at, KindIndexContains, Warning, "entry (timestamp %d, offset %d) names an offset inside the batch [%d, %d] that reached it; Kafka 4.x and seglog use the batch's last offset", e.val, e.key, base, last)
		default:
			x.problem(e.at, KindIndexEntry, Error, "entry (timestamp %d, offset %d) is not the running maximum timestamp: the batch [%d, %d] has max timestamp %d and the maximum before it was %d", e.val, e.key, base, last, maxTS, before)
		}
	}
}

// firstTimeBatch settles zeroFirst at the segment's first valid batch (or
// its end): entry says the batch is the one the entry (0, base) names.
// Otherwise the slot is dropped and reported with the fill after it.
func (x *idxCheck) firstTimeBatch(entry bool) {
	x.zeroFirst = false
	slots, at := x.zeroFill, int64(index.TimeEntrySize)
	if !entry {
		x.ents = x.ents[1:]
		slots, at = slots+1, 0
	}
	if slots > 0 {
		x.untrimmed(at, slots)
	}
}

// untrimmed reports the zero slots from byte at of a sealed index.
func (x *idxCheck) untrimmed(at int64, slots int) {
	x.problem(at, KindIndexTrim, Warning,
		"%d zero-filled entries follow the last entry: the index of a sealed or cleanly closed segment must be trimmed, or readers take the zeros for entries", slots)
}

// finishTime reports entries after the last valid batch and, for a sealed
// or cleanly closed segment, checks that the last entry holds the
// segment's largest timestamp (retention by time reads it).
//
// With missing set the segment's data is reported missing, and the entries
// past its end are part of that evidence, not problems of their own.
func (x *idxCheck) finishTime(end, segMax int64, sealed, missing bool) {
	if !x.ok {
		return
	}
	if x.zeroFirst {
		x.firstTimeBatch(false) // no valid batch
	}
	stale := false
	for x.j < len(x.ents) {
		e := x.ents[x.j]
		x.j++
		stale = true
		if missing {
			continue
		}
		x.problem(e.at, KindIndexEntry, Error, "entry (timestamp %d, offset %d) names an offset past the last valid batch (the log ends at byte %d)", e.val, e.key, end)
	}
	if !sealed || segMax < 0 || stale {
		return
	}
	if len(x.ents) == 0 {
		x.problem(0, KindIndexLast, Error, "no entries, but the segment's largest timestamp is %d; the last entry must hold it", segMax)
		return
	}
	if e := x.ents[len(x.ents)-1]; e.val != segMax {
		x.problem(e.at, KindIndexLast, Error, "last entry has timestamp %d, but the segment's largest timestamp is %d", e.val, segMax)
	}
}

// checkTxnIndex compares the segment's .txnindex, if there is one, with the
// ABORT markers found in the segment.
func (c *checker) checkTxnIndex(sr *segResult, aborts []abortRef) {
	name := layout.FileName(sr.base, layout.TxnIndexSuffix)
	if !c.present[name] {
		return
	}
	sr.hasTxnIdx = true
	data, err := vfs.ReadFileLimit(c.fs, c.path(name), maxIndexFile)
	if err != nil {
		c.addf(name, 0, KindTxnIndex, Error, fixAction{}, "cannot read: %v", err)
		return
	}
	const es = 34
	if r := len(data) % es; r != 0 {
		c.addf(name, int64(len(data)-r), KindTxnIndex, Error, fixAction{}, "size %d is not a multiple of the 34-byte entry size", len(data))
	}
	want := map[[2]int64]abortRef{}
	for _, a := range aborts {
		want[[2]int64{a.pid, a.last}] = a
	}
	seen := map[[2]int64]bool{}
	prevLast := int64(-1)
	for i := 0; i+es <= len(data); i += es {
		e := data[i:]
		at := int64(i)
		version := int16(binary.BigEndian.Uint16(e))
		pid := int64(binary.BigEndian.Uint64(e[2:]))
		first := int64(binary.BigEndian.Uint64(e[10:]))
		last := int64(binary.BigEndian.Uint64(e[18:]))
		lso := int64(binary.BigEndian.Uint64(e[26:]))
		switch {
		case version != 0:
			c.addf(name, at, KindTxnIndex, Error, fixAction{}, "entry version %d, want 0", version)
			continue
		case first > last || last < sr.base:
			c.addf(name, at, KindTxnIndex, Error, fixAction{}, "entry for producer %d has offsets [%d, %d], impossible in segment %d", pid, first, last, sr.base)
			continue
		case last < prevLast:
			c.addf(name, at, KindTxnIndex, Error, fixAction{}, "entry's last offset %d is below the previous entry's %d", last, prevLast)
		case lso > last:
			c.addf(name, at, KindTxnIndex, Error, fixAction{}, "entry's last stable offset %d is above its abort marker's offset %d", lso, last)
		}
		prevLast = last
		key := [2]int64{pid, last}
		a, ok := want[key]
		if !ok {
			c.addf(name, at, KindTxnIndex, Error, fixAction{}, "entry (producer %d, offsets [%d, %d]) matches no ABORT marker in the segment", pid, first, last)
			continue
		}
		seen[key] = true
		if a.first >= 0 && a.first != first {
			c.addf(name, at, KindTxnIndex, Error, fixAction{}, "entry for producer %d says its aborted transaction began at offset %d, but its first batch is at %d", pid, first, a.first)
		}
	}
	for _, a := range aborts {
		if !seen[[2]int64{a.pid, a.last}] {
			c.addf(name, int64(len(data)/es*es), KindTxnIndex, Error, fixAction{},
				"no entry for the ABORT marker of producer %d at offset %d", a.pid, a.last)
		}
	}
}
