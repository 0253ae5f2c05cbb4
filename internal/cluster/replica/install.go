package replica

import (
	"fmt"

	"github.com/seglog/seglog/internal/epochcache"

	pb "go.etcd.io/raft/v3/raftpb"
)

// A snapshot install's life on disk (docs/cluster-partitions.md, "Snapshot
// install"). Two files say what a partition's raft log is: the anchors
// (raft-index-checkpoint) and the commit index (raft-state). An install
// changes both, and the partition, so it is kept in raft-state (install,
// state.go), written atomically with the commit index, before anything
// else changes:
//
//  1. prepareCopy cuts the uncommitted tail (a truncation, crash-safe as
//     any) and saves the install: the anchors still describe the committed
//     entries, which end at from; every batch past from is the sender's.
//  2. The copy appends the sender's batches past from (storeRaw), each
//     synced. For a restart, restartForSnapshot first saves the install
//     with restart set, then the anchors of a raft log empty after the
//     commit index, at from (the commit's term is in them, which nothing
//     else keeps once the partition's own batches are gone), then empties
//     the partition where the sender's batches begin (its start, or the
//     base offset of the batch holding it).
//  3. takePending, once the copy reached the snapshot's end and raft takes
//     the snapshot, replaces the anchors with the snapshot's, raises the
//     partition's log start to the sender's (saved with the install) if it
//     is higher, then saves the state with the snapshot's commit index and
//     configuration and no install.
//
// Open (loadInstall) finds one of: the snapshot's anchor first in the
// anchors (a crash inside 3: the start is raised and the state finished
// from the install); a
// restarted partition (its start past from), which holds only the
// sender's batches copied since the restart: one whose copy reached the
// snapshot's end is moved to the snapshot, any other keeps them, the raft
// log empty after the commit index at the partition's start, and the
// install (still a restart) stays, so the next copy resumes at the
// partition's end; or the committed entries with the sender's batches
// after them (a crash in 1 or 2, or a restart that did not happen), which
// it keeps: the raft log ends at from, the install stays, and the next
// copy resumes at the partition's end. Nothing the copy stored is thrown
// away: the follower's partition ends up the leader's, batch for batch,
// from the leader's start.

// pendingSnap is the install under way as the Store holds it: the one
// saved in the raft state, and whether the copy has reached its end.
type pendingSnap struct {
	install
	// complete says every batch up to end is stored: raft may take it.
	complete bool
}

// setInstall saves in as the install under way, with the state as it is.
// Called with mu.
func (s *Store) setInstall(in *install) error {
	return s.setInstallCommit(in, s.state.commit)
}

// setInstallCommit is setInstall with the commit index raised to commit in
// the same write. Called with mu.
func (s *Store) setInstallCommit(in *install, commit uint64) error {
	st := s.state
	st.commit = max(st.commit, commit)
	st.inst = in
	if err := s.saveState(st); err != nil {
		return err
	}
	s.pending = &pendingSnap{install: *in}
	return nil
}

// prepareCopy readies the partition for rc's batches after the committed
// entries (or, after a restart for an earlier snapshot, after the batches
// copied since): it cuts the uncommitted tail, and whatever an earlier copy
// stored past the snapshot's end, then saves the install. Called from a
// transfer once the sender's header came.
func (s *Store) prepareCopy(rc *receive) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := &install{index: rc.index, term: rc.term, end: rc.end, from: rc.cut, logStart: rc.start}
	in.cs.setConfState(rc.cs)
	if p := s.pending; p != nil && p.restart {
		// The raft log is the empty one restartForSnapshot left in memory
		// (on disk, the anchors are still the old log's): the install
		// stays a restart, from the offset it was restarted past.
		in.from, in.restart, in.start = p.from, true, p.start
	} else {
		s.idx.RLock()
		_, last := s.bounds()
		s.idx.RUnlock()
		if last > rc.commit {
			// A tail raft has not committed here, which the sender's
			// batches replace: cut before the install is saved, so that
			// every batch past from is the sender's.
			if err := s.truncateFrom(rc.commit + 1); err != nil {
				return err
			}
		}
	}
	if s.log.EndOffset() > rc.next {
		// Batches of an earlier copy past this snapshot's end: the entries
		// after the snapshot, which raft appends again, the same bytes.
		if err := s.p.TruncateTo(rc.next); err != nil {
			return err
		}
		if err := s.truncateEpochs(rc.next); err != nil {
			return err
		}
	}
	return s.setInstall(in)
}

// restartForSnapshot empties the partition and restarts it at start, where
// the sender's batches begin (its log start, or the base offset of the
// batch holding it), past the batches this node has (Kafka's
// truncateFullyAndStartAt). The uncommitted tail is cut and the install is
// saved, restart set, first (with the commit index at least the raft log's
// first index less one, which raft requires at a restart), then the
// anchors of a raft log empty after the commit index, at from, where the
// committed entries end: a crash before the restart leaves the committed
// batches, which Open keeps (the log starts after them, as after a
// snapshot this node took itself); one after it a partition holding the
// sender's batches copied since, which Open keeps with the install, the
// anchor moved to the partition's start. The in-memory raft view becomes
// that empty log, at start: what raft (frozen, every committed entry
// applied) still takes for its log, in which it finds the snapshot's index
// absent, so it takes the snapshot; ApplySnapshot then switches to the
// snapshot's anchor. Until then retention is not followed. A restart
// after an earlier one (the sender's start moved past what was copied)
// changes no anchor: they are already that empty log's.
func (s *Store) restartForSnapshot(rc *receive, start int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.RLock()
	commit := max(rc.commit, s.first-1)
	_, last := s.bounds()
	s.idx.RUnlock()
	commitTerm, err := s.term(commit)
	if err != nil {
		return err
	}
	in := &install{index: rc.index, term: rc.term, end: rc.end, from: rc.cut, restart: true, start: start, logStart: rc.start}
	in.cs.setConfState(rc.cs)
	again := s.pending != nil && s.pending.restart
	if again {
		in.from = s.pending.from
	} else if last > commit {
		if err := s.truncateFrom(commit + 1); err != nil {
			return err
		}
	}
	if err := s.setInstallCommit(in, commit); err != nil {
		return err
	}
	if !again {
		a := anchor{commit + 1, in.from, commitTerm}
		if err := s.writeAnchors([]anchor{a}); err != nil {
			return err
		}
		s.setEmptyLog(a)
	}
	if err := s.p.RestartAt(start); err != nil {
		return err
	}
	if err := s.epochs.Clear(); err != nil {
		return err
	}
	s.setEmptyLog(anchor{commit + 1, start, commitTerm})
	return nil
}

// setEmptyLog makes the in-memory raft view the empty log a starts.
// Called with mu.
func (s *Store) setEmptyLog(a anchor) {
	s.idx.Lock()
	defer s.idx.Unlock()
	s.dropTables()
	s.anchors = []anchor{a}
	s.first, s.last, s.lastTerm, s.end = a.index, a.index-1, a.term, a.offset
}

// abortTransfer leaves a failed transfer's Store so that raft, unfrozen,
// finds its log as it was (its view in memory never grew): the install
// stays, incomplete, with the batches copied so far, for the next copy to
// resume or an Append to replace (abandonInstall). The epochs of batches a
// failed append did not store go.
func (s *Store) abortTransfer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending != nil {
		s.pending.complete = false
	}
	_ = s.truncateEpochs(s.log.EndOffset())
}

// abandonInstall ends an install raft did not take, before Append stores
// entries after the raft log (a leader that still has them sends them
// instead of a snapshot): the sender's batches copied past it are removed
// (the entries appended in their place are the same committed batches,
// stamped alike), then the install. Called with mu.
//
// After a restart the raft log is empty after the commit index, whose
// batches ended at from, below the partition's start: only entries that
// follow it (the first at most one past the last index, the last past
// it) end the install, which restarts the partition at from (empty) first,
// so that they land at the offsets every replica gives them; the anchors
// already say that empty log at from (restartForSnapshot). A crash
// between leaves a partition at from with the install, which Open keeps as
// after a restart that did not happen. Any other call leaves the install
// to Append's own checks.
func (s *Store) abandonInstall(entries []*pb.Entry) error {
	p := s.pending
	if p == nil {
		return nil
	}
	if p.restart {
		s.idx.RLock()
		a, last := s.anchors[0], s.last
		s.idx.RUnlock()
		if entries[0].GetIndex() > last+1 || entries[len(entries)-1].GetIndex() <= last {
			return nil
		}
		if err := s.p.RestartAt(p.from); err != nil {
			return err
		}
		if err := s.epochs.Clear(); err != nil {
			return err
		}
		a.offset = p.from
		if err := s.writeAnchors([]anchor{a}); err != nil {
			return err
		}
		s.setEmptyLog(a)
	}
	s.idx.RLock()
	end := s.end
	s.idx.RUnlock()
	if s.log.EndOffset() > end {
		if err := s.p.TruncateTo(end); err != nil {
			return err
		}
		if err := s.truncateEpochs(end); err != nil {
			return err
		}
	}
	st := s.state
	st.inst = nil
	if err := s.saveState(st); err != nil {
		return err
	}
	s.pending = nil
	return nil
}

// takePending makes the log empty after the pending snapshot, if it is
// (index, term) and the partition ends at its end; it reports whether it
// did. The snapshot's anchor is saved first, then the log start rises to
// the sender's (raiseStart), then the state is saved without the install:
// a crash after the anchor leaves the install with it, which Open
// finishes, the start raised again if it was not. Called with mu.
func (s *Store) takePending(index, term uint64, end int64, cs *pb.ConfState) (bool, error) {
	p := s.pending
	if p == nil || !p.complete || p.index != index || p.term != term || p.end != end || s.log.EndOffset() != end {
		return false, nil
	}
	a := p.snapAnchor()
	if err := s.writeAnchors([]anchor{a}); err != nil {
		return false, err
	}
	if err := s.raiseStart(&p.install); err != nil {
		return false, err
	}
	st := s.state
	st.setConfState(cs)
	st.commit = max(st.commit, index)
	st.inst = nil
	if err := s.saveState(st); err != nil {
		return false, err
	}
	s.idx.Lock()
	defer s.idx.Unlock()
	s.dropTables()
	s.anchors = []anchor{a}
	s.first, s.last, s.lastTerm, s.end = index+1, index, term, end
	s.pending = nil
	return true, nil
}

// loadInstall is Open's part for an install saved in the raft state (see
// the top of this file), given the anchors on disk; it returns the anchors
// to go on with and the end of the raft log's batches (the partition's end
// but for an install kept). Called from Open, before the Store is shared.
func (s *Store) loadInstall(anchors []anchor) ([]anchor, int64, error) {
	in := s.state.inst
	end := s.log.EndOffset()
	if in == nil {
		return anchors, end, nil
	}
	a := in.snapAnchor()
	switch {
	case len(anchors) > 0 && anchors[0] == a:
		// takePending saved the snapshot's anchor, once the copy was
		// whole; the state is finished here.
		return anchors, end, s.finishInstall(in)
	case in.restart && s.log.StartOffset() > in.from:
		// The partition was restarted for the snapshot: the entries it
		// held are gone, and every batch in it is the sender's, copied
		// since the restart. Epochs of batches the restart removed may
		// be left, if a crash came before restartForSnapshot cleared
		// them: the cache is rebuilt from the batches there are (Open
		// loads it after the anchors).
		if err := epochcache.New(s.fs, s.dir).Replace(nil); err != nil {
			return nil, 0, err
		}
		if end != in.end {
			if len(anchors) == 1 && anchors[0].offset == in.from {
				return s.resumeRestart(in, anchors[0])
			}
			// Anchors an earlier build left, which do not say the
			// commit index's term: the log can only go on from the
			// snapshot, the partition restarted at its end.
			if err := s.p.RestartAt(in.end); err != nil {
				return nil, 0, err
			}
		}
		// The copy reached the snapshot's end: the log goes on from it.
		if err := s.writeAnchors([]anchor{a}); err != nil {
			return nil, 0, err
		}
		return []anchor{a}, s.log.EndOffset(), s.finishInstall(in)
	}
	// The committed entries, then the batches copied after them: both
	// stay. The raft log ends at from; the install stays (not a restart
	// any more: that did not happen), so the next copy resumes.
	kept := *in
	kept.restart, kept.start = false, 0
	if in.restart {
		st := s.state
		st.inst = &kept
		if err := s.saveState(st); err != nil {
			return nil, 0, err
		}
	}
	s.pending = &pendingSnap{install: kept, complete: end == kept.end}
	return anchors, min(end, kept.from), nil
}

// resumeRestart keeps a restart's install whose copy stopped short: the
// raft log is empty after the commit index, its anchor (at from on disk,
// restartForSnapshot's) moved to the partition's start, the batches there
// the sender's, and the install stays pending (still a restart, so Append
// is refused and the next copy goes on at the partition's end).
func (s *Store) resumeRestart(in *install, a anchor) ([]anchor, int64, error) {
	start := s.log.StartOffset()
	a.offset = start
	kept := *in
	kept.start = start
	s.pending = &pendingSnap{install: kept}
	return []anchor{a}, start, nil
}

// finishInstall saves the state an install leaves once its anchor is
// saved: the log start raised to the sender's, then committed up to the
// snapshot, its configuration, no install.
func (s *Store) finishInstall(in *install) error {
	if err := s.raiseStart(in); err != nil {
		return err
	}
	st := s.state
	st.conf = in.cs
	st.commit = max(st.commit, in.index)
	st.inst = nil
	return s.saveState(st)
}

// raiseStart moves the partition's log start up to the install's sender's,
// when that is higher, as a Kafka follower takes the log start its
// leader's fetch answers carry (maybeIncrementLogStartOffset): the start a
// DeleteRecords entry set on the sender holds here even when the snapshot
// is past the entry, which this replica then never applies, and a start
// the sender's batches began below (inside the batch holding it) moves to
// where the sender's is. The start never passes the snapshot's end, where
// its anchor is (saved first), so no entry leaves raft's view, and only
// segments wholly below it go (seglog.Log.DeleteBefore, which writes the
// log-start checkpoint before it removes any, so a crash keeps the new
// start or the old one, and Open, finding the old, raises it again).
// Called with mu, or from Open.
func (s *Store) raiseStart(in *install) error {
	if in.logStart <= s.log.StartOffset() {
		return nil
	}
	if _, err := s.p.DeleteBefore(in.logStart); err != nil {
		return fmt.Errorf("replica: %s: moving the log start to the snapshot sender's %d: %w", s.dir, in.logStart, err)
	}
	return s.trimEpochs()
}
