package replica

import "fmt"

// KeepFrom makes entry index the raft log's first entry, unless the log
// already starts at or after it, and returns the offset of the raft log's
// first entry afterwards. index must be an entry applied on this node (as
// raft.MemoryStorage's Compact, which it is): the entries below leave
// raft's view, a follower that still needs them gets a snapshot, and the
// partition keeps their batches.
//
// It is what a DeleteRecords entry does before the partition's log start
// moves (docs/cluster-partitions.md, "DeleteRecords"): the raft log
// follows the log start (the first anchor at or after it becomes its
// first entry), and a log start inside an anchor's span, past every
// anchor, would leave no anchor to number the entries after it, which the
// Store would then drop from raft's view, unapplied ones included. With
// the DeleteRecords entry itself first, anchored at its own batch (at or
// after any offset it deletes to), the log start never passes the first
// anchor. Nothing is numbered differently: the anchor says what the
// entries' batches already are.
//
// The commit index is made durable first: after a crash, a commit index
// on disk below the new first entry would be refused by etcd raft when
// the group starts again ("state.commit is out of range").
func (s *Store) KeepFrom(index uint64) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if err := s.followLocked(); err != nil {
		return 0, err
	}
	s.idx.RLock()
	first, last, fresh := s.first, s.last, len(s.anchors) == 0
	var off0 int64
	if !fresh {
		off0 = s.anchors[0].offset
	}
	s.idx.RUnlock()
	switch {
	case fresh || index > last:
		return 0, fmt.Errorf("%w: entry %d is not in the raft log [%d, %d]", errNoEntry, index, first, last)
	case index <= first:
		return off0, nil
	}
	term, err := s.term(index - 1)
	if err != nil {
		return 0, s.readErr(err)
	}
	if s.state.commit < index {
		return 0, fmt.Errorf("%w: entry %d is past the commit index %d", ErrBadEntry, index, s.state.commit)
	}
	if err := s.saveCommit(); err != nil {
		return 0, err
	}
	if err := s.movePrefix(index, term); err != nil {
		return 0, s.readErr(err)
	}
	s.idx.RLock()
	defer s.idx.RUnlock()
	return s.anchors[0].offset, nil
}

// StartMoved drops from the leader-epoch cache what lies below the
// partition's log start, once its owner moved the start (a DeleteRecords
// entry's apply, after the store's DeleteRecords), as Kafka truncates its
// cache from the start when the log start advances
// (LeaderEpochFileCache.truncateFromStart): the first epoch kept starts
// at the start, on every replica alike, whether it applied the entry or
// took a snapshot past it (raiseStart, install.go). It is derived data: a
// crash before it leaves the older first line, and the entry applied
// again after the restart trims it then.
func (s *Store) StartMoved() error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	return s.trimEpochs()
}

// trimEpochs truncates the epoch cache from the log start. Called with
// mu, or from Open before the cache is read (loadEpochs trims it then).
func (s *Store) trimEpochs() error {
	if s.epochs == nil {
		return nil
	}
	return s.epochs.TruncateFromStart(s.log.StartOffset())
}
