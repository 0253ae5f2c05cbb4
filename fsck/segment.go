package fsck

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
)

// abortRef is an ABORT marker seen in a segment, for the .txnindex check.
type abortRef struct {
	pid         int64
	first, last int64 // first offset of the transaction (-1 if unknown), marker offset
}

// checkSegment scans one segment's .log and checks its indexes against it.
func (c *checker) checkSegment(i int) {
	base := c.logs[i]
	logName := layout.FileName(base, layout.LogSuffix)
	last := i == len(c.logs)-1
	nextBase := int64(math.MaxInt64)
	if !last {
		nextBase = c.logs[i+1]
	}
	// The active segment of a running (or crashed) log keeps preallocated
	// indexes and gets its final time-index entry only at close. So may a
	// segment it had just rolled and not yet flushed: a roll leaves the
	// trims to the flush that takes the recovery point past the segment
	// (design.md, "A roll does no file work"). Recovery finishes both, so
	// neither is damage while the segment holds offsets at or above the
	// recovery point of a log that did not shut down cleanly.
	active := !c.clean && (last || nextBase > c.rp)
	sr := &segResult{base: base}
	c.segs = append(c.segs, sr)
	c.r.Stats.Segments++

	// Indexes are read before the .log: a live Log writes a batch before
	// indexing it, so every entry read here refers to bytes read below.
	oi := c.loadIndex(sr, layout.IndexSuffix, active)
	ti := c.loadIndex(sr, layout.TimeIndexSuffix, active)

	f, err := c.fs.Open(c.path(logName))
	if err != nil {
		c.addf(logName, 0, KindIO, Error, fixAction{}, "cannot open: %v", err)
		return
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		c.addf(logName, 0, KindIO, Error, fixAction{}, "cannot stat: %v", err)
		return
	}
	sr.size = size
	c.r.Stats.LogBytes += size

	expected := max(c.next, base)
	sc := segment.NewScanner(f, size, c.opts.MaxEntryBytes)
	sc.SetMinOffset(expected)
	var it record.Iterator
	var aborts []abortRef
	runMax := int64(-1)
	for {
		e, ok, err := sc.Next()
		if err != nil {
			c.addf(logName, sc.Pos(), KindIO, Error, fixAction{}, "read failed: %v", err)
			break
		}
		if !ok {
			break
		}
		if c.opts.Progress != nil {
			c.opts.Progress(e.Size)
		}
		if e.OverLimit() {
			// Not damage: the offsets in its header are taken as they
			// are so the batches after it are judged normally, but
			// nothing about it is verified and repair leaves the segment.
			sr.overLimit = true
			c.addf(logName, e.Pos, KindReadLimit, Error, fixAction{}, "%v", e.Err)
		} else if e.Damaged() {
			c.addDamage(i, logName, e)
			oi.onDamage(e.Pos, e.Pos+e.Size)
			ti.onDamage(e.Pos, e.Pos+e.Size)
			continue
		}
		eb, el := e.BaseOffset(), e.LastOffset()
		var kind Kind
		var why string
		switch {
		case eb < base:
			kind, why = KindOffsetOrder, fmt.Sprintf("batch offsets [%d, %d] start below the file's base offset %d", eb, el, base)
		case eb < expected:
			kind, why = KindOffsetOrder, fmt.Sprintf("batch offsets [%d, %d] do not follow the previous batch's last offset %d", eb, el, expected-1)
		case el >= nextBase:
			kind, why = KindOffsetRange, fmt.Sprintf("batch offsets [%d, %d] reach the next segment's base offset %d", eb, el, nextBase)
		case el-base > math.MaxInt32:
			kind, why = KindOffsetRange, fmt.Sprintf("last offset %d is more than 2^31-1 above the base offset %d", el, base)
		}
		var recs int64
		if e.OverLimit() && e.Magic == record.CurrentMagic {
			recs = int64(e.Batch.NumRecords())
		} else if kind == "" && e.Magic == record.CurrentMagic {
			n, abort, err := c.decode(e.Batch, &it)
			if err != nil {
				kind, why = KindBadRecords, err.Error()
			}
			recs = n
			if abort {
				first := int64(-1)
				if f, ok := c.openTxn[e.Batch.ProducerID()]; ok {
					first = f
				}
				if len(aborts) < 1<<20 {
					aborts = append(aborts, abortRef{pid: e.Batch.ProducerID(), first: first, last: eb})
				}
			}
		}
		if kind != "" {
			e.Err, e.Kind = fmt.Errorf("%s", why), kind
			c.addDamage(i, logName, e)
			oi.onDamage(e.Pos, e.Pos+e.Size)
			ti.onDamage(e.Pos, e.Pos+e.Size)
			continue
		}
		if e.Magic == record.CurrentMagic && eb > expected {
			// (A legacy entry's header holds its last offset only.)
			why := fmt.Sprintf("the batch at byte %d starts at offset %d, but the batch before it ends at offset %d", e.Pos, eb, expected-1)
			if sr.batches == 0 && expected == base {
				why = fmt.Sprintf("the segment's first batch, at byte %d, starts at offset %d, above the base offset %d its name gives", e.Pos, eb, base)
			}
			if c.gap(expected, eb-1) {
				c.addMissing(logName, e.Pos, max(expected, c.logStart), eb-1, why, true)
			}
		}
		maxTS := c.account(logName, &e, recs)
		before := runMax
		runMax = max(runMax, maxTS)
		oi.onOffsetBatch(e.Pos, eb, el)
		ti.onTimeBatch(eb, el, maxTS, before)
		expected = el + 1
		c.damageSince = false
		sc.SetMinOffset(expected)
		c.next = expected
		sr.validEnd = e.Pos + e.Size
		sr.batches++
		c.validBatches++
		c.validRecords += recs
	}
	// A zero tail (an untrimmed preallocated file) is the end of the
	// file, as for recovery: repair's floor is where the data ends.
	sr.size = size - sc.ZeroTail()
	c.checkMissing(sr, oi, logName, last, nextBase, size)
	ti.finishTime(sr.validEnd, runMax, !active, sr.missing != "")
	c.checkTxnIndex(sr, aborts)
}

// gap reports whether offsets [from, to], absent between two batches,
// are missing data: the log was never compacted (compaction leaves gaps),
// no damage lies between the batches (the damage is the gap, and is
// reported), and some of them are at or above the log start (below it
// they were deleted).
func (c *checker) gap(from, to int64) bool {
	return !c.compacted && !c.damageSince && to >= from && to >= c.logStart
}

// checkMissing looks, at the end of a segment, for data the log had that
// is gone: offset-index entries pointing past the end of the .log (at
// batches the log had synced), and offsets between this segment's last
// batch and the next segment's base in a log never compacted. Both are
// one missing-data problem on the .log, at the end of its valid data.
// The other index entries past the end (at batches the log had not synced:
// a crash lost them, and the index outlived them) are stale entries that
// repair rebuilds.
func (c *checker) checkMissing(sr *segResult, oi *idxCheck, logName string, last bool, nextBase, fileSize int64) {
	past := oi.finishOffset()
	segEnd := max(c.next, sr.base) // the first offset this segment does not hold
	var evidence, stale []idxEntry
	for _, e := range past {
		if !c.damageSince && e.key < c.rp && e.key >= c.logStart {
			evidence = append(evidence, e)
		} else {
			stale = append(stale, e)
		}
	}
	oi.reportPast(stale, sr.validEnd)
	from, to := max(segEnd, c.logStart), int64(-1)
	var why []string
	if len(evidence) > 0 {
		k := evidence[len(evidence)-1].key
		to = k
		why = append(why, fmt.Sprintf("%d entries of %s (from byte %d) point past the end of this file's batches (byte %d of %d), at batches ending at offsets up to %d",
			len(evidence), oi.name, evidence[0].at, sr.validEnd, fileSize, k))
	}
	if !last && c.gap(segEnd, nextBase-1) {
		to = max(to, nextBase-1)
		if sr.batches == 0 {
			why = append(why, fmt.Sprintf("this segment holds no batch, and the next one, %s, starts at offset %d", layout.FileName(nextBase, layout.LogSuffix), nextBase))
		} else {
			why = append(why, fmt.Sprintf("this segment's last batch ends at offset %d, and the next segment, %s, starts at offset %d", segEnd-1, layout.FileName(nextBase, layout.LogSuffix), nextBase))
		}
	}
	if to < from {
		return
	}
	if len(evidence) > 0 {
		sr.indexBad = true // entries past the end: rebuilt if this repair's own cut left them
		sr.missing = problemKey(Problem{File: logName, Position: sr.validEnd, Kind: KindMissingData})
	}
	c.addMissing(logName, sr.validEnd, from, to, strings.Join(why, "; "), !last && c.gap(segEnd, nextBase-1))
}

// addMissing reports offsets [from, to] as missing data. gap says the
// evidence is an offset gap, which only a log never compacted rules out.
func (c *checker) addMissing(file string, pos, from, to int64, why string, gap bool) {
	detail := fmt.Sprintf("data missing: offsets %d–%d: %s", from, to, why)
	if gap {
		detail += "; the log was never compacted (no cleaner-offset-checkpoint), so every offset from its start to its end was in a batch"
	}
	if from < c.rp {
		detail += fmt.Sprintf("; below the recovery point %s: the log had synced them", c.rpSource)
	} else {
		detail += fmt.Sprintf("; past the recovery point %s: the log had not synced them, so a crash may have lost them", c.rpSource)
	}
	detail += "; repair cannot bring them back and leaves this evidence as it is"
	c.addf(file, pos, KindMissingData, Error, fixAction{}, "%s", detail)
}

// decode counts a v2 batch's records, decoding them when the check is deep
// and for control batches (to find ABORT markers). It reports whether the
// batch is an ABORT marker.
func (c *checker) decode(b record.Batch, it *record.Iterator) (n int64, abort bool, err error) {
	if !c.opts.Deep && !b.IsControl() {
		return int64(b.NumRecords()), false, nil
	}
	// A large batch of compressible records legitimately expands far past
	// the record package's default cap; the cap scales with the batch so a
	// small decompression bomb still cannot allocate much.
	it.MaxDecompressed = min(max(record.DefaultMaxDecompressed, 64*len(b)), 1<<30)
	if err := it.Reset(b); err != nil {
		return 0, false, err
	}
	prev := b.BaseOffset() - 1
	for it.Next() {
		n++
		// Consumers take each record's offset from its delta; compaction
		// leaves gaps but never reorders.
		if off := it.Record().Offset; off <= prev || off > b.LastOffset() {
			return n, false, fmt.Errorf("record %d has offset %d, not between the previous record's %d and the batch's last offset %d", n-1, off, prev, b.LastOffset())
		}
		prev = it.Record().Offset
		if b.IsControl() {
			_, typ, err := record.ParseControlKey(it.Record().Key)
			if err != nil {
				return n, false, fmt.Errorf("control record %d: %w", n-1, err)
			}
			abort = abort || typ == record.ControlAbort
		}
	}
	if err := it.Err(); err != nil {
		return n, false, err
	}
	return n, abort && b.IsTransactional(), nil
}

// account adds a valid entry to the statistics and the producer and epoch
// trackers, and returns its max timestamp (-1 if none).
func (c *checker) account(file string, e *Entry, recs int64) int64 {
	st := &c.r.Stats
	st.Batches++
	st.FirstOffset = minKnown(st.FirstOffset, e.BaseOffset())
	st.LastOffset = max(st.LastOffset, e.LastOffset())
	if e.Magic != record.CurrentMagic {
		st.LegacyEntries++
		st.Codecs[fmt.Sprintf("legacy-v%d", e.Magic)]++
		if e.Magic == 0 || len(e.Batch) < record.LogOverhead+14 {
			return -1
		}
		// A v1 entry's timestamp (offset, size, crc, magic, attributes,
		// then the timestamp) is its max timestamp: Kafka's time index,
		// and the engine's recovery, index it.
		ts := int64(binary.BigEndian.Uint64(e.Batch[record.LogOverhead+6:]))
		if ts >= 0 {
			st.MaxTimestamp = max(st.MaxTimestamp, ts)
			st.MinTimestamp = minKnown(st.MinTimestamp, ts)
		}
		return ts
	}
	b := e.Batch
	st.Records += recs
	st.Codecs[b.Codec().String()]++
	if b.NumRecords() == 0 && b.Codec() != record.None {
		c.addf(file, e.Pos, KindEmptyCodec, Warning, fixAction{},
			"the batch of offsets [%d, %d] holds no records but names codec %s: Kafka clients fail to decompress its empty payload and read no further (seglog's compaction wrote such headers until 2026-12-06; no record is lost). The next compaction round over this segment rewrites it uncompressed, and one can be run now with the writer stopped: seglog clean STORE --topic TOPIC --compact (the topic's own config; on a lone log, seglog clean DIR --compact); repair does not",
			b.BaseOffset(), b.LastOffset(), b.Codec())
	}
	if b.IsControl() {
		st.ControlBatches++
	}
	maxTS := b.MaxTimestamp()
	if maxTS >= 0 {
		st.MaxTimestamp = max(st.MaxTimestamp, maxTS)
		first := maxTS
		if ts := b.BaseTimestamp(); ts >= 0 && !b.HasDeleteHorizon() {
			first = min(ts, maxTS)
		}
		st.MinTimestamp = minKnown(st.MinTimestamp, first)
	}
	if ep := b.PartitionLeaderEpoch(); ep >= 0 {
		if ep < c.lastEpoch {
			c.addf(file, e.Pos, KindLeaderEpoch, Warning, fixAction{},
				"batch at offset %d carries leader epoch %d, below the epoch %d of an earlier batch", e.BaseOffset(), ep, c.lastEpoch)
		} else {
			c.lastEpoch = ep
		}
		if _, ok := c.epochs[ep]; !ok && len(c.epochs) < 1<<16 {
			c.epochs[ep] = e.BaseOffset()
		}
		if _, ok := c.epochs[ep]; ok {
			c.epochEnd[ep] = e.LastOffset()
		}
	}
	if pid := b.ProducerID(); pid >= 0 && b.IsTransactional() {
		if b.IsControl() {
			delete(c.openTxn, pid)
		} else if _, ok := c.openTxn[pid]; !ok && len(c.openTxn) < 1<<20 {
			c.openTxn[pid] = e.BaseOffset()
		}
	}
	return maxTS
}

// addDamage records a damaged region of a .log.
func (c *checker) addDamage(seg int, file string, e Entry) {
	sr := c.segs[seg]
	sr.damaged = true
	c.damageSince = true
	detail := e.Err.Error()
	switch {
	case e.ToEnd:
		detail += "; no valid batch follows in this file"
	default:
		detail += fmt.Sprintf("; the next valid batch starts at byte %d", e.Pos+e.Size)
	}
	idx := c.add(Problem{File: file, Position: e.Pos, Kind: e.Kind, Severity: Error, Detail: detail,
		fix: fixAction{op: fixDamage, base: sr.base}})
	c.damages = append(c.damages, damageRef{seg: seg, pos: e.Pos, problem: idx,
		batchesBefore: c.validBatches, recsBefore: c.validRecords, nextBefore: max(c.next, sr.base), entry: Entry{Pos: e.Pos, Size: e.Size, ToEnd: e.ToEnd, Torn: e.Torn, Kind: e.Kind}, file: file})
}

// classifyDamage decides, once every segment has been read, what each
// damaged region is. Damage below the recovery point is in data the log
// had synced: corruption, which repair reports and leaves (only
// TruncateDamaged cuts it). Damage past it is what the Log's recovery cuts
// on the next Open (the first invalid batch past the recovery point and
// everything after it), and repair cuts it the same way. A region at the
// very end that looks like an interrupted write is a torn tail.
func (c *checker) classifyDamage() {
	cut := false // a cut past the recovery point is already planned
	for k := range c.damages {
		d := &c.damages[k]
		after := c.validBatches - d.batchesBefore
		recs := c.validRecords - d.recsBefore
		if d.problem < 0 {
			continue
		}
		p := &c.r.Problems[d.problem]
		below := c.belowRecoveryPoint(*d)
		laterEmpty := true
		for _, s := range c.segs[d.seg+1:] {
			laterEmpty = laterEmpty && s.size == 0
		}
		switch {
		case after == 0 && d.entry.Torn && laterEmpty && !below:
			p.Kind, p.Severity = KindTornTail, Warning
			p.Detail = "partial entry at the end of the log (an interrupted write): " + p.Detail
		case below && p.Kind == KindTornTail:
			// A fragment too short for a header, in data the log had
			// synced, is not an interrupted write.
			p.Kind = KindBadLength
		}
		switch {
		case below:
			p.Detail += fmt.Sprintf("; below the recovery point %s: the log had synced it, so this is corruption, and repair does not cut it", c.rpSource)
			if after > 0 {
				p.Detail += fmt.Sprintf("; %d valid records in %d batches follow it: truncating here (--truncate-damaged) moves them to quarantine files", recs, after)
			} else {
				p.Detail += "; no valid batch follows it: truncating here (--truncate-damaged) loses nothing else"
			}
		case cut:
			p.Detail += "; past the recovery point, after earlier damage that repair cuts"
		default:
			cut = true
			p.Detail += fmt.Sprintf("; past the recovery point %s: the log had not synced it, and repair cuts it there as the log's recovery does", c.rpSource)
			if after > 0 {
				p.Detail += fmt.Sprintf("; the %d unsynced records in %d batches after it go to quarantine files, as recovery keeps them", recs, after)
			}
		}
	}
}
