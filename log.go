// Package seglog is an embeddable storage engine for Kafka-style partition
// logs. A Log is one partition directory: an ordered set of segments, each a
// .log file of RecordBatch v2 batches with a memory-mapped sparse offset
// index and time index, byte-compatible with Apache Kafka's layout.
//
// Start with Open, which creates or recovers a log in a directory, then
// Log.Append (or Log.AppendBatch for a producer's wire batch) to write and
// Log.Records, Log.Read or Log.Follow to read; Close it when done. Options
// holds the topic config (LogConfig) and the embedding hooks.
//
// One goroutine at a time appends (Append and AppendBatch serialize inside
// the Log); any number of goroutines read concurrently. Readers never see a
// partial batch: the end offset is published only after a batch's bytes are
// written. Nothing is durable before Log.Sync, Close or the SyncMode says
// so. See docs/design.md for the write path, recovery and durability.
//
// Neighbouring packages: record encodes and decodes the batches; store
// keeps many partitions in one Kafka log.dir (a broker's data directory) and
// raftlog keeps a Raft log on top of it; cleaner runs retention and
// compaction over them; server speaks Kafka's protocol; fsck checks a
// directory offline; vfs is the filesystem seam for tests. An embedder who
// needs one log uses this package alone; one who needs topics uses store.
package seglog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/sendfile"
	"github.com/seglog/seglog/vfs"
)

// Log is an open partition log, returned by Open. Its methods are safe for
// concurrent use. A Log holds its directory's lock and open files until
// Close; View gives a handle that can read it but not change it.
type Log struct {
	dir    string
	fs     vfs.FS
	opts   Options
	logger *slog.Logger
	lock   io.Closer
	cache  *index.Cache
	// logMaps bounds the .log mappings segments read batch headers from.
	logMaps *index.Cache
	// files bounds the sealed segments' open .log descriptors.
	files *index.Cache

	// The Log's locks, in the order they are taken (a goroutine holding
	// one takes only locks further down the list; lockrank.go gives each
	// its rank, and a build with the seglog_lockrank tag checks the order
	// at run time):
	//
	//  1. swapMu: serializes replaceSegments with the other changes to sealed
	//     segments (DeleteBefore, TruncateTo, RestartAt, Close), not with
	//     appends.
	//  2. ckptMu: serializes writes of the recovery-point checkpoint.
	//  3. mu: serializes writers and every change to the segment set; guards
	//     the writer's state grouped under it. Readers never take it.
	//  4. flushMu: held while segments are flushed, and by TruncateTo, which
	//     may unseal one.
	//  5. ro.mu (a read-only Log only): serializes the view's refreshes and
	//     Close.
	//  6. segs: the segment set. Writers hold mu and then segs exclusively for
	//     the short moment they change the set; readers take it shared to pick
	//     a segment and a reference on it.
	//
	// After them come the leaf locks of the Log's parts (commit.mu after mu,
	// truncations, delayed), which take no Log lock while held.
	//
	// swapMu and ckptMu serialize operations; they guard no field of
	// their own.
	swapMu mutex[rankSwapT]
	ckptMu mutex[rankCkptT]

	// mu guards the writer's state.
	mu struct {
		mutex[rankMuT]
		closed        bool
		recoveryPoint int64 // offsets below it are known to be on disk
		// next is the offset the next batch gets. It runs ahead of the
		// published end while SyncAlways batches wait, deferred, for the
		// group commit that writes them (see publishLocked).
		next         int64
		dirtyBytes   int64 // appended since the last flush, for SyncPeriodic
		activeJitter time.Duration
	}

	// flushMu keeps a segment's sealed state still while it is flushed
	// (TruncateTo unseals one); it guards no field of its own.
	flushMu mutex[rankFlushT]

	// segs guards the segment set.
	segs struct {
		rwMutex[rankSegsT]
		tree *btree.BTreeG[segItem]
		// active is the segment appends go to (a read-only view's last
		// segment). It is changed with mu and segs both held, so either
		// one is enough to read it.
		active *segment.Segment
	}

	// limits, once SetLimits is called, replace Options' SegmentBytes,
	// MaxBatchBytes and Compression (lim).
	limits atomic.Pointer[Limits]

	start atomic.Int64 // first offset that may be read
	end   atomic.Int64 // next offset to assign; published after the bytes

	commit      groupCommit
	failure     atomic.Pointer[error] // set by a failed fsync: appends refused until reopen
	flusher     *flusher
	flushTarget atomic.Int64 // the flusher makes offsets below this durable
	// dirSyncPending says a roll created a segment and left its directory
	// entry's sync to the next flush of segments (flushSegments), which
	// does it before any sync that could make the segment's data durable.
	dirSyncPending atomic.Bool
	// sealedSyncs counts sealed segments being flushed (flushSegments):
	// the active segment reserves no blocks meanwhile (HoldReserve).
	sealedSyncs atomic.Int32

	sender      sendfile.Sender // counts what Slices sent zero-copy and by copying
	truncations truncationLog
	delayed     delayedDeletes // file.delete.delay.ms holds (deletedelay.go)
	// everCompacted caches a true compacted() (missing.go): gaps between
	// batches are then compaction's, not missing data.
	everCompacted atomic.Bool
	// recovered counts the segments Open's load scanned (recoverSegment),
	// for Options.Stats; written only before Open returns.
	recovered int

	ro *readOnly // nil unless opened with Options.ReadOnly (readonly.go)
}

// newLog returns a Log of dir with no segments yet, for Open to load.
func newLog(dir string, fs vfs.FS, opts Options, lock io.Closer) *Log {
	l := &Log{
		dir:     dir,
		fs:      fs,
		opts:    opts,
		logger:  opts.Logger,
		lock:    lock,
		cache:   index.NewCache(opts.MaxMappedIndexes),
		logMaps: index.NewCache(opts.MaxMappedIndexes),
		files:   index.NewCache(opts.MaxOpenSegmentFiles),
	}
	l.segs.tree = newSegmentTree()
	return l
}

// AppendInfo describes a stored batch.
type AppendInfo struct {
	// FirstOffset and LastOffset are the offsets assigned to the batch's
	// first and last records.
	FirstOffset, LastOffset int64
	// MaxTimestamp is the batch's max timestamp as stored (the append time
	// under LogAppendTime).
	MaxTimestamp int64
	// Bytes is the stored batch's size.
	Bytes int
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// StartOffset returns the first offset of the log: records below it are
// gone (retention, truncation) or never existed.
func (l *Log) StartOffset() int64 { return l.start.Load() }

// EndOffset returns the offset the next appended record will get; the log
// holds [StartOffset, EndOffset).
func (l *Log) EndOffset() int64 { return l.end.Load() }

// Size returns the total bytes of the log's segment files.
func (l *Log) Size() int64 {
	l.segs.RLock()
	defer l.segs.RUnlock()
	var n int64
	l.segs.tree.Ascend(func(it segItem) bool {
		n += it.seg.Size()
		return true
	})
	return n
}

// NumSegments returns how many segments the log has.
func (l *Log) NumSegments() int {
	l.segs.RLock()
	defer l.segs.RUnlock()
	return l.segs.tree.Len()
}

// RecoveryPoint returns the offset below which every record is known to be
// on disk.
func (l *Log) RecoveryPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.recoveryPoint
}

func (l *Log) segmentOptions() segment.Options {
	return segment.Options{
		IndexIntervalBytes: l.opts.IndexIntervalBytes,
		MaxIndexBytes:      l.opts.MaxIndexBytes,
		// The Log checks a producer's batch against its limits of the
		// moment (and a replica's not at all: AppendEpochBatch) before
		// it reaches a segment, which must not refuse what they allow:
		// one made under an older, lower limit refused every larger
		// batch after max.message.bytes was raised, until it rolled.
		MaxBatchBytes:  segment.MaxStoredEntry,
		IndexCache:     l.cache,
		LogMapCache:    l.logMaps,
		FileCache:      l.files,
		Logger:         l.logger,
		ReserveBytes:   min(l.lim().SegmentBytes, reserveChunk),
		HoldReserve:    l.syncingSealed,
		WriteBackBytes: writeBackChunk,
		Preallocate:    l.preallocateBytes(),
		Now:            l.opts.Clock.Now,
	}
}

// syncingSealed is segment.Options.HoldReserve: whether a sealed segment's
// flush is under way.
func (l *Log) syncingSealed() bool { return l.sealedSyncs.Load() > 0 }

// preallocateBytes is segment.Options.Preallocate: the roll size when
// Options.Preallocate is set.
func (l *Log) preallocateBytes() int64 {
	if !l.opts.Preallocate {
		return 0
	}
	return l.lim().SegmentBytes
}

// reserveChunk is how far ahead of its appends the active segment reserves
// disk blocks (segment.Options.ReserveBytes): large enough that the
// fallocate call (about 10 µs) is rare, small enough that the space held
// past the end of each partition's active segment stays modest.
const reserveChunk = 16 << 20

// writeBackChunk is how many bytes an active segment appends between two
// starts of their writeback (segment.Options.WriteBackBytes); 0 turns it
// off. It is off because it did not pay here: with 8 MiB (issue 32,
// docs/benchmarks.md "Issue 32 (seventh session)") the appends ran at a
// lower rate and CPU ratio against the floor and with no better p99.9 or
// longest stall, the writeback's page submission being paid inside the
// write rounds whatever goroutine starts it. A one-line change to measure
// again on another disk.
const writeBackChunk = 0

// segItem is a segment in the tree, keyed by its base offset; a bare base
// offset serves as a search key.
type segItem struct {
	base int64
	seg  *segment.Segment
}

func probe(base int64) segItem { return segItem{base: base} }

func newSegmentTree() *btree.BTreeG[segItem] {
	return btree.NewG(8, func(a, b segItem) bool { return a.base < b.base })
}

// floorSegment returns the segment holding offset: the one with the largest
// base offset <= offset. The caller holds segs.
func (l *Log) floorSegment(offset int64) *segment.Segment {
	var found *segment.Segment
	l.segs.tree.DescendLessOrEqual(probe(offset), func(it segItem) bool {
		found = it.seg
		return false
	})
	return found
}

// nextSegment returns the segment after the one based at base, or nil. The
// caller holds segs.
func (l *Log) nextSegment(base int64) *segment.Segment {
	var found *segment.Segment
	l.segs.tree.AscendGreaterOrEqual(probe(base+1), func(it segItem) bool {
		found = it.seg
		return false
	})
	return found
}

// acquireFloor returns the segment holding offset with a reference taken, or
// nil. The reference keeps its files open even if the segment is removed
// from the log meanwhile.
func (l *Log) acquireFloor(offset int64) *segment.Segment {
	l.segs.RLock()
	defer l.segs.RUnlock()
	s := l.floorSegment(offset)
	if s == nil {
		if it, ok := l.segs.tree.Min(); ok {
			s = it.seg
		}
	}
	if s != nil && !s.Acquire() {
		return nil
	}
	return s
}

// writable reports why appends are refused, if they are. Called with mu.
func (l *Log) writable() error {
	if l.ro != nil {
		return ErrReadOnly
	}
	if l.mu.closed {
		return ErrClosed
	}
	if p := l.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records a failed fsync: from now on appends are refused, because the
// kernel may have dropped dirty pages that a retry would then report as
// written.
func (l *Log) fail(err error) error {
	wrapped := fmt.Errorf("%w: %w", ErrSyncFailed, err)
	l.failure.CompareAndSwap(nil, &wrapped)
	return *l.failure.Load()
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func (l *Log) path(name string) string { return filepath.Join(l.dir, name) }
