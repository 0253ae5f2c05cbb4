package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/epochcache"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// The interfaces a Store satisfies.
var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
)

// ErrClosed is returned by every method of a closed Store: vfs.ErrClosed,
// the one "closed" error of every layer.
var ErrClosed = vfs.ErrClosed

// Options configures a Store. Zero values are seglog's defaults.
type Options struct {
	// FS is the filesystem; nil is the real one.
	FS vfs.FS
	// SegmentBytes is the partition's segment size (segment.bytes).
	SegmentBytes int64
	// MaxBatchBytes bounds one batch, so one entry (max.message.bytes).
	MaxBatchBytes int
	// Logger receives the partition's recovery messages; nil is
	// slog.Default(), as for seglog.Options.
	Logger *slog.Logger

	// maxIndexBytes is the partition's MaxIndexBytes: tests make it small,
	// as the in-memory FS allocates each index's mapping whole.
	maxIndexBytes int
}

// Store is the raft log of one partition, kept in the partition's own
// segments (see the package doc). Its methods are safe for concurrent
// use: writes (StoreLogs, DeleteRange) are serialized; reads run beside
// them.
type Store struct {
	fs       vfs.FS
	dir      string
	log      *seglog.Log
	maxBatch int
	closed   atomic.Bool

	mu  sync.Mutex // serializes writes; under it, scratch buffers
	bld *record.Builder
	buf []byte
	val []byte
	// epochs is the leader-epoch cache (package epochcache; epochs.go).
	epochs *epochcache.Cache

	// idx guards the raft view of the partition. Writers hold mu first.
	idx      sync.RWMutex
	first    uint64 // the first index; the log is empty when last < first
	last     uint64
	lastTerm uint64
	anchors  []anchor // persisted; anchors[0].index == first
	gen      uint64   // moved by every delete: tables and offsets read before it are stale
	tables   map[uint64]*table
	// tableSize counts the offsets the tables hold.
	tableSize int
}

// Open opens (creating if needed) the partition in dir as a raft log: the
// seglog partition (recovered as seglog.Open recovers it, and synced on
// every append) and its raft-index checkpoint. The raft log's last entry is
// found by walking the batches after the last anchor.
func Open(dir string, opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	l, err := seglog.Open(dir, seglog.Options{
		FS: opts.FS,
		LogConfig: seglog.LogConfig{
			SegmentBytes:  opts.SegmentBytes,
			MaxBatchBytes: opts.MaxBatchBytes,
			MaxIndexBytes: opts.maxIndexBytes,
			// raft acknowledges entries only once StoreLogs returns.
			Sync: seglog.SyncAlways,
		},
		Logger: opts.Logger,
	})
	if err != nil {
		return nil, err
	}
	maxBatch := opts.MaxBatchBytes
	if maxBatch == 0 {
		maxBatch = seglog.DefaultMaxBatchBytes
	}
	s := &Store{fs: opts.FS, dir: dir, log: l, maxBatch: maxBatch, bld: record.NewBuilder(record.None), tables: make(map[uint64]*table)}
	if err := s.load(); err != nil {
		l.Close()
		return nil, err
	}
	if err := s.loadEpochs(); err != nil {
		l.Close()
		return nil, err
	}
	return s, nil
}

// load reads the anchors and finds the last entry. Anchors past the log
// end (a suffix delete that a crash interrupted after saving them, or
// entries a power loss took) are dropped; the first stays, at the end, as
// an empty log that starts there.
func (s *Store) load() error {
	anchors, err := loadAnchors(s.fs, s.indexPath())
	if err != nil {
		return err
	}
	end := s.log.EndOffset()
	k := len(anchors)
	for k > 1 && anchors[k-1].offset >= end {
		k--
	}
	changed := k != len(anchors)
	anchors = anchors[:k]
	if k == 1 && anchors[0].offset > end {
		anchors[0].offset = end
		changed = true
	}
	// Retention (or DeleteBefore) may have removed segments from below:
	// the raft log then starts at the first anchor the partition still
	// holds, which, as every segment's first batch is anchored, is the new
	// log start's. Entries between the start and that anchor, if its
	// segment's anchor was never saved, drop out of the raft view: raft
	// sends a snapshot for what it cannot read.
	if start := s.log.StartOffset(); k > 0 && anchors[0].offset < start {
		i := sort.Search(k, func(i int) bool { return anchors[i].offset >= start })
		if i == k {
			return fmt.Errorf("replica: %s: the partition starts at offset %d, past its last anchor (index %d at %d): its entries cannot be numbered", s.indexPath(), start, anchors[k-1].index, anchors[k-1].offset)
		}
		anchors, k, changed = anchors[i:], k-i, true
	}
	s.anchors = anchors
	if len(anchors) == 0 {
		return nil
	}
	a := anchors[k-1]
	offs, ep, err := s.walk(a.offset, ^uint64(0))
	if err != nil {
		return err
	}
	s.first = anchors[0].index
	s.last = a.index + uint64(len(offs)) - 1
	if len(offs) > 0 {
		s.tables[a.index] = &table{offs: offs}
		s.tableSize = len(offs)
		s.lastTerm = uint64(ep)
	} else if k > 1 {
		return fmt.Errorf("%w: %s: anchor %d at offset %d holds no batch", ErrNotAnEntry, s.indexPath(), a.index, a.offset)
	}
	if changed {
		return s.saveAnchors()
	}
	return nil
}

// Close closes the partition. Every call after it, Close included,
// answers ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return ErrClosed
	}
	return s.log.Close()
}

func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Log returns a read-only view of the partition, for reading it as a
// Kafka log: raft owns every write.
func (s *Store) Log() seglog.View { return s.log.View() }

// Dir returns the partition's directory.
func (s *Store) Dir() string { return s.dir }

// empty reports a raft log with no entries. Called with idx held.
func (s *Store) empty() bool { return len(s.anchors) == 0 || s.last < s.first }

// FirstIndex returns the first index stored, 0 when the log is empty.
func (s *Store) FirstIndex() (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	s.idx.RLock()
	defer s.idx.RUnlock()
	if s.empty() {
		return 0, nil
	}
	return s.first, nil
}

// LastIndex returns the last index stored, 0 when the log is empty.
func (s *Store) LastIndex() (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	s.idx.RLock()
	defer s.idx.RUnlock()
	if s.empty() {
		return 0, nil
	}
	return s.last, nil
}

// IsMonotonic reports true: entries are consecutive batches, so raft
// empties the log after installing a snapshot instead of leaving gaps.
func (s *Store) IsMonotonic() bool { return true }

// GetLog fills out with the entry at index, or returns exactly
// raft.ErrLogNotFound (raft compares it with ==) when the log does not
// hold it. A command's Data is its batch as stored: base offset and
// partitionLeaderEpoch stamped. Other errors are the read's (damage
// matching seglog.ErrCorrupt, I/O).
func (s *Store) GetLog(index uint64, out *raft.Log) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	b, err := s.readStable(index)
	if err != nil {
		return notFound(err)
	}
	return decodeEntry(b, index, out)
}

// notFound turns the errors of an offset the log no longer holds into
// raft.ErrLogNotFound itself.
func notFound(err error) error {
	if errors.Is(err, raft.ErrLogNotFound) || errors.Is(err, seglog.ErrOffsetOutOfRange) || errors.Is(err, seglog.ErrTruncated) || errors.Is(err, seglog.ErrSliceTruncated) {
		return raft.ErrLogNotFound
	}
	return err
}

// readStable reads the batch of entry index. A delete that moves gen
// while the batch is read may have replaced the bytes at its offset, so
// the read is made again against the new view; deletes are rare (a
// follower's conflict, a snapshot), and if they keep overtaking it, the
// last try holds them off.
func (s *Store) readStable(index uint64) (record.Batch, error) {
	for range 8 {
		b, gen, err := s.readEntry(index)
		s.idx.RLock()
		moved := s.gen != gen
		s.idx.RUnlock()
		if !moved {
			return b, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	b, _, err := s.readEntry(index)
	return b, err
}

// testHookLocated, when set by a test, runs between finding an entry's
// offset and reading its batch: where a delete can overtake a read.
var testHookLocated func()

// readEntry reads the CRC-checked batch of entry index.
func (s *Store) readEntry(index uint64) (record.Batch, uint64, error) {
	off, gen, err := s.locate(index)
	if err != nil {
		return nil, gen, err
	}
	if testHookLocated != nil {
		testHookLocated()
	}
	b, err := s.readBatch(off)
	return b, gen, err
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

// HighWatermark returns the offset a partition serves consumers up to when
// commitIndex is raft's commit index: the end offset of the batch of that
// entry. One index below the first is the first entry's base offset (all
// before it is committed, as after a snapshot). raft.ErrLogNotFound when
// the log holds neither.
func (s *Store) HighWatermark(commitIndex uint64) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	s.idx.RLock()
	if !s.empty() && commitIndex+1 == s.first {
		off := s.anchors[0].offset
		s.idx.RUnlock()
		return off, nil
	}
	s.idx.RUnlock()
	b, err := s.readStable(commitIndex)
	if err != nil {
		return 0, notFound(err)
	}
	return b.NextOffset(), nil
}
