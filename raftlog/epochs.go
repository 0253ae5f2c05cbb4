package raftlog

import (
	"fmt"
	"path/filepath"

	"github.com/seglog/seglog/layout"
)

// The leader-epoch cache is package epochcache's (the one copy of Kafka's
// LeaderEpochFileCache rules, shared with the replica store); raftlog adds
// only its refusal of a term lower than the last.

// assignEpoch records that term starts at offset before the batch is
// written. Terms never decrease along a raft log: a lower one is refused
// with ErrBadEntry and nothing is written.
func (s *Store) assignEpoch(term int32, offset int64) error {
	if last := s.epochs.Last(); term < last {
		return fmt.Errorf("%w: term %d after term %d (terms never decrease along a raft log)", ErrBadEntry, term, last)
	}
	_, err := s.epochs.Assign(term, offset)
	return err
}

// epochPath is the partition's leader-epoch-checkpoint.
func epochPath(part string) string { return filepath.Join(part, layout.LeaderEpochFile) }
