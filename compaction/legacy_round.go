package compaction

import (
	"errors"

	"github.com/seglog/seglog/record"
)

// legacyBufs are a round's reused buffers for legacy wrappers.
type legacyBufs struct {
	data, scratch, out []byte
	inner, kept        []legacyMsg
}

// legacyOut is what a legacy entry becomes: entry (nil: nothing) spanning
// offsets [first, last], with its timestamp for the time index.
type legacyOut struct {
	entry       []byte
	first, last int64
	ts          int64
}

// legacyMessages returns the messages of entry e: e itself, or a
// compressed wrapper's inner messages. ok is false for a message that
// cannot be decoded (left as it is, mapped not at all).
func (r *round) legacyMessages(e []byte) (w legacyMsg, msgs []legacyMsg, ok bool, err error) {
	w, err = parseLegacy(e)
	if err != nil {
		// Entries checked the framing and CRC: the producer wrote these
		// bytes so, and they are kept as they are.
		return w, nil, false, nil
	}
	if w.codec() == record.None {
		r.lg.inner = append(r.lg.inner[:0], w)
		return w, r.lg.inner, true, nil
	}
	r.lg.inner, r.lg.data, err = legacyInner(w, r.lg.data, r.lg.inner[:0])
	if errors.Is(err, errLegacyOpaque) {
		return w, nil, false, nil
	}
	return w, r.lg.inner, err == nil, err
}

// mapLegacy puts the keyed messages of legacy entry e at or after
// firstDirty into the map with put, as scanAndMap does for records.
func (r *round) mapLegacy(e []byte, firstDirty int64, put func([]byte, int64) error) error {
	_, msgs, ok, err := r.legacyMessages(e)
	if !ok {
		return err
	}
	for _, m := range msgs {
		if m.offset < firstDirty || m.key == nil {
			continue
		}
		if err := put(m.key, m.offset); err != nil {
			return err
		}
	}
	return nil
}

// keepLegacy is the cleaner's rule for a legacy message: latest for its
// key in the mapped range (or beyond it), and a tombstone only while its
// segment is younger than the legacy horizon (retainDeletes).
func (r *round) keepLegacy(m *legacyMsg, retainDeletes bool) bool {
	switch {
	case m.offset >= r.mappedEnd:
		return true
	case m.key == nil:
		r.res.KeylessRemoved++
		return false
	}
	if latest, ok := r.m.Get(m.key); ok && latest > m.offset {
		return false
	}
	if m.value == nil && !retainDeletes {
		r.res.TombstonesRemoved++
		return false
	}
	return true
}

// filterLegacy applies the cleaner's rule to legacy entry e, keeping its
// magic (Kafka's cleaner before 4.0): an entry whose messages all stay is
// copied as it is; a wrapper that keeps some is recompressed in its codec
// with the kept messages, its offset becoming the last kept one's (so the
// offsets of the kept messages never change); one that keeps none goes.
func (r *round) filterLegacy(e []byte, retainDeletes bool) (legacyOut, bool, error) {
	w, msgs, ok, err := r.legacyMessages(e)
	if err != nil {
		return legacyOut{}, false, err
	}
	if !ok {
		return legacyOut{entry: e, first: w.offset, last: w.offset, ts: w.ts}, true, nil
	}
	r.lg.kept = r.lg.kept[:0]
	for i := range msgs {
		if r.keepLegacy(&msgs[i], retainDeletes) {
			r.lg.kept = append(r.lg.kept, msgs[i])
		}
	}
	kept := r.lg.kept
	removed := int64(len(msgs) - len(kept))
	r.res.RecordsRemoved += removed
	switch {
	case removed == 0:
		return legacyOut{entry: e, first: msgs[0].offset, last: w.offset, ts: w.ts}, true, nil
	case len(kept) == 0:
		r.res.BatchesRemoved++
		return legacyOut{}, false, nil
	}
	out, scratch, err := buildLegacyWrapper(r.lg.out[:0], w, kept, r.lg.scratch)
	r.lg.out, r.lg.scratch = out, scratch
	if err != nil {
		return legacyOut{}, false, err
	}
	m, err := parseLegacy(out)
	if err != nil {
		return legacyOut{}, false, err
	}
	return legacyOut{entry: out, first: kept[0].offset, last: kept[len(kept)-1].offset, ts: m.ts}, false, nil
}

// emptyHeader is an empty v2 batch at offset: what stands for a legacy
// entry that ended a group and lost its last message, so that the new
// segment ends where the old one did.
func (r *round) emptyHeader(offset int64) (record.Batch, error) {
	bld := r.bld
	bld.SetDeleteHorizon(-1)
	bld.SetCodec(record.None)
	bld.SetBaseOffset(offset)
	bld.SetPartitionLeaderEpoch(-1)
	bld.SetProducer(-1, -1, -1)
	bld.SetTransactional(false)
	bld.SetControl(false)
	bld.SetLogAppendTime(-1)
	bld.SetLastOffsetDelta(0)
	return bld.Build()
}
