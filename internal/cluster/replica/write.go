package replica

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// StoreLog stores one entry.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries, one batch each, which must be contiguous,
// follow the last stored index (an empty log starts at any index, as after
// a snapshot install) and never lower the term. A command's batch is
// copied, stamped with the log end as its base offset and the term as its
// partitionLeaderEpoch, and appended (seglog.Log.AppendEpochBatch); the
// caller's bytes are not changed. Entries are on disk when it returns.
//
// A call holding an entry it cannot store is refused, before anything is
// written, with an error matching ErrBadEntry. The one exception is a
// command batch whose CRC and framing are right but whose records are not
// (which the leader's checks refuse before it proposes): the entries before
// it stay stored, and the error is seglog's *BatchError.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(logs) == 0 {
		return nil
	}
	for i, l := range logs {
		if err := checkEntry(l, s.maxBatch); err != nil {
			return err
		}
		if i > 0 && l.Index != logs[i-1].Index+1 {
			return fmt.Errorf("%w: index %d follows %d in one call", ErrBadEntry, l.Index, logs[i-1].Index)
		}
		if i > 0 && l.Term < logs[i-1].Term {
			return fmt.Errorf("%w: entry %d has term %d after term %d", ErrBadEntry, l.Index, l.Term, logs[i-1].Term)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.idx.RLock()
	empty, last, lastTerm := s.empty(), s.last, s.lastTerm
	s.idx.RUnlock()
	if !empty {
		if logs[0].Index != last+1 {
			return fmt.Errorf("%w: index %d does not follow the last index %d (the log is monotonic)", ErrBadEntry, logs[0].Index, last)
		}
		if logs[0].Term < lastTerm {
			return fmt.Errorf("%w: entry %d has term %d after term %d", ErrBadEntry, logs[0].Index, logs[0].Term, lastTerm)
		}
	} else if err := s.anchorStart(logs[0].Index); err != nil {
		return err
	}
	anchored := false
	defer func() {
		if anchored {
			// A missing segment anchor costs a longer walk, never a
			// wrong answer, so its save may fail after the entries
			// are stored; the next one retries it.
			s.idx.RLock()
			defer s.idx.RUnlock()
			_ = s.saveAnchors()
		}
	}()
	for _, l := range logs {
		var b []byte
		if l.Type == raft.LogCommand {
			// A copy: raft may hold the entry's bytes elsewhere (its
			// log cache, the FSM), and stamping writes into the batch.
			s.buf = append(s.buf[:0], l.Data...)
			b = s.buf
		} else {
			cb, val, err := buildControl(s.bld, l, s.val)
			s.val = val
			if err != nil {
				return fmt.Errorf("%w: entry %d: %w", ErrBadEntry, l.Index, err)
			}
			b = cb
		}
		if err := s.assignEpoch(int32(l.Term), s.log.EndOffset()); err != nil {
			return err
		}
		segs := s.log.NumSegments()
		info, err := s.log.AppendEpochBatch(int32(l.Term), b)
		if err != nil {
			return fmt.Errorf("replica: storing entry %d: %w", l.Index, err)
		}
		s.idx.Lock()
		if s.noteAppended(l.Index, info.FirstOffset, s.log.NumSegments() != segs) {
			anchored = true
		}
		s.lastTerm = l.Term
		s.idx.Unlock()
	}
	return nil
}

// anchorStart makes an empty raft log start at index, at the partition's
// end: the anchor is on disk before the batch it names, so a crash between
// the two leaves an empty log starting there. Called with mu.
func (s *Store) anchorStart(index uint64) error {
	s.idx.Lock()
	defer s.idx.Unlock()
	s.dropTables()
	s.anchors = []anchor{{index, s.log.EndOffset()}}
	s.first, s.last, s.lastTerm = index, index-1, 0
	if err := s.saveAnchors(); err != nil {
		s.anchors = nil
		return err
	}
	return nil
}
