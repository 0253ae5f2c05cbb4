package replica

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/internal/epochcache"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The interface a Store satisfies.
var _ multiraft.Storage = (*Store)(nil)

// ErrClosed is returned by every method of a closed Store: vfs.ErrClosed,
// the one "closed" error of every layer.
var ErrClosed = vfs.ErrClosed

// Partition is the partition a Store keeps its raft log in. *seglog.Log
// (tests) and store.Writer (a node, whose store owns the partition)
// satisfy it. The Store is its only writer.
type Partition interface {
	// View reads the partition.
	View() seglog.View
	// AppendEpochBatches stamps and appends batches, one per entry.
	AppendEpochBatches(epochs []int32, batches [][]byte) ([]seglog.AppendInfo, error)
	// AppendAsFollower stores batches copied from the leader at their own
	// offsets, gaps (compaction's) allowed, for a snapshot install.
	AppendAsFollower(batches [][]byte) ([]seglog.AppendInfo, error)
	// TruncateTo removes the records at or after an offset.
	TruncateTo(offset int64) error
	// RestartAt empties the partition and restarts it at an offset
	// (Kafka's truncateFullyAndStartAt), for a snapshot install.
	RestartAt(offset int64) error
	// DeleteBefore moves the log start up to an offset and removes the
	// segments wholly below it (seglog.Log.DeleteBefore), for a snapshot
	// install that raises the start to its sender's; nothing at or above
	// the offset goes.
	DeleteBefore(offset int64) (int, error)
	// Sync makes what was appended durable.
	Sync() error
}

// Options configures a Store.
type Options struct {
	// FS is the partition's filesystem; nil is the real one.
	FS vfs.FS
	// MaxBatchBytes bounds one batch, so one entry (max.message.bytes); 0
	// is seglog's default.
	MaxBatchBytes int
}

// Store is the raft log of one partition, kept in the partition's own
// segments (see the package doc). Its methods are safe for concurrent use:
// writes are serialized; reads run beside them.
type Store struct {
	fs       vfs.FS
	dir      string
	p        Partition
	log      seglog.View
	maxBatch int
	closed   atomic.Bool

	mu  sync.Mutex // serializes writes; under it, scratch buffers
	bld *record.Builder
	val []byte
	// epochs is the leader-epoch cache (package epochcache; epochs.go).
	epochs *epochcache.Cache
	// state is raft's HardState and ConfState (state.go), written under mu.
	state raftState
	// commitDirty says state's commit index is not on disk yet
	// (SetHardState), under mu.
	commitDirty bool
	// pending is a snapshot install under way (install.go), under mu;
	// retention is not followed meanwhile.
	pending *pendingSnap

	// idx guards the raft view of the partition. Writers hold mu first.
	// With no anchor the log is fresh: FirstIndex 1, LastIndex 0. With
	// anchors, entries are [first, last], empty when last == first-1 (as
	// after a snapshot), and anchors[0].term is Term(first-1).
	idx      sync.RWMutex
	first    uint64
	last     uint64
	lastTerm uint64
	end      int64    // the offset after the last entry's batch
	anchors  []anchor // persisted; anchors[0].index == first
	gen      uint64   // moved by every truncation: tables and offsets read before it are stale
	tables   map[uint64]*table
	// tableSize counts the entries the tables hold.
	tableSize int
	// recent is the entries appended last, consecutive, as Entries
	// returns them (the batches as stored), with their sizes as raft
	// counts them: raft reads back what it just appended (the committed
	// entries it applies, a leader's entries for its followers), which
	// is then answered without reading the partition again. Bounded by
	// recentBudget bytes, let go once applied (Applied); emptied by every
	// truncation (dropTables).
	recent      []*pb.Entry
	recentSizes []uint64
	recentBytes int

	// own is the entries the driver last said this node proposed
	// (Proposed), which Append need not check for CRC.
	own ownList
}

// Open opens the raft log kept in partition p: its raft-index checkpoint,
// its raft state and its leader-epoch cache, all in p's directory. The
// raft log's last entry is found by walking the batches after the last
// anchor. Close does not close p.
func Open(p Partition, opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	maxBatch := opts.MaxBatchBytes
	if maxBatch == 0 {
		maxBatch = seglog.DefaultMaxBatchBytes
	}
	v := p.View()
	s := &Store{fs: opts.FS, dir: v.Dir(), p: p, log: v, maxBatch: maxBatch, bld: record.NewBuilder(record.None), tables: make(map[uint64]*table)}
	var err error
	if s.state, err = loadState(s.fs, s.statePath()); err != nil {
		return nil, err
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	if err := s.loadEpochs(); err != nil {
		return nil, err
	}
	return s, nil
}

// load reads the anchors and finds the last entry. Anchors past the log
// end (a truncation that a crash interrupted after saving them, or entries
// a power loss took) are dropped; the first stays, at the end, as an empty
// log that starts there.
func (s *Store) load() error {
	anchors, err := loadAnchors(s.fs, s.indexPath())
	if err != nil {
		return err
	}
	// end is where the raft log's batches end: the partition's end, but
	// for a snapshot install under way (install.go).
	anchors, end, err := s.loadInstall(anchors)
	if err != nil {
		return err
	}
	k := len(anchors)
	// An anchor at the end is kept: it may say the last entry is an empty
	// one (which has no batch), or that the log ends before its entry.
	for k > 1 && anchors[k-1].offset > end {
		k--
	}
	changed := k != len(anchors)
	anchors = anchors[:k]
	if k == 1 && anchors[0].offset > end {
		anchors[0].offset = end
		changed = true
	}
	s.anchors = anchors
	moved, err := s.dropBelowStart(false)
	if err != nil {
		return err
	}
	changed = changed || moved
	if len(s.anchors) == 0 {
		return nil
	}
	k = len(s.anchors)
	a := s.anchors[k-1]
	t, err := s.walk(a.offset, ^uint64(0), end)
	if err != nil {
		return err
	}
	s.first = s.anchors[0].index
	s.last = a.index + uint64(len(t.offs)) - 1
	s.end = end
	// With no batch after the last anchor, the log ends at the entry
	// before it, whose term the anchor keeps (an empty entry's, or the
	// snapshot's).
	s.lastTerm = a.term
	if len(t.offs) > 0 {
		s.tables[a.index] = t
		s.tableSize = len(t.offs)
		s.lastTerm = t.terms[len(t.terms)-1]
	}
	if changed {
		return s.saveAnchors()
	}
	return nil
}

// dropBelowStart follows retention: the store's cleaner deletes whole
// segments from the start, and the raft log then starts at the first
// anchor the partition still holds, which, as every segment's first batch
// is anchored, is the new log start's, and whose term says Term(first-1).
// Entries between the start and that anchor, if its segment's anchor was
// never saved, drop out of the raft view: raft sends a snapshot for what
// it cannot read. Called with idx held for writing (or before the Store is
// shared); it reports whether the anchors changed.
//
// When retention took every anchored batch (Kafka's retention rolls the
// active segment and deletes them all once all expired), an open Store
// knows the last entry and its term, and the log becomes empty after it,
// as after a snapshot there; at Open nothing says how many entries
// followed the last anchor, so the log cannot be numbered: an error.
func (s *Store) dropBelowStart(open bool) (bool, error) {
	start := s.log.StartOffset()
	k := len(s.anchors)
	if k == 0 || s.anchors[0].offset >= start {
		return false, nil
	}
	i := sort.Search(k, func(i int) bool { return s.anchors[i].offset >= start })
	if i == k {
		if !open {
			a := s.anchors[k-1]
			return false, fmt.Errorf("replica: %s: the partition starts at offset %d, past its last anchor (index %d at %d): its entries cannot be numbered", s.indexPath(), start, a.index, a.offset)
		}
		s.anchors = []anchor{{s.last + 1, max(s.end, start), s.lastTerm}}
	} else {
		s.anchors = s.anchors[i:]
	}
	s.dropTables()
	s.first = s.anchors[0].index
	if s.last < s.first-1 {
		s.last, s.lastTerm, s.end = s.first-1, s.anchors[0].term, s.anchors[0].offset
	}
	return true, nil
}

// follow applies dropBelowStart while the Store is open, before a read
// that depends on the first index, and saves the anchors it moved.
func (s *Store) follow() error {
	s.idx.RLock()
	behind := len(s.anchors) > 0 && s.anchors[0].offset < s.log.StartOffset()
	s.idx.RUnlock()
	if !behind {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.followLocked()
}

// followLocked is follow for a write, which holds mu.
func (s *Store) followLocked() error {
	if s.pending != nil {
		return nil
	}
	s.idx.Lock()
	moved, err := s.dropBelowStart(true)
	s.idx.Unlock()
	if err != nil {
		return err
	}
	if moved {
		// Not saving costs nothing but the walk Open would redo; the
		// next save writes them anyway.
		_ = s.saveAnchors()
	}
	// Retention moves the start without telling the Store: the epoch
	// cache follows it here, as Kafka's is truncated from the start when
	// its log start advances (a no-op, no write, once it has).
	return s.trimEpochs()
}

// Close marks the Store closed; the partition stays open (its owner closes
// it). Every call after it, Close included, answers ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return ErrClosed
	}
	// The commit index SetHardState kept in memory: a clean stop keeps
	// it, so the high watermark starts there after a restart.
	return s.saveCommit()
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Log returns a read-only view of the partition, for reading it as a
// Kafka log: raft owns every write.
func (s *Store) Log() seglog.View { return s.log }

// Dir returns the partition's directory.
func (s *Store) Dir() string { return s.dir }

// bounds returns first and last as etcd reads them: a fresh log is
// [1, 0]. Called with idx held.
func (s *Store) bounds() (first, last uint64) {
	if len(s.anchors) == 0 {
		return 1, 0
	}
	return s.first, s.last
}

// InitialState returns the HardState and ConfState last saved, the commit
// index raised to the entry before the first if it was saved below it.
func (s *Store) InitialState() (*pb.HardState, *pb.ConfState, error) {
	if err := s.checkOpen(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.followLocked(); err != nil {
		return nil, nil, err
	}
	hs := s.state.hardState()
	s.idx.RLock()
	first, _ := s.bounds()
	s.idx.RUnlock()
	if hs.GetCommit() < first-1 {
		// Every entry below the first was committed (only applied
		// entries are compacted away, and retention keeps what raft
		// has not applied), but the commit index is saved lazily
		// (SetHardState) while CompactTo and retention move the first
		// entry at once: after a kill the file may say less, which etcd
		// raft refuses at start ("commit is out of range").
		hs.Commit = new(first - 1)
	}
	return hs, s.state.confState(), nil
}

// FirstIndex returns the first entry's index (1 for a fresh log; one past
// the snapshot after one).
func (s *Store) FirstIndex() (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	if err := s.follow(); err != nil {
		return 0, err
	}
	s.idx.RLock()
	defer s.idx.RUnlock()
	first, _ := s.bounds()
	return first, nil
}

// LastIndex returns the last entry's index (FirstIndex-1 when empty).
func (s *Store) LastIndex() (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	s.idx.RLock()
	defer s.idx.RUnlock()
	_, last := s.bounds()
	return last, nil
}

// Snapshot returns the snapshot the log starts after: its metadata only,
// index FirstIndex-1 with its term and the ConfState. Data holds the
// partition offset where that index ends (8 bytes, big endian), the point
// a follower's partition must reach before it takes the entries after it.
func (s *Store) Snapshot() (*pb.Snapshot, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := s.follow(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	cs := s.state.confState()
	s.mu.Unlock()
	s.idx.RLock()
	defer s.idx.RUnlock()
	snap := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{ConfState: cs, Index: new(uint64(0)), Term: new(uint64(0))}}
	if len(s.anchors) > 0 {
		snap.Metadata.Index = new(s.first - 1)
		snap.Metadata.Term = new(s.anchors[0].term)
		snap.Data = encodeSnapData(s.anchors[0].offset)
	}
	return snap, nil
}

// readBatch returns the batch whose base offset is off, CRC-checked.
func (s *Store) readBatch(off int64) (record.Batch, error) {
	sl, err := s.log.Read(off, 1, seglog.ReadOptions{})
	if err != nil {
		return nil, err
	}
	defer sl.Close()
	if sl.FirstOffset() != off || sl.Len() < record.HeaderSize {
		return nil, fmt.Errorf("%w: %s: no batch starts at offset %d", ErrNotAnEntry, sl.File(), off)
	}
	data := make([]byte, sl.Len())
	if _, err := sl.ReadAt(data, 0); err != nil {
		return nil, err
	}
	b := record.Batch(data)
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %s at byte %d: %w", seglog.ErrCorrupt, sl.File(), sl.Position(), err)
	}
	return b, nil
}

// gone reports the errors of an offset the partition no longer holds
// (retention, or a truncation overtaking a read).
func gone(err error) bool {
	return errors.Is(err, seglog.ErrOffsetOutOfRange) || errors.Is(err, seglog.ErrTruncated) || errors.Is(err, seglog.ErrSliceTruncated)
}
