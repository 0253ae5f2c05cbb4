package store

import (
	"path/filepath"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
)

// The cleaning floor of a partition is the offset the store's cleaner
// never reaches: retention deletes no segment that holds it or anything
// after it, and compaction rewrites only sealed segments wholly below it.
// A replicated partition needs one: its raft log is the partition, and
// raft must still read every entry it has not applied on this node
// (etcd raft panics when a committed, unapplied entry is gone), while
// compaction, which removes batches, would renumber raft's entries (one
// entry is one batch). The partition manager keeps the floor at the
// applied point (package internal/cluster/partition).
//
// A floor only holds the cleaner back; it never makes it delete more. It
// lives for the store's session: after a restart, a replicated partition
// (its directory holds raft's files, layout.RaftStateFile or
// layout.RaftIndexFile) is not cleaned at all until its Writer sets a
// floor again, so the cleaner cannot run ahead of raft between the
// store's Open and the replica's start.

// noFloor says no floor is set: the cleaner's own rules alone apply.
const noFloor = -1

// SetCleaningFloor sets the partition's cleaning floor: the store's
// cleaner (the background one and Clean) deletes no segment holding
// offset or anything after it, and compacts nothing at or above it. A
// negative offset removes the floor, a replicated partition's default
// hold included. It takes effect at the cleaner's next pass; a pass
// already deleting checks it again before it deletes. Store.DeleteRecords
// is an administrator's request and does not look at it.
func (w Writer) SetCleaningFloor(offset int64) {
	p := w.p
	if offset < 0 {
		offset = noFloor
	}
	p.mu.Lock()
	p.floor, p.floorSet = offset, true
	p.mu.Unlock()
	// The cleaner plans with it too (no roll, no compaction round, for
	// what the floor holds back); a partition not under the cleaner (a
	// read-only store has none) has nothing to plan.
	_ = p.s.clean.SetUpperBound(cleanerPart{p}, offset)
}

// CleaningFloor returns the floor SetCleaningFloor set in this session,
// and whether one was set.
func (w Writer) CleaningFloor() (int64, bool) {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.floor, p.floorSet
}

// cleaningLimit is the offset nothing at or after which the cleaner may
// delete or compact in p, whose Log is l: the floor, or for a replicated
// partition with none set in this session its start (nothing); -1 for no
// limit. p.mu is not held.
func (p *partition) cleaningLimit(l *seglog.Log) int64 {
	p.mu.Lock()
	floor, set := p.floor, p.floorSet
	p.mu.Unlock()
	if set {
		return floor
	}
	for _, name := range []string{layout.RaftStateFile, layout.RaftIndexFile} {
		if _, err := p.s.fs.Stat(filepath.Join(p.dir(), name)); err == nil {
			return l.StartOffset()
		}
	}
	return noFloor
}

// cleanerUpper is the upper bound a cleaner plans p with: the floor set,
// or -1 (the log end; a replicated partition without a floor is held by
// cleaningLimit when the cleaner acts).
func (p *partition) cleanerUpper() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.floorSet {
		return p.floor
	}
	return noFloor
}

// belowLimit lowers offset, a start the cleaner asks DeleteBefore for, to
// the last segment boundary at or below limit when it is past limit: the
// segment holding the limit stays whole, as retention keeps whole
// segments.
func belowLimit(v seglog.View, offset, limit int64) int64 {
	if limit < 0 || offset <= limit {
		return offset
	}
	bound := v.StartOffset()
	segs := v.Segments()
	for i, s := range segs {
		end := s.NextOffset
		if i+1 < len(segs) {
			end = segs[i+1].BaseOffset
		}
		if end > limit {
			break
		}
		bound = end
	}
	return max(min(bound, offset), v.StartOffset())
}
