package replica

import "fmt"

// DeleteRange deletes the entries [min, max], which raft only ever asks
// for as a prefix (compaction after a snapshot), a suffix (a follower
// dropping entries that conflict with its leader) or everything (after a
// snapshot install). A range strictly inside the log is refused with an
// error matching ErrMiddleRange; one outside it does nothing.
//
//   - A suffix is a Kafka truncation (seglog.Log.TruncateTo) at the base
//     offset of entry min's batch: a batch is one entry, so the cut never
//     falls inside one. The anchors at or past min go first, so a crash
//     between the two leaves the entries, which raft deletes again.
//   - A prefix moves the raft log's first index only, in the checkpoint:
//     the Kafka data stays, and retention, not raft, decides when records
//     go.
//   - Everything empties the raft log and keeps the Kafka data too, for
//     the same reason, and because after a snapshot install the partition
//     up to the snapshot is the snapshot (docs/cluster-design.md): the
//     next StoreLogs starts at whatever index it brings, anchored at the
//     partition's end then. So the snapshot installer (not built yet) must
//     leave the partition ending at the snapshot's end offset before raft
//     stores the entries after it: copying the leader's segments up to it,
//     truncating a tail past it (a follower's uncommitted entries), or
//     Log.RestartAt when nothing overlaps. Had this restarted the
//     partition itself (RestartAt at its end), it would have removed the
//     segments such an installer had just written, and still left the
//     offsets wrong for a follower that was behind.
func (s *Store) DeleteRange(min, max uint64) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	s.idx.RLock()
	empty, first, last := s.empty(), s.first, s.last
	s.idx.RUnlock()
	if empty || min > max || min > last || max < first {
		return nil
	}
	switch {
	case min <= first && max >= last:
		s.idx.Lock()
		defer s.idx.Unlock()
		s.dropTables()
		s.anchors = nil
		s.first, s.last, s.lastTerm = 0, 0, 0
		return s.saveAnchors()
	case min <= first:
		return s.deletePrefix(max + 1)
	case max >= last:
		return s.deleteSuffix(min)
	}
	return fmt.Errorf("%w: [%d, %d] is inside [%d, %d]", ErrMiddleRange, min, max, first, last)
}

// deletePrefix makes next the first index. Called with mu.
func (s *Store) deletePrefix(next uint64) error {
	off, _, err := s.locate(next)
	if err != nil {
		return err
	}
	s.idx.Lock()
	defer s.idx.Unlock()
	s.dropTables()
	k := s.anchorFor(next)
	kept := []anchor{{next, off}}
	s.anchors = append(kept, s.anchors[k+1:]...)
	s.first = next
	return s.saveAnchors()
}

// deleteSuffix removes entry min and those after it. Called with mu.
func (s *Store) deleteSuffix(min uint64) error {
	cut, _, err := s.locate(min)
	if err != nil {
		return err
	}
	prevOff, _, err := s.locate(min - 1)
	if err != nil {
		return err
	}
	prev, err := s.readBatch(prevOff)
	if err != nil {
		return err
	}
	s.idx.Lock()
	s.dropTables()
	k := s.anchorFor(min)
	if s.anchors[k].index == min {
		k--
	}
	s.anchors = s.anchors[:k+1]
	s.last, s.lastTerm = min-1, uint64(prev.PartitionLeaderEpoch())
	err = s.saveAnchors()
	s.idx.Unlock()
	if err != nil {
		return err
	}
	if err := s.log.TruncateTo(cut); err != nil {
		return err
	}
	return s.truncateEpochs(cut)
}
