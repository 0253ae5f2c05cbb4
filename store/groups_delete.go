package store

import "fmt"

// DeleteOffsets removes a group's committed offsets on partitions of a
// topic by writing tombstones, as Kafka's OffsetDelete does. Partitions
// the group has no commit on are skipped; a group with no commits at all
// is ErrUnknownGroup.
func (s *Store) DeleteOffsets(group, topic string, partitions ...int32) error {
	if s.readOnly {
		return s.errReadOnly("delete a group's offsets")
	}
	return s.tombstoneCommits(group, func(m map[tp]Committed) []tp {
		var keys []tp
		for _, p := range partitions {
			if k := (tp{topic, p}); !containsKey(keys, k) {
				if _, ok := m[k]; ok {
					keys = append(keys, k)
				}
			}
		}
		return keys
	})
}

// tombstoneCommits writes tombstones for the commits of group that pick
// chooses among them (none: nothing is written). A group with no commits
// is ErrUnknownGroup.
func (s *Store) tombstoneCommits(group string, pick func(map[tp]Committed) []tp) error {
	if s.opts.ReplicatedOffsets {
		return fmt.Errorf("%w: group %q", ErrReplicatedOffsets, group)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	m, ok := s.groups.m[group]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownGroup, group)
	}
	keys := pick(m)
	if len(keys) == 0 {
		return nil
	}
	return s.writeCommitsLocked(group, keys, make([]*Committed, len(keys)))
}

func containsKey(keys []tp, k tp) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}
