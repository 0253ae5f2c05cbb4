package raftlog

import (
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/record"
)

// StoreLog stores one entry.
func (s *Store) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries, which must be contiguous and follow the last
// stored index (an empty log starts at any index, as after a snapshot
// install). Each run of equal terms is one batch stamped with that term
// (a leader's call is always one run, so one batch, unless it exceeds
// Options.MaxBatchBytes); entries are on disk when it returns. A staged
// commit index rides on the last record. A call holding an entry no batch
// can hold is refused with ErrBadEntry before anything is written.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(logs) == 0 {
		return nil
	}
	for i, l := range logs {
		if err := checkEntry(l); err != nil {
			return err
		}
		if entrySize(l) > s.batchRoom() {
			return fmt.Errorf("%w: entry %d holds %d bytes of data and extensions; a batch holds at most %d (Options.MaxBatchBytes %d, less framing)",
				ErrBadEntry, l.Index, len(l.Data)+len(l.Extensions), s.batchRoom()-entryOverhead, s.opts.MaxBatchBytes)
		}
		if i > 0 && l.Index != logs[i-1].Index+1 {
			return fmt.Errorf("%w: index %d follows %d in one call", ErrBadEntry, l.Index, logs[i-1].Index)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	first := toOffset(logs[0].Index)
	if s.empty() {
		if first != s.log.EndOffset() {
			s.cache.invalidate()
			if err := s.log.RestartAt(first); err != nil {
				return err
			}
		}
		if err := s.epochs.Clear(); err != nil {
			return err
		}
	} else if end := s.log.EndOffset(); first != end {
		return fmt.Errorf("%w: index %d does not follow the last index %d (the log is monotonic)", ErrBadEntry, logs[0].Index, toIndex(end-1))
	}
	return s.appendLocked(logs, s.staged.Load())
}

// appendLocked writes logs as batches, one per run of equal terms and
// within MaxBatchBytes. Called with mu.
func (s *Store) appendLocked(logs []*raft.Log, commit uint64) error {
	for len(logs) > 0 {
		n, size := 1, entrySize(logs[0])
		for n < len(logs) && logs[n].Term == logs[0].Term {
			sz := entrySize(logs[n])
			if size+sz > s.batchRoom() {
				break
			}
			size += sz
			n++
		}
		c := uint64(0)
		if n == len(logs) {
			c = commit
		}
		if err := s.appendRun(logs[:n], c); err != nil {
			return err
		}
		logs = logs[n:]
	}
	return nil
}

// entryOverhead bounds the bytes encode adds to an entry's data and
// extensions: the record's framing (length, attributes, timestamp and
// offset deltas, key and value lengths, header count: 28 at most) and its
// headers (raft.type 12, raft.ext 14, raft.at 21, raft.commit 21).
const entryOverhead = 96

// entrySize bounds an entry's encoded size.
func entrySize(l *raft.Log) int { return len(l.Data) + len(l.Extensions) + entryOverhead }

// batchRoom is how many bytes of records one batch may hold: batches are
// cut so that their records' bounds sum to at most this, which keeps every
// batch within MaxBatchBytes.
func (s *Store) batchRoom() int { return s.opts.MaxBatchBytes - record.HeaderSize - 12 }

// appendRun writes entries of one term as one batch, assigning the term
// in the leader-epoch cache first.
func (s *Store) appendRun(logs []*raft.Log, commit uint64) error {
	term := int32(logs[0].Term)
	if err := s.assignEpoch(term, toOffset(logs[0].Index)); err != nil {
		return err
	}
	need := len(logs) * 4
	if cap(s.hdrs) < need {
		s.hdrs = make([]record.Header, need)
	}
	s.recs = s.recs[:0]
	now := time.Now().UnixMilli()
	for i, l := range logs {
		c := uint64(0)
		if i == len(logs)-1 {
			c = commit
		}
		s.recs = append(s.recs, encode(l, c, s.hdrs[i*4:i*4:i*4+4], now))
	}
	info, err := s.log.AppendEpoch(term, s.recs...)
	if err != nil {
		return err
	}
	if info.FirstOffset != toOffset(logs[0].Index) {
		// Only a writer other than this Store could cause it.
		return fmt.Errorf("raftlog: index %d was stored at offset %d", logs[0].Index, info.FirstOffset)
	}
	return nil
}

// StageCommitIndex stages the commit index to be stored with the next
// StoreLogs, inside its batch, so it is never on disk without the entries
// it came with.
func (s *Store) StageCommitIndex(idx uint64) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.staged.Store(idx)
	return nil
}

// GetCommitIndex returns the commit index the last batch carried when the
// Store was opened, at most LastIndex; 0 if it carried none.
func (s *Store) GetCommitIndex() (uint64, error) {
	last, err := s.LastIndex()
	if err != nil {
		return 0, err
	}
	return min(s.commitAtOpen, last), nil
}
