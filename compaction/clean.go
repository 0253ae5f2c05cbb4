package compaction

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/sealed"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
)

// Result describes a round.
type Result struct {
	// Start is the log's start offset and End the checkpoint the round
	// reached: everything in [Start, End) has been compacted against the
	// keys mapped, and a later round continues from End.
	Start, End int64
	// MapFull reports that the offset map filled up before the dirty part
	// was mapped; End then stops short of it.
	MapFull bool
	// MapFill is how full the map was, 0 to 1.
	MapFill float64
	// BytesRead and BytesWritten count the segment bytes read (every
	// pass) and written (new segments).
	BytesRead, BytesWritten int64
	// SegmentsRead is how many old segments were rewritten, into
	// SegmentsWritten new ones.
	SegmentsRead, SegmentsWritten int
	// RecordsRemoved counts removed records; TombstonesRemoved and
	// MarkersRemoved those among them that were tombstones and
	// transaction markers, AbortedRemoved the data of aborted
	// transactions, KeylessRemoved the records without a key.
	RecordsRemoved, TombstonesRemoved, MarkersRemoved, AbortedRemoved, KeylessRemoved int64
	// BatchesRemoved counts batches dropped entirely; HorizonsSet the
	// batches given a delete horizon.
	BatchesRemoved, HorizonsSet int64
	// Deferred reports that the round stopped at a group it could not
	// swap in yet (seglog.ErrSegmentsBusy: the previous segment at its
	// offset is still held); End is then where the next round resumes.
	Deferred bool
	// Duration is how long the round took.
	Duration time.Duration
}

// round is one compaction round's state.
type round struct {
	l         log
	o         Options
	m         *OffsetMap
	now       int64 // ms
	horizon   int64 // delete horizon set by this round
	mappedEnd int64
	txn       *txnState
	it        record.Iterator
	bld       *record.Builder
	kept      []record.Record
	recs      []record.Record // a batch's records (readAll)
	hdrs      []record.Header // their headers
	hs        []keyHash       // map lookups or puts waiting to be made
	offs      []int64         // the offsets of the puts
	readBuf   []byte          // segment.Segment.Entries' window
	res       Result
	// legacyHorizon is Kafka's rule for legacy tombstones: they stay in
	// segments modified after it (ms).
	legacyHorizon int64
	lg            legacyBufs
}

// clean is Clean on compaction's view of the log.
func clean(l log, m *OffsetMap, firstDirty, upper int64, o Options) (Result, error) {
	began := time.Now()
	o = o.withDefaults()
	r := &round{l: l, o: o, m: m, txn: newTxnState(), bld: record.NewBuilder(record.None)}
	r.now = o.Now().UnixMilli()
	r.horizon = r.now + o.DeleteRetention.Milliseconds()
	r.res.Start = l.StartOffset()
	r.res.End = max(firstDirty, r.res.Start)
	defer func() { r.res.Duration = time.Since(began) }()

	run := l.AcquireSealed(r.res.Start, upper)
	defer run.Release()
	if run.Len() == 0 {
		return r.res, nil
	}
	runEnd := run.Info(run.Len() - 1).NextOffset
	firstDirty = min(max(firstDirty, r.res.Start), runEnd)
	if firstDirty >= runEnd && !o.Force {
		r.res.End = firstDirty
		return r.res, nil
	}
	r.legacyHorizon = 0
	for i := range run.Len() {
		// The last clean segment's mtime less delete.retention.ms.
		if info := run.Info(i); info.NextOffset <= firstDirty {
			r.legacyHorizon = info.Modified.UnixMilli() - o.DeleteRetention.Milliseconds()
		}
	}
	if err := r.scanAndMap(run, firstDirty, runEnd); err != nil {
		return r.res, err
	}
	r.res.End = r.mappedEnd
	// A group's commit (the new segments' fsync and the swap) runs while
	// the next group is rewritten: its fsync waits for the disk, not for
	// the processor. Commits stay in order, one at a time.
	var prev *commit
	settle := func(c *commit) error {
		if c == nil {
			return nil
		}
		err := <-c.done
		if err == nil {
			r.res.BytesWritten += c.written
			r.res.SegmentsRead += c.g.Len()
			r.res.SegmentsWritten += len(c.news)
		}
		return err
	}
	fail := func(base int64, err error) (Result, error) {
		if errors.Is(err, seglog.ErrSegmentsBusy) {
			// Later groups wait for the next round, which maps again from
			// here (or from firstDirty) and so redoes what this one skips.
			r.res.Deferred = true
			r.res.End = max(firstDirty, min(base, r.mappedEnd))
			return r.res, nil
		}
		r.res.End = max(firstDirty, r.res.Start)
		return r.res, err
	}
	for _, g := range r.groups(run) {
		sub := run.Sub(g[0], g[1])
		news, err := r.rewriteGroup(sub)
		if perr := settle(prev); perr != nil {
			abortAll(news)
			return fail(prev.g.Info(0).BaseOffset, perr)
		}
		prev = nil
		if err != nil {
			return fail(sub.Info(0).BaseOffset, err)
		}
		if news != nil {
			prev = r.startCommit(sub, news)
		}
	}
	if err := settle(prev); err != nil {
		return fail(prev.g.Info(0).BaseOffset, err)
	}
	return r.res, nil
}

// entries reads segment i, charging the throttle: v2 batches go to batch,
// legacy messages to legacy (skipped if nil).
func (r *round) entries(run *sealed.Run, i int, batch func(record.Batch) error, legacy func([]byte) error) error {
	for e, err := range run.Segs[i].Entries(&r.readBuf) {
		if err != nil {
			return err
		}
		r.res.BytesRead += int64(len(e))
		if err := r.o.Throttle(int64(len(e))); err != nil {
			return err
		}
		switch {
		case e[record.MagicOffset] == record.CurrentMagic:
			err = batch(record.Batch(e))
		case legacy != nil:
			err = legacy(e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// errStop ends a pass early.
var errStop = errors.New("stop")

// scanAndMap is the first pass, Kafka's buildOffsetMap with the
// transaction scan it needs: every batch's producer and marker (the whole
// run), and every keyed record of non-transactional data at or after
// firstDirty into the map, until the map is full; mappedEnd is where it
// stopped. Transactional data is mapped by mapTransactional once every
// marker is known, only if the run has some: a log without transactions is
// read once before the rewrite, not twice.
func (r *round) scanAndMap(run *sealed.Run, firstDirty, runEnd int64) error {
	r.m.Clear()
	r.mappedEnd = runEnd
	full, txnData := false, false
	// put maps a record, or notes that the map is full: the scan goes on
	// for the markers.
	put := func(key []byte, offset int64) error {
		err := r.queuePut(key, offset)
		if errors.Is(err, errStop) {
			full, err = true, nil
		}
		return err
	}
	for i := range run.Len() {
		dirty := run.Info(i).NextOffset > firstDirty
		err := r.entries(run, i, func(b record.Batch) error {
			if err := r.txn.observe(b, &r.it); err != nil {
				return err
			}
			if !dirty || full || b.NextOffset() <= firstDirty || b.IsControl() {
				return nil
			}
			if b.IsTransactional() {
				txnData = true
				return nil
			}
			if err := r.it.Reset(b); err != nil {
				return err
			}
			for !full && r.it.Next() {
				if rec := r.it.Record(); rec.Offset >= firstDirty && rec.Key != nil {
					if err := put(rec.Key, rec.Offset); err != nil {
						return err
					}
				}
			}
			return r.it.Err()
		}, func(e []byte) error {
			if !dirty || full {
				return nil
			}
			return r.mapLegacy(e, firstDirty, put)
		})
		if err != nil {
			return err
		}
	}
	if err := r.flushPuts(); err != nil && !errors.Is(err, errStop) {
		return err
	}
	if txnData {
		if err := r.mapTransactional(run, firstDirty); err != nil {
			return err
		}
	}
	r.res.MapFill = r.m.Fill()
	return nil
}

// mapTransactional maps the keyed records of committed transactional data
// in [firstDirty, mappedEnd). They come after records of later offsets;
// the map keeps the largest offset of a key whatever the order. If the map
// fills up, mappedEnd comes down to the record it refused: what the map
// holds beyond it names records that exist and, being past mappedEnd, are
// kept, so nothing is dropped for them.
func (r *round) mapTransactional(run *sealed.Run, firstDirty int64) error {
	for i := range run.Len() {
		if info := run.Info(i); info.NextOffset <= firstDirty || info.BaseOffset >= r.mappedEnd {
			continue
		}
		err := r.entries(run, i, func(b record.Batch) error {
			if !b.IsTransactional() || b.IsControl() || b.NextOffset() <= firstDirty || b.BaseOffset() >= r.mappedEnd ||
				r.txn.outcomeOf(b.ProducerID(), b.BaseOffset()) != committed {
				return nil
			}
			if err := r.it.Reset(b); err != nil {
				return err
			}
			for r.it.Next() {
				if rec := r.it.Record(); rec.Offset >= firstDirty && rec.Offset < r.mappedEnd && rec.Key != nil {
					if err := r.queuePut(rec.Key, rec.Offset); err != nil {
						return err
					}
				}
			}
			return r.it.Err()
		}, nil)
		if errors.Is(err, errStop) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	if err := r.flushPuts(); err != nil && !errors.Is(err, errStop) {
		return err
	}
	return nil
}

// putBatch is how many map puts wait to be made together.
const putBatch = 256

// queuePut hashes key for a put of offset, made with the ones queued
// before it once putBatch are waiting: their cache misses then overlap.
// Keys are hashed at once, so they need not outlive the call.
func (r *round) queuePut(key []byte, offset int64) error {
	r.hs = append(r.hs, r.m.hash(key))
	r.offs = append(r.offs, offset)
	if len(r.hs) < putBatch {
		return nil
	}
	return r.flushPuts()
}

// flushPuts makes the queued puts in order. When the map refuses one, the
// mapped range ends at its offset and the rest are dropped (errStop).
func (r *round) flushPuts() error {
	defer func() { r.hs, r.offs = r.hs[:0], r.offs[:0] }()
	r.m.prefetch(r.hs)
	for i := range r.hs {
		if !r.m.put(r.hs[i], r.offs[i]) {
			r.mappedEnd = min(r.mappedEnd, r.offs[i])
			r.res.MapFull = true
			return errStop
		}
	}
	return nil
}

// groups splits the segments overlapping [start, mappedEnd) into runs
// [i, j) that fit one new segment: sizes summing to at most segment.bytes
// and an offset span within the 32-bit relative range. A group never ends
// with an empty segment, so the new segments end where the old ones did.
func (r *round) groups(run *sealed.Run) [][2]int {
	infos := make([]sealed.Info, run.Len())
	for i := range infos {
		infos[i] = run.Info(i)
	}
	var out [][2]int
	i := 0
	for i < len(infos) && infos[i].BaseOffset < r.mappedEnd {
		first := infos[i]
		j, size := i+1, first.Size
		for j < len(infos) {
			next := infos[j]
			if next.BaseOffset >= r.mappedEnd || size+next.Size > r.o.SegmentBytes ||
				next.NextOffset-first.BaseOffset > math.MaxInt32 {
				break
			}
			size += next.Size
			j++
		}
		end := j
		for end > i && infos[end-1].Size == 0 {
			end--
		}
		if end > i {
			out = append(out, [2]int{i, end})
		}
		i = j
	}
	return out
}

// rewriteGroup writes the segments of g into new ones, the last not yet
// finished. It returns nil if nothing would change.
func (r *round) rewriteGroup(g *sealed.Run) (news []*segment.Cleaned, err error) {
	groupEnd := g.Info(g.Len() - 1).NextOffset
	w, err := r.l.NewCleaned(g.Info(0).BaseOffset)
	if err != nil {
		return nil, err
	}
	news = []*segment.Cleaned{w}
	defer func() {
		if err != nil {
			abortAll(news)
			news = nil
		}
	}()
	changed := g.Len() > 1
	// room makes sure the segment being written can index one more entry.
	room := func(first int64) error {
		if !w.IndexFull() {
			return nil
		}
		if err := w.Finish(); err != nil {
			return err
		}
		var err error
		if w, err = r.l.NewCleaned(first); err != nil {
			return err
		}
		news = append(news, w)
		return nil
	}
	write := func(out record.Batch) error {
		if err := room(out.BaseOffset()); err != nil {
			return err
		}
		if err := r.o.Throttle(int64(len(out))); err != nil {
			return err
		}
		return w.Append(out)
	}
	for i := range g.Len() {
		retainDeletes := g.Info(i).Modified.UnixMilli() > r.legacyHorizon
		err := r.entries(g, i, func(b record.Batch) error {
			out, verbatim, err := r.filter(b, b.NextOffset() == groupEnd)
			if err != nil {
				return err
			}
			if !verbatim {
				changed = true
			}
			if out == nil {
				return nil
			}
			return write(out)
		}, func(e []byte) error {
			out, verbatim, err := r.filterLegacy(e, retainDeletes)
			if err != nil {
				return err
			}
			if !verbatim {
				changed = true
			}
			if out.entry != nil {
				if err := room(out.first); err != nil {
					return err
				}
				if err := r.o.Throttle(int64(len(out.entry))); err != nil {
					return err
				}
				if err := w.AppendLegacy(out.entry, out.first, out.last, out.ts); err != nil {
					return err
				}
			}
			if last := int64(binary.BigEndian.Uint64(e)); last+1 == groupEnd && (out.entry == nil || out.last != last) {
				// A legacy entry has no empty form: an empty v2 batch
				// at its offset keeps the group's end (§9.3).
				b, err := r.emptyHeader(last)
				if err != nil {
					return err
				}
				return write(b)
			}
			return nil
		})
		if err != nil {
			return news, err
		}
	}
	if !changed {
		abortAll(news)
		return nil, nil
	}
	return news, nil
}

// commit is a group's commit running: the last new segment finished, then
// the swap.
type commit struct {
	g       *sealed.Run
	news    []*segment.Cleaned
	written int64
	done    chan error
}

// startCommit finishes the last of news and swaps news in for g, in its
// own goroutine, which touches nothing of the round but what it is given
// and mappedEnd (fixed by then).
func (r *round) startCommit(g *sealed.Run, news []*segment.Cleaned) *commit {
	c := &commit{g: g, news: news, done: make(chan error, 1)}
	mappedEnd := r.mappedEnd
	go func() {
		c.done <- func() error {
			if err := news[len(news)-1].Finish(); err != nil {
				abortAll(news)
				return err
			}
			if r.l.TruncatedBelow(g, mappedEnd) {
				// The map may name as a key's latest a record the
				// truncation removed: the record now latest would go.
				abortAll(news)
				return fmt.Errorf("compaction: a truncation removed mapped records: %w", seglog.ErrSegmentsChanged)
			}
			for _, n := range news {
				c.written += n.Size()
			}
			g.DependsThrough(mappedEnd)
			return r.l.ReplaceSegments(g, news) // consumes news
		}()
	}()
	return c
}

func abortAll(news []*segment.Cleaned) {
	for _, n := range news {
		n.Abort()
	}
}

// filter applies §9.3 and §9.4 to one batch. It returns the batch to
// write (nil: dropped) and whether it is b unchanged. lastOfGroup keeps
// an empty header for the group's last batch, so the new segment ends
// where the old one did.
func (r *round) filter(b record.Batch, lastOfGroup bool) (record.Batch, bool, error) {
	pid := b.ProducerID()
	hasHorizon := b.HasDeleteHorizon()
	horizonPassed := hasHorizon && r.now >= b.BaseTimestamp()
	keepHeader := lastOfGroup || (pid >= 0 && r.txn.lastBatch[pid] == b.BaseOffset())

	if b.IsControl() {
		if !b.IsTransactional() {
			return b, true, nil
		}
		_, isMarker, err := markerOf(b, &r.it)
		if err != nil {
			return nil, false, err
		}
		if !isMarker {
			return b, true, nil
		}
		dataGone := !r.txn.retained[pid]
		delete(r.txn.retained, pid)
		switch {
		case !dataGone:
			return b, true, nil
		case !hasHorizon:
			r.res.HorizonsSet++
			return r.rebuild(b, r.horizon, func(record.Record) bool { return true })
		case !horizonPassed:
			return b, true, nil
		}
		r.res.MarkersRemoved += int64(b.NumRecords())
		r.res.RecordsRemoved += int64(b.NumRecords())
		if keepHeader {
			return r.rebuild(b, b.BaseTimestamp(), func(record.Record) bool { return false })
		}
		r.res.BatchesRemoved++
		return nil, false, nil
	}

	oc := committed
	if b.IsTransactional() {
		oc = r.txn.outcomeOf(pid, b.BaseOffset())
	}
	needHorizon := false
	// The batch's records first, then the map lookups of those that need
	// one all at once (their cache misses overlap), then the decisions.
	if err := r.readAll(b); err != nil {
		return nil, false, err
	}
	r.hs = r.hs[:0]
	if oc == committed {
		for i := range r.recs {
			if rec := &r.recs[i]; rec.Offset < r.mappedEnd && rec.Key != nil {
				r.hs = append(r.hs, r.m.hash(rec.Key))
			}
		}
		r.m.prefetch(r.hs)
	}
	looked := 0
	keep := func(rec *record.Record) bool {
		switch {
		case oc == aborted:
			r.res.AbortedRemoved++
			return false
		case oc == undecided || rec.Offset >= r.mappedEnd:
			return true
		case rec.Key == nil:
			r.res.KeylessRemoved++
			return false
		}
		latest, ok := r.m.get(r.hs[looked])
		looked++
		if ok && latest > rec.Offset {
			return false
		}
		if rec.Value == nil {
			if horizonPassed {
				r.res.TombstonesRemoved++
				return false
			}
			needHorizon = needHorizon || !hasHorizon
		}
		return true
	}
	r.kept = r.kept[:0]
	n := len(r.recs)
	for i := range r.recs {
		if keep(&r.recs[i]) {
			r.kept = append(r.kept, r.recs[i])
		}
	}
	removed := int64(n - len(r.kept))
	r.res.RecordsRemoved += removed
	if len(r.kept) > 0 && b.IsTransactional() {
		r.txn.retained[pid] = true
	}
	// An empty header that still names a codec (seglog's compaction
	// wrote them so until 2026-12-06) is rewritten, or dropped if no
	// longer needed: clients cannot read past it.
	if removed == 0 && !needHorizon && (n > 0 || b.Codec() == record.None) {
		return b, true, nil
	}
	if len(r.kept) == 0 && !keepHeader {
		r.res.BatchesRemoved++
		return nil, false, nil
	}
	horizon := int64(-1)
	switch {
	case hasHorizon:
		horizon = b.BaseTimestamp()
	case needHorizon:
		horizon = r.horizon
		r.res.HorizonsSet++
	}
	return r.build(b, horizon, r.kept)
}

// rebuild re-encodes b with the records keep accepts.
func (r *round) rebuild(b record.Batch, horizon int64, keep func(record.Record) bool) (record.Batch, bool, error) {
	if err := r.readAll(b); err != nil {
		return nil, false, err
	}
	r.kept = r.kept[:0]
	for _, rec := range r.recs {
		if keep(rec) {
			r.kept = append(r.kept, rec)
		}
	}
	return r.build(b, horizon, r.kept)
}

// readAll decodes b's records into r.recs. They alias b (or its
// decompressed records) and r.hdrs, so they are valid until the next
// batch is read. Headers are copied into one slice for the whole round,
// as the iterator reuses its own: no allocation per record.
func (r *round) readAll(b record.Batch) error {
	if err := r.it.Reset(b); err != nil {
		return err
	}
	r.recs, r.hdrs = r.recs[:0], r.hdrs[:0]
	for r.it.Next() {
		rec := r.it.Record()
		if len(rec.Headers) > 0 {
			// An earlier record's headers stay valid if this append moves
			// r.hdrs: they keep the array they were in.
			i := len(r.hdrs)
			r.hdrs = append(r.hdrs, rec.Headers...)
			rec.Headers = r.hdrs[i:len(r.hdrs):len(r.hdrs)]
		}
		r.recs = append(r.recs, rec)
	}
	return r.it.Err()
}

// build encodes recs as b's replacement: same codec, base offset, last
// offset delta, producer fields, leader epoch and flags; the delete
// horizon if horizon >= 0. recs alias r.it's buffers, read before the
// next Reset.
func (r *round) build(b record.Batch, horizon int64, recs []record.Record) (record.Batch, bool, error) {
	bld := r.bld
	bld.SetDeleteHorizon(horizon)
	codec := b.Codec()
	if len(recs) == 0 {
		// An empty header is uncompressed, as Kafka writes it
		// (DefaultRecordBatch.writeEmptyHeader): a client asked to
		// decompress its empty payload fails and stops there for good
		// (librdkafka "Invalid compressed data", franz-go's s2 "corrupt
		// input"), found by a walk with franz-go's default snappy.
		codec = record.None
	}
	bld.SetCodec(codec) // resets, keeping the horizon as base timestamp
	bld.SetBaseOffset(b.BaseOffset())
	bld.SetPartitionLeaderEpoch(b.PartitionLeaderEpoch())
	bld.SetProducer(b.ProducerID(), b.ProducerEpoch(), b.BaseSequence())
	bld.SetTransactional(b.IsTransactional())
	bld.SetControl(b.IsControl())
	if b.TimestampType() == record.LogAppendTime {
		bld.SetLogAppendTime(b.MaxTimestamp())
	} else {
		bld.SetLogAppendTime(-1)
	}
	bld.SetLastOffsetDelta(b.LastOffsetDelta())
	for i := range recs {
		if err := bld.AddAt(recs[i].Offset, recs[i].Timestamp, &recs[i]); err != nil {
			return nil, false, fmt.Errorf("compaction: rebuilding batch at %d: %w", b.BaseOffset(), err)
		}
	}
	out, err := bld.Build()
	if err != nil {
		return nil, false, fmt.Errorf("compaction: rebuilding batch at %d: %w", b.BaseOffset(), err)
	}
	if len(recs) == 0 {
		// An emptied batch keeps its max timestamp (§1.5).
		out.SetMaxTimestamp(b.MaxTimestamp(), b.TimestampType())
	}
	return out, false, nil
}
