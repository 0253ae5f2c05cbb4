package replica

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// StoreLog stores one entry.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries, one batch each, which must be contiguous,
// follow the last stored index (an empty log starts at any index, as after
// a snapshot install) and never lower the term. A command's batch is
// copied, stamped with the log end as its base offset and the term as its
// partitionLeaderEpoch, and appended (seglog.Log.AppendEpochBatches); the
// caller's bytes are not changed. Entries are on disk when it returns.
//
// The whole call is one seglog.Log.AppendEpochBatches: one write and one
// fsync (and one more per segment rolled), not one per entry. A call
// holding an entry it cannot store is refused, before anything is written,
// with an error matching ErrBadEntry (and, for a command whose records are
// malformed, seglog.ErrCorruptBatch).
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
	// Every batch is encoded into one buffer first, so that the whole call
	// is one AppendEpochBatches: one write and one fsync for all entries.
	s.buf = s.buf[:0]
	ends := make([]int, len(logs))
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			// A copy: raft may hold the entry's bytes elsewhere (its
			// log cache, the FSM), and stamping writes into the batch.
			s.buf = append(s.buf, l.Data...)
		} else {
			cb, val, err := buildControl(s.bld, l, s.val)
			s.val = val
			if err != nil {
				return fmt.Errorf("%w: entry %d: %w", ErrBadEntry, l.Index, err)
			}
			s.buf = append(s.buf, cb...)
		}
		ends[i] = len(s.buf)
	}
	batches := make([][]byte, len(logs))
	epochs := make([]int32, len(logs))
	end := s.log.EndOffset()
	off, from := end, 0
	for i, l := range logs {
		batches[i] = s.buf[from:ends[i]:ends[i]]
		from = ends[i]
		epochs[i] = int32(l.Term)
		// Each term's first offset is in the epoch checkpoint before its
		// first batch is on disk.
		if err := s.assignEpoch(epochs[i], off); err != nil {
			return err
		}
		off += int64(record.Batch(batches[i]).LastOffsetDelta()) + 1
	}
	segs := s.log.NumSegments()
	infos, err := s.log.AppendEpochBatches(epochs, batches)
	stored := end
	if len(infos) > 0 {
		s.noteStored(logs[:len(infos)], infos, s.log.NumSegments() != segs)
		stored = infos[len(infos)-1].LastOffset + 1
	}
	if err != nil {
		// The epochs assigned for what was not stored go again.
		_ = s.truncateEpochs(stored)
	}
	if errors.Is(err, seglog.ErrCorruptBatch) {
		return fmt.Errorf("%w: %w", ErrBadEntry, err)
	}
	if err != nil {
		return fmt.Errorf("replica: storing entries %d to %d: %w", logs[0].Index, logs[len(logs)-1].Index, err)
	}
	return nil
}

// noteStored records the entries a call stored, and anchors the first
// batch of each segment it started (rolled says whether it rolled at all:
// the segments are listed only then). A missing segment anchor costs a
// longer walk, never a wrong answer, so the checkpoint's save may fail
// after the entries are stored; the next one retries it. Called with mu.
func (s *Store) noteStored(logs []*raft.Log, infos []seglog.AppendInfo, rolled bool) {
	var bases map[int64]bool
	if rolled {
		bases = make(map[int64]bool)
		for _, seg := range s.log.Segments() {
			if seg.BaseOffset >= infos[0].FirstOffset {
				bases[seg.BaseOffset] = true
			}
		}
	}
	anchored := false
	s.idx.Lock()
	for i, info := range infos {
		if s.noteAppended(logs[i].Index, info.FirstOffset, bases[info.FirstOffset]) {
			anchored = true
		}
		s.lastTerm = logs[i].Term
	}
	s.idx.Unlock()
	if anchored {
		_ = s.saveAnchors()
	}
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
