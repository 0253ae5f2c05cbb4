package store

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
)

// Opening a store writable writes nothing by itself: the groups' offsets
// are rebuilt from the offsets topic through read-only views of its
// partitions, and a partition is opened writable (which re-extends its
// active segment's indexes, and after a crash recovers it) only when it is
// used; the clean-shutdown marker is removed just before the first such
// open. So `seglog consume --group`'s commit, which opens the store to
// append to one offsets partition, changes that partition, its checkpoint
// lines and the marker, and nothing else (TestCommitChangesOnlyItsPartition).

// replayGroups rebuilds the groups' committed offsets from the offsets
// topic at Open, Options.RecoveryWorkers partitions at a time.
//
// Each partition is read through a read-only view (seglog.Options.ReadOnly),
// which writes nothing and serves the batches a writable open's recovery
// keeps: every valid batch up to the first damage past the recovery point,
// none after it (a torn tail recovery cuts, or bytes it keeps in a
// quarantine file), and damage below the recovery point fails it as it
// fails recovery. After a crash the partition itself stays unrecovered
// until it is first used, or until Close recovers what the session did not
// use; the groups rebuilt from the view are what that recovery leaves
// (TestReplayViewsMatchRecovery). Where only a writable open can give a
// partition's records (writableResolves), it is opened writable, so
// recovered, and read as before, and its error, if it has one, is Open's.
func (s *Store) replayGroups() error {
	ot := s.topics[OffsetsTopic]
	found := make([]commitsFound, len(ot.parts))
	errs := make([]error, len(ot.parts))
	s.parallel(len(ot.parts), func(i int) { found[i], errs[i] = s.replayPartition(ot.parts[i]) })
	if err := errors.Join(errs...); err != nil {
		return err
	}
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	// In partition order, each partition's last word on a key: what one
	// replay of the partitions in order would leave (a group's commits
	// are all in its own partition, unless the topic's partition count
	// was changed behind the store's back).
	for _, m := range found {
		for group, keys := range m {
			for k, c := range keys {
				if c == nil {
					g.deleteLocked(group, k)
				} else {
					g.setLocked(group, k, *c)
				}
			}
		}
	}
	return nil
}

// commitsFound is one offsets partition's last record for each group and
// key it holds: a commit, or nil for a tombstone.
type commitsFound map[string]map[tp]*Committed

func (m commitsFound) add(group string, k tp, c *Committed) {
	keys := m[group]
	if keys == nil {
		keys = make(map[tp]*Committed)
		m[group] = keys
	}
	keys[k] = c
}

// replayPartition reads one offsets partition's commits, through a view
// or, where only a writable open can give the partition's records (see
// writableResolves), through its writable Log.
func (s *Store) replayPartition(p *partition) (commitsFound, error) {
	found := make(commitsFound)
	l, err := s.openReadOnlyPartition(p.topic, p.id, p.cfg, replayIndexBytes)
	if err == nil {
		_, err = eachCommit(l, l.StartOffset(), found.add)
		l.Close()
	}
	if !writableResolves(err) {
		return found, err
	}
	s.logger.Debug("store: an offsets partition needs a writable open to be read", "dir", p.dir(), "err", err)
	found = make(commitsFound)
	err = p.with(func(l *seglog.Log) error {
		_, err := eachCommit(l, l.StartOffset(), found.add)
		return err
	})
	return found, err
}

// writableResolves reports whether a view's error is one that a writable
// open resolves, or at least answers as it answered before views were
// used: an interrupted compaction swap to complete (the view refuses it
// with ErrReadOnly), damage (a view refuses a segment that later segments
// follow, which recovery cuts, setting the rest aside in quarantine;
// damage below the recovery point fails the writable open too), a
// partition directory missing (a writable open creates it). Other errors,
// an I/O error above all, are the view's to report: trying again the
// other way would hide them.
func writableResolves(err error) bool {
	return errors.Is(err, ErrReadOnly) || errors.Is(err, seglog.ErrCorrupt) || errors.Is(err, fs.ErrNotExist)
}

// parallel calls f(0) … f(n-1), Options.RecoveryWorkers at a time.
func (s *Store) parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(s.opts.RecoveryWorkers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// beginWrites removes the log.dir's clean-shutdown marker, durably, before
// the session opens its first partition writable: from then on a crash
// must make the next Open recover (an open re-extends the active
// segment's indexes, an append adds bytes a power loss may tear). Until
// then the marker still vouches for every partition, and Close leaves it
// as it is. A partition opened later in the session still trusts its
// segments if the marker was there at Open (nothing touched them since).
func (s *Store) beginWrites() error {
	if !s.ckpt.clean {
		return nil // no marker: the store was not closed cleanly, or is new
	}
	s.markerMu.Lock()
	defer s.markerMu.Unlock()
	if s.markerGone {
		return nil
	}
	if err := s.fs.Remove(filepath.Join(s.dir, layout.CleanShutdownFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return err
	}
	s.markerGone = true
	return nil
}

// wroteSince reports whether a partition was opened writable since Open
// (so the marker is gone).
func (s *Store) wroteSince() bool {
	s.markerMu.Lock()
	defer s.markerMu.Unlock()
	return s.markerGone
}
