package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
)

// ErrReadOnly is matched by the error of every method that would write to
// a store opened with Options.ReadOnly; nothing was changed. It is
// seglog.ErrReadOnly, so one errors.Is covers a store and its Logs.
var ErrReadOnly = seglog.ErrReadOnly

// readOnlyIndexBytes bounds the in-memory indexes a read-only partition
// rebuilds for the segment a writer may still be appending to. A view
// keeps them in memory (it writes no index file), one pair per partition:
// the writer's segment.index.bytes (10 MiB by default) would make a view
// of a few hundred partitions cost gigabytes. Fewer entries only make
// lookups in that segment scan further.
const readOnlyIndexBytes = 256 << 10

// replayIndexBytes bounds them for the views Open replays the groups
// through: each reads its partition once, in order, and is closed, so its
// rebuilt indexes serve no lookup past the first. At readOnlyIndexBytes
// the fifty offsets partitions' views allocated, zeroed and copied about
// 50 MiB at every start (a clean restart of bench restart's store took
// 85 ms instead of 25).
const replayIndexBytes = 4 << 10

// nopLock stands in for the lock a read-only store does not take.
type nopLock struct{}

func (nopLock) Close() error          { return nil }
func (nopLock) SetOwner([]byte) error { return nil }

func (s *Store) errReadOnly(op string) error {
	return fmt.Errorf("store: cannot %s: %s opened read-only: %w", op, s.dir, ErrReadOnly)
}

// openReadOnly is Open with Options.ReadOnly.
func openReadOnly(dir string, opts Options) (*Store, error) {
	st, err := opts.FS.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &NotAStoreError{Dir: dir, Reason: err}
	}
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: errors.New("not a directory")}
	}
	if err := checkStoreDir(opts.FS, dir, true); err != nil {
		return nil, err
	}
	s := &Store{dir: dir, fs: opts.FS, opts: opts, logger: opts.Logger, lock: nopLock{},
		topics: make(map[string]*topic), readOnly: true}
	s.groups.init()
	s.lru.budget = opts.MaxOpenLogs
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refreshLocked(); err != nil {
		s.closeLogs()
		return nil, err
	}
	return s, nil
}

// ReadOnly reports whether the store was opened with Options.ReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Refresh brings a read-only store's view up to date with what a live
// writer did since the last look: topics created, deleted or grown,
// records appended to every partition (each Log's Refresh), and commits
// and deletions of groups. On a writable store it does nothing: its view
// is always current.
func (s *Store) Refresh() error {
	if !s.readOnly {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.refreshLocked()
}

// refreshLocked reconciles the open topics with the directory (s.mu held
// for writing). Only topics in state ready are shown: one being created
// may still lack partitions, one being deleted is going.
func (s *Store) refreshLocked() error {
	sc, err := s.scan()
	if err != nil {
		return err
	}
	for t, ps := range sc.dirs {
		if _, ok := sc.files[t]; !ok {
			sc.files[t] = adopted(t, ps)
		}
	}
	for name, t := range s.topics {
		f, ok := sc.files[name]
		if ok && f.state == stateReady && f.partitions >= len(t.parts) {
			continue
		}
		// Deleted (or deleted and created again with fewer partitions):
		// the writer tombstones its offsets, which the replay below sees.
		s.shutPartitions(t.parts, fmt.Errorf("%w: %s (deleted)", ErrUnknownTopic, name))
		delete(s.topics, name)
	}
	for name, f := range sc.files {
		if f.state != stateReady {
			continue
		}
		t := s.topics[name]
		if t == nil {
			t = &topic{name: name, cfg: f.config}
			s.topics[name] = t
		} else if t.cfg != f.config {
			// The writer altered the topic's config.
			t.cfg = f.config
			for _, p := range t.parts {
				p.setConfig(f.config)
			}
		}
		s.refreshTopic(t)
		if err := s.newPartitions(t, len(t.parts), f.partitions); err != nil {
			return err
		}
	}
	return s.replayOffsets()
}

// refreshTopic refreshes a topic's open partitions and forgets what it
// knew of the closed ones (they open as they are now). A partition
// truncated under its view is closed, to reopen when next used, unless an
// AcquireLog holder is reading it.
func (s *Store) refreshTopic(t *topic) {
	for i, p := range t.parts {
		reopened := false
		p.mu.Lock()
		p.hasInfo = false
		if p.l != nil {
			err := p.l.Refresh()
			if err != nil && p.pins > 0 {
				// Someone reads it (AcquireLog): they keep the view
				// they have; it is replaced at a later Refresh.
				s.logger.Debug("store: a partition's view is stale but in use", "dir", p.dir(), "err", err)
			} else if err != nil {
				if !errors.Is(err, seglog.ErrStaleView) {
					s.logger.Warn("store: refreshing a partition", "dir", p.dir(), "err", err)
				}
				p.closeLocked()
				p.hasInfo = false
				reopened = true
			}
		}
		p.mu.Unlock()
		if reopened && t.name == OffsetsTopic {
			// Outside p.mu: the group table's lock is taken before a
			// partition's, never after.
			s.groups.forgetPartition(i, len(t.parts))
		}
	}
}

// openReadOnlyPartition opens a view of partition p of topic t whose
// rebuilt indexes hold at most indexBytes (readOnlyIndexBytes or
// replayIndexBytes).
func (s *Store) openReadOnlyPartition(t string, p int32, cfg TopicConfig, indexBytes int) (*seglog.Log, error) {
	o := seglog.Options{
		FS:        s.fs,
		Logger:    s.logger,
		Clock:     s.opts.Clock,
		ReadOnly:  true,
		LogConfig: seglog.LogConfig{MaxIndexBytes: min(cfg.SegmentIndexBytes, indexBytes)},

		MaxMappedIndexes:    mappedIndexesPerLog,
		MaxOpenSegmentFiles: openSegmentFilesPerLog,
	}
	l, err := seglog.Open(filepath.Join(s.dir, layout.PartitionDirName(t, p)), o)
	if err != nil {
		return nil, fmt.Errorf("store: partition %s-%d: %w", t, p, err)
	}
	return l, nil
}

// replayOffsets applies the offsets topic's records written since the
// last replay.
func (s *Store) replayOffsets() error {
	ot := s.topics[OffsetsTopic]
	g := &s.groups
	g.mu.Lock()
	defer g.mu.Unlock()
	if ot == nil {
		g.m = make(map[string]map[tp]Committed)
		g.next = nil
		return nil
	}
	if len(g.next) != len(ot.parts) {
		// First look, or the topic was recreated: start over.
		g.m = make(map[string]map[tp]Committed)
		g.next = make([]int64, len(ot.parts))
	}
	for p, part := range ot.parts {
		if err := part.with(func(l *seglog.Log) error { return g.replayLocked(l, p) }); err != nil {
			return err
		}
	}
	return nil
}

// forgetPartition drops the groups that offsets partition p holds, so that
// a replay from its start rebuilds them.
func (g *groupTable) forgetPartition(p, partitions int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for name := range g.m {
		if int(OffsetsPartitionFor(name, partitions)) == p {
			delete(g.m, name)
		}
	}
	if p < len(g.next) {
		g.next[p] = 0
	}
}
