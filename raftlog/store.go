package raftlog

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/embed"
	"github.com/seglog/seglog/internal/epochcache"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// The interfaces a Store satisfies.
var (
	_ raft.LogStore               = (*Store)(nil)
	_ raft.MonotonicLogStore      = (*Store)(nil)
	_ raft.CommitTrackingLogStore = (*Store)(nil)
	_ raft.StableStore            = (*Store)(nil)
)

// Names inside a Store's directory.
const (
	// PartitionDir is the seglog partition, named as Kafka names
	// partition 0 of a topic "raft".
	PartitionDir = layout.RaftLogPartition
	// StableFile holds the StableStore's keys (term and vote), as KRaft's
	// quorum-state file does.
	StableFile = layout.RaftStableFile
	// tailFile holds a batch being rewritten by a suffix delete.
	tailFile = PartitionDir + ".tail"
)

// ErrClosed is returned by every method of a closed Store, and by the
// reads of the view its Log method returned. It is vfs.ErrClosed, the one
// "closed" error of every layer (seglog.ErrClosed, store.ErrClosed).
var ErrClosed = vfs.ErrClosed

// DefaultSegmentBytes is the segment size when Options leaves it zero:
// raft-wal's default, small enough that compaction after a snapshot
// frees space by deleting whole segments.
const DefaultSegmentBytes = 64 << 20

// Options configures a Store. Zero values are defaults.
type Options struct {
	// FS is the filesystem; nil is the real one.
	FS vfs.FS
	// SegmentBytes is the partition's segment size. Default 64 MiB.
	SegmentBytes int64
	// MaxBatchBytes bounds one stored batch; a StoreLogs call larger than
	// this is split into several batches. Default min(SegmentBytes, 8 MiB).
	// An entry whose data and extensions exceed it less 169 bytes of
	// framing is refused.
	MaxBatchBytes int
	// Logger receives the partition's recovery messages (nil means
	// slog.Default(), as for seglog.Options) and the warning that one
	// quorum-state slot is unreadable (nil drops it).
	Logger *slog.Logger
}

// Store is a raft log, stable store and commit-index tracker kept in a
// seglog partition. Its methods are safe for concurrent use; writes
// (StoreLogs, DeleteRange) are serialized, reads run beside them.
//
// Once Close has begun, every method that answers an error answers
// ErrClosed and writes nothing (Dir and IsMonotonic, which read nothing,
// still answer). A call racing with Close either completes before Close
// closes anything or answers ErrClosed: nothing is written once Close has
// returned.
type Store struct {
	fs   vfs.FS
	dir  string
	log  *seglog.Log
	opts Options

	// closed is set by Close while it holds both mu and stableMu, so a
	// write that checks it under its lock cannot start after Close; reads
	// check it without a lock.
	closed atomic.Bool

	mu     sync.Mutex // serializes writes and the epoch cache
	epochs *epochcache.Cache
	staged atomic.Uint64 // commit index to store with the next StoreLogs
	// commitAtOpen is the commit index the last batch carried at Open.
	commitAtOpen uint64

	cache batchCache

	stableMu sync.Mutex
	stable   stableState

	hdrs []record.Header // encode scratch, under mu
	recs []record.Record
}

// Open opens (creating if needed) the Store in dir. It finishes a suffix
// delete that a crash interrupted and makes the leader-epoch checkpoint
// agree with the batches (rebuilding it from them if it is missing,
// damaged or behind). A dir that is a log partition itself, or an absent
// one inside a partition, is refused with a *NotAStoreError
// (ErrNotAStore) and nothing is written.
func Open(dir string, opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.SegmentBytes == 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.MaxBatchBytes == 0 {
		opts.MaxBatchBytes = int(min(opts.SegmentBytes, 8<<20))
	}
	if err := checkStoreDir(opts.FS, dir); err != nil {
		return nil, err
	}
	if err := opts.FS.MkdirAll(dir); err != nil {
		return nil, err
	}
	part := filepath.Join(dir, PartitionDir)
	// The raft log's writer: a writable Open of its partition by anyone
	// else is refused (seglog.ErrInRaftLog).
	l, err := seglog.Open(part, embed.WithHooks(seglog.Options{
		FS: opts.FS,
		LogConfig: seglog.LogConfig{
			SegmentBytes:  opts.SegmentBytes,
			MaxBatchBytes: opts.MaxBatchBytes,
			// Every StoreLogs is on disk when it returns: raft
			// acknowledges entries to the leader only after storing them.
			Sync: seglog.SyncAlways,
			// A segment's blocks reserved whole when it is created, as
			// raft-wal does: an append then does not grow the file, so
			// its fdatasync commits no new size (issue 29: what a single
			// small StoreLogs paid beyond raft-wal's).
			Preallocate: true,
		},
		Logger: opts.Logger,
	}, embed.Hooks{RaftLog: true}).(seglog.Options))
	if err != nil {
		return nil, err
	}
	s := &Store{fs: opts.FS, dir: dir, log: l, opts: opts}
	s.epochs = epochcache.New(opts.FS, part)
	fail := func(err error) (*Store, error) {
		l.Close()
		return nil, err
	}
	if err := s.loadStable(); err != nil {
		return fail(err)
	}
	if err := s.finishTail(); err != nil {
		return fail(err)
	}
	if err := s.reconcileEpochs(); err != nil {
		return fail(err)
	}
	if !s.empty() {
		b, err := s.readBatch(l.EndOffset() - 1)
		if err != nil {
			return fail(err)
		}
		// The commit index is read in the loop body: a record's headers
		// are reused once it returns.
		for r, err := range b.Records() {
			if err != nil {
				return fail(fmt.Errorf("raftlog: reading the last batch: %w", err))
			}
			s.commitAtOpen = commitOf(r)
		}
	}
	return s, nil
}

// Close waits for the write under way (StoreLogs, DeleteRange, Set or
// SetUint64), then closes the partition. Every call after it, Close
// included, answers ErrClosed and writes nothing: a second Close is
// refused as seglog.Log.Close and store.Store.Close refuse it (raft-wal's
// answers nil), and it closes nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stableMu.Lock()
	was := s.closed.Swap(true)
	if !was {
		s.stable.closeFile()
	}
	s.stableMu.Unlock()
	if was {
		return ErrClosed
	}
	s.cache.invalidate()
	return s.log.Close()
}

// checkOpen answers ErrClosed once Close has begun.
func (s *Store) checkOpen() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Log returns a read-only view of the partition, for reading it as a
// Kafka log (Read, Records, OffsetForTime): raft owns every write, so the
// view offers none. Once the Store is closed, the view's reads (Read,
// Records, Follow, OffsetForTime) answer ErrClosed, whether the view was
// taken before or after Close; its bounds keep the values they had.
func (s *Store) Log() seglog.View { return s.log.View() }

// Dir returns the Store's directory.
func (s *Store) Dir() string { return s.dir }

// empty reports a log with no entries: start and end offsets meet.
func (s *Store) empty() bool { return s.log.StartOffset() == s.log.EndOffset() }

// FirstIndex returns the first index stored, 0 when the log is empty.
func (s *Store) FirstIndex() (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	start, end := s.log.StartOffset(), s.log.EndOffset()
	if start == end {
		return 0, nil
	}
	return toIndex(start), nil
}

// LastIndex returns the last index stored, 0 when the log is empty.
func (s *Store) LastIndex() (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	start, end := s.log.StartOffset(), s.log.EndOffset()
	if start == end {
		return 0, nil
	}
	return toIndex(end - 1), nil
}

// IsMonotonic reports true: entries are dense offsets, so raft empties
// the log after installing a snapshot instead of leaving gaps.
func (s *Store) IsMonotonic() bool { return true }

// TermAt returns the term of the entry at index from the leader-epoch
// cache, without reading its batch; raft.ErrLogNotFound if there is none.
func (s *Store) TermAt(index uint64) (uint64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	off := toOffset(index)
	if index == 0 || off < s.log.StartOffset() || off >= s.log.EndOffset() {
		return 0, raft.ErrLogNotFound
	}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	ep := s.epochs.EpochAt(off)
	s.mu.Unlock()
	if ep < 0 {
		return 0, raft.ErrLogNotFound
	}
	return uint64(ep), nil
}

// readBatch returns the stored batch holding offset, CRC-checked.
func (s *Store) readBatch(offset int64) (record.Batch, error) { return s.readBatchInto(offset, nil) }

// reconcileEpochs makes the leader-epoch checkpoint match the log: entries
// at or past the end (an epoch assigned just before a crash) and below the
// start go, and if the newest entry is not the last batch's epoch the
// cache is rebuilt by reading every batch header.
func (s *Store) reconcileEpochs() error {
	ok, err := s.epochs.Load()
	if err != nil {
		return err
	}
	if s.empty() {
		return s.epochs.Clear()
	}
	start, end := s.log.StartOffset(), s.log.EndOffset()
	if ok {
		if err := s.epochs.TruncateFromEnd(end); err != nil {
			return err
		}
		if err := s.epochs.TruncateFromStart(start); err != nil {
			return err
		}
		last, err := s.readBatch(end - 1)
		if err != nil {
			return err
		}
		e := s.epochs.Entries()
		if len(e) > 0 && e[0].StartOffset <= start && e[len(e)-1].Epoch == last.PartitionLeaderEpoch() && e[len(e)-1].StartOffset <= last.BaseOffset() {
			return nil
		}
	}
	return s.rebuildEpochs()
}

// rebuildEpochs derives the cache from the batches' leader epochs.
func (s *Store) rebuildEpochs() error {
	var entries []layout.EpochLine
	off, end := s.log.StartOffset(), s.log.EndOffset()
	for off < end {
		b, err := s.readBatch(off)
		if err != nil {
			return err
		}
		ep := b.PartitionLeaderEpoch()
		if n := len(entries); n == 0 || ep > entries[n-1].Epoch {
			entries = append(entries, layout.EpochLine{Epoch: ep, StartOffset: max(b.BaseOffset(), off)})
		} else if ep < entries[n-1].Epoch {
			return fmt.Errorf("%w: batch at offset %d has term %d after term %d", seglog.ErrCorrupt, b.BaseOffset(), ep, entries[n-1].Epoch)
		}
		off = b.NextOffset()
	}
	return s.epochs.Replace(entries)
}

// ErrMiddleRange is DeleteRange's refusal of a range strictly inside the
// log (neither a prefix nor a suffix), which raft never asks for: a log
// with a hole in it is not a raft log. Nothing is deleted.
var ErrMiddleRange = errors.New("raftlog: only a prefix or a suffix of the log may be deleted")
