package segment

import (
	"sort"

	"github.com/seglog/seglog/index"
)

// extraTimeEntries bounds how many time-index entries a recovery keeps
// that its rebuild does not make: each costs a scan of at most an index
// interval of batch headers to check.
const extraTimeEntries = 64

// keepWrittenTimeEntries returns the time index recovery should leave:
// want (the rebuilt entries), or, when the file holds want's entries and
// some more that a writer made and that are right, the file's entries.
//
// Those are the final entries a close appends to an active segment (as
// Kafka's does) which a later open made active again: the time index of a
// segment that lived across a clean restart holds them between its
// indexed entries, and a rebuild, knowing nothing of closes, would drop
// them, so recovery would rewrite (and, for a sealed segment, resync) an
// index that is right. An entry (T, o) is right when the batch whose last
// offset is o has the maximum timestamp T and raised the running maximum
// (MaybeAppend's rule), which a header scan from the nearest indexed batch
// before o checks. Anything else (an entry that is not, entries out of
// order, a rebuilt entry missing, too many extras) returns want, and the
// index is rewritten as before.
func (s *Segment) keepWrittenTimeEntries(p *RecoveryPlan, want *index.TimeIndex) (*index.TimeIndex, error) {
	n := want.Entries()
	stored, more, err := s.timeIdx.Stored(n + extraTimeEntries)
	if err != nil {
		return nil, err
	}
	if more || len(stored) <= n {
		return want, nil // too many, or no extra entry to keep
	}
	i := 0
	prev := index.TimestampOffset{Timestamp: index.NoTimestamp, Offset: s.base}
	for _, e := range stored {
		if e.Timestamp <= prev.Timestamp || e.Offset < prev.Offset {
			return want, nil
		}
		prev = e
		if i < n {
			w, err := want.EntryErr(i)
			if err != nil {
				return nil, err
			}
			if e == w {
				i++
				continue
			}
		}
		ok, err := s.raisedMaxAt(p, e)
		if err != nil || !ok {
			return want, err
		}
	}
	if i < n {
		return want, nil
	}
	kept := s.timeIdx.Scratch()
	for _, e := range stored {
		if err := kept.MaybeAppend(e.Timestamp, e.Offset, true); err != nil {
			return want, nil // no room: the rebuilt entries it is
		}
	}
	return kept, nil
}

// raisedMaxAt reports whether the batch whose last offset is e.Offset has
// the maximum timestamp e.Timestamp and raised the running maximum, by a
// header scan of the .log from the last indexed batch before it.
func (s *Segment) raisedMaxAt(p *RecoveryPlan, e index.TimestampOffset) (bool, error) {
	from, running := int64(0), int64(-1)
	if k := sort.Search(len(p.points), func(i int) bool { return p.points[i].last >= e.Offset }) - 1; k >= 0 {
		from, running = p.points[k].pos, p.points[k].maxTS
	}
	sc := s.newHeaderScanner(from, p.res.ValidBytes)
	defer sc.release()
	for {
		h, ok, err := sc.next()
		if err != nil || !ok {
			return false, err
		}
		if h.last == e.Offset {
			return h.maxTS == e.Timestamp && h.maxTS > running, nil
		}
		if h.last > e.Offset {
			return false, nil
		}
		running = max(running, h.maxTS)
	}
}
