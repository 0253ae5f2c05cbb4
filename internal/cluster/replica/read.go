package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/seglog/seglog/segment"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Term returns the term of entry i: raft.ErrCompacted below
// FirstIndex-1, raft.ErrUnavailable past LastIndex; FirstIndex-1's is the
// snapshot's, kept in the first anchor.
func (s *Store) Term(i uint64) (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	if err := s.follow(); err != nil {
		return 0, err
	}
	return s.term(i)
}

// term is Term without following retention, for the writes (which have).
func (s *Store) term(i uint64) (uint64, error) {
	s.idx.RLock()
	first, last := s.bounds()
	var snapTerm uint64
	if len(s.anchors) > 0 {
		snapTerm = s.anchors[0].term
	}
	s.idx.RUnlock()
	switch {
	case i+1 < first:
		return 0, raft.ErrCompacted
	case i > last:
		return 0, raft.ErrUnavailable
	case i+1 == first:
		return snapTerm, nil
	}
	_, term, _, err := s.locate(i)
	if err != nil {
		return 0, s.readErr(err)
	}
	return term, nil
}

// readErr turns the error of a read overtaken by retention into
// raft.ErrCompacted (raft then sends a snapshot), and an index the log no
// longer holds into raft.ErrUnavailable.
func (s *Store) readErr(err error) error {
	if gone(err) {
		return fmt.Errorf("%w: %w", raft.ErrCompacted, err)
	}
	return err
}

// Entries returns the entries [lo, hi), limited to maxSize bytes (as raft
// counts them, proto.Size) but at least one: raft.ErrCompacted when lo is
// not past the snapshot, raft.ErrUnavailable when the log holds none of
// them or hi is past the last entry + 1. A producer entry's Data is its
// batch as stored: base offset and partitionLeaderEpoch stamped.
func (s *Store) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := s.follow(); err != nil {
		return nil, err
	}
	s.idx.RLock()
	first, last := s.bounds()
	s.idx.RUnlock()
	switch {
	case lo < first:
		return nil, raft.ErrCompacted
	case hi > last+1 || lo > hi:
		return nil, fmt.Errorf("%w: entries [%d, %d) of [%d, %d]", raft.ErrUnavailable, lo, hi, first, last)
	case lo == hi:
		return nil, nil
	}
	s.idx.RLock()
	ents, ok := s.recentEntries(lo, hi, maxSize)
	s.idx.RUnlock()
	if ok {
		return ents, nil
	}
	for range 8 {
		ents, gen, err := s.readEntries(lo, hi, maxSize)
		s.idx.RLock()
		moved := s.gen != gen
		s.idx.RUnlock()
		if !moved {
			if err != nil {
				return nil, s.readErr(err)
			}
			return ents, nil
		}
	}
	// Truncations keep overtaking the read: the last try holds them off.
	s.mu.Lock()
	defer s.mu.Unlock()
	ents, _, err := s.readEntries(lo, hi, maxSize)
	if err != nil {
		return nil, s.readErr(err)
	}
	return ents, nil
}

// readEntries reads [lo, hi) from lo's batch on, and the generation the
// read holds for. An empty entry has no batch: it is made from its term.
func (s *Store) readEntries(lo, hi, maxSize uint64) ([]*pb.Entry, uint64, error) {
	w, gen, err := s.locateEntry(lo)
	if err != nil {
		return nil, gen, err
	}
	var ents []*pb.Entry
	var size uint64
	full := false
	// take adds an entry, unless it is past maxSize (the first is always
	// taken); it reports whether to go on.
	take := func(ent *pb.Entry) bool {
		size += uint64(proto.Size(ent))
		if len(ents) > 0 && size > maxSize {
			full = true
			return false
		}
		ents = append(ents, ent)
		return lo+uint64(len(ents)) < hi
	}
	// empties takes the empty entries from the next one on; it reports
	// whether to go on, and the next entry's place.
	empties := func() (bool, where, error) {
		for lo+uint64(len(ents)) < hi {
			i := lo + uint64(len(ents))
			w, g, err := s.locateEntry(i)
			if err != nil || g != gen {
				return false, w, err
			}
			if !w.empty {
				return true, w, nil
			}
			if !take(&pb.Entry{Index: new(i), Term: new(w.term)}) {
				return false, w, nil
			}
		}
		return false, where{}, nil
	}
	var bad error
	if w.empty {
		var more bool
		if more, w, err = empties(); err != nil || !more {
			return entriesRead(ents, lo, hi, full, gen, err)
		}
	}
	err = s.scan(w.off, func(e *segment.Entry) bool {
		i := lo + uint64(len(ents))
		if e.BaseOffset() != w.off {
			bad = fmt.Errorf("%w: entry %d at offset %d, but a batch at %d", ErrNotAnEntry, i, w.off, e.BaseOffset())
			return false
		}
		if e.OverLimit() {
			bad = fmt.Errorf("%w: entry %d at offset %d is a batch over the limit", ErrNotAnEntry, i, e.BaseOffset())
			return false
		}
		ent, err := decodeEntry(e.Batch, i)
		if err != nil {
			bad = err
			return false
		}
		if !take(ent) {
			return false
		}
		w.off = e.LastOffset() + 1
		more, nw, err := empties()
		if err != nil {
			bad = err
		}
		w.off = nw.off
		return more
	})
	if err == nil {
		err = bad
	}
	return entriesRead(ents, lo, hi, full, gen, err)
}

// entriesRead ends readEntries: the entries, unless the log ended before
// hi with room left.
func entriesRead(ents []*pb.Entry, lo, hi uint64, full bool, gen uint64, err error) ([]*pb.Entry, uint64, error) {
	if err != nil {
		return nil, gen, err
	}
	if uint64(len(ents)) < hi-lo && !full {
		return nil, gen, fmt.Errorf("%w: the log ends after %d of entries [%d, %d)", raft.ErrUnavailable, len(ents), lo, hi)
	}
	return ents, gen, nil
}

// Offset returns the base offset of entry index's batch.
// raft.ErrUnavailable when the log does not hold it.
func (s *Store) Offset(index uint64) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	off, _, _, err := s.locate(index)
	if err != nil {
		return 0, s.readErr(err)
	}
	return off, nil
}

// HighWatermark returns the offset a partition serves consumers up to when
// commit is raft's commit index: the end offset of the last batch at or
// below it. Below the first entry it is the first entry's offset (all
// before it is committed, as a snapshot is); 0 for a fresh log.
func (s *Store) HighWatermark(commit uint64) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	for range 8 {
		s.idx.RLock()
		if len(s.anchors) == 0 {
			s.idx.RUnlock()
			return 0, nil
		}
		i := min(commit, s.last)
		switch {
		case i < s.first:
			off := s.anchors[0].offset
			s.idx.RUnlock()
			return off, nil
		case i == s.last:
			// Not the partition's end offset: an append has its batches
			// there before it notes them here.
			end := s.end
			s.idx.RUnlock()
			return end, nil
		}
		s.idx.RUnlock()
		end, _, gen, err := s.locate(i + 1)
		s.idx.RLock()
		moved := s.gen != gen
		s.idx.RUnlock()
		if !moved {
			if err != nil {
				return 0, s.readErr(err)
			}
			return end, nil
		}
	}
	// Truncations keep overtaking it: the last try holds them off.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.RLock()
	i, first, last, off0, end := min(commit, s.last), s.first, s.last, s.anchors[0].offset, s.end
	s.idx.RUnlock()
	switch {
	case i < first:
		return off0, nil
	case i == last:
		return end, nil
	}
	off, _, _, err := s.locate(i + 1)
	if err != nil {
		return 0, s.readErr(err)
	}
	return off, nil
}

// encodeSnapData is a snapshot's Data: the offset where its index ends.
func encodeSnapData(end int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(end)) }

// decodeSnapData reads a snapshot's Data: none is offset 0 (the bootstrap
// snapshot, which holds no data).
func decodeSnapData(data []byte) (int64, error) {
	if len(data) == 0 {
		return 0, nil
	}
	if len(data) != 8 || int64(binary.BigEndian.Uint64(data)) < 0 {
		return 0, errors.New("replica: snapshot data is not an end offset")
	}
	return int64(binary.BigEndian.Uint64(data)), nil
}
