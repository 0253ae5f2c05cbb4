// Package seglog is an embeddable storage engine for Kafka-style partition
// logs. A Log is one partition directory: an ordered set of segments, each a
// .log file of RecordBatch v2 batches with a memory-mapped sparse offset
// index and time index, byte-compatible with Apache Kafka's layout.
//
// One goroutine at a time appends (Append and AppendBatch serialize inside
// the Log); any number of goroutines read concurrently. Readers never see a
// partial batch: the end offset is published only after a batch's bytes are
// written. See docs/design.md for the write path, recovery and durability.
package seglog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/sendfile"
	"github.com/seglog/seglog/vfs"
)

// Log is an open partition log. Its methods are safe for concurrent use.
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

	// mu serializes writers and every change to the segment set; readers
	// never take it.
	mu sync.Mutex
	// swapMu serializes replaceSegments with the other changes to sealed
	// segments (DeleteBefore, TruncateTo, RestartAt, Close), not with
	// appends; taken before ckptMu and mu, never after them.
	swapMu sync.Mutex
	// ckptMu serializes writes of the recovery-point checkpoint; taken
	// before mu, never after it.
	ckptMu sync.Mutex
	// flushMu is held while segments are flushed and by TruncateTo, which
	// may unseal one; taken after mu, never before it.
	flushMu       sync.Mutex
	closed        bool
	active        *segment.Segment
	recoveryPoint int64 // offsets below it are known to be on disk
	// next is the offset the next batch gets. It runs ahead of the
	// published end while SyncAlways batches wait, deferred, for the
	// group commit that writes them (see publishLocked).
	next         int64
	dirtyBytes   int64 // appended since the last flush, for SyncPeriodic
	activeJitter time.Duration

	// segMu guards segs. Writers hold mu and then segMu exclusively for the
	// short moment they change the set; readers take segMu shared to pick a
	// segment and a reference on it.
	segMu sync.RWMutex
	segs  *btree.BTreeG[segItem]

	// limits, once SetLimits is called, replace Options' SegmentBytes,
	// MaxBatchBytes and Compression (lim).
	limits atomic.Pointer[Limits]

	start atomic.Int64 // first offset that may be read
	end   atomic.Int64 // next offset to assign; published after the bytes

	commit      groupCommit
	failure     atomic.Pointer[error] // set by a failed fsync: appends refused until reopen
	flusher     *flusher
	flushTarget atomic.Int64 // the flusher makes offsets below this durable

	sender      sendfile.Sender // counts what Slices sent zero-copy and by copying
	truncations truncationLog
	delayed     delayedDeletes // file.delete.delay.ms holds (deletedelay.go)
	// everCompacted caches a true compacted() (missing.go): gaps between
	// batches are then compaction's, not missing data.
	everCompacted atomic.Bool

	ro *readOnlyState // nil unless opened with Options.ReadOnly (readonly.go)
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
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	var n int64
	l.segs.Ascend(func(it segItem) bool {
		n += it.seg.Size()
		return true
	})
	return n
}

// NumSegments returns how many segments the log has.
func (l *Log) NumSegments() int {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.segs.Len()
}

// RecoveryPoint returns the offset below which every record is known to be
// on disk.
func (l *Log) RecoveryPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recoveryPoint
}

func (l *Log) segmentOptions() segment.Options {
	return segment.Options{
		IndexIntervalBytes: l.opts.IndexIntervalBytes,
		MaxIndexBytes:      l.opts.MaxIndexBytes,
		MaxBatchBytes:      l.readBatchBytes(),
		IndexCache:         l.cache,
		LogMapCache:        l.logMaps,
		FileCache:          l.files,
		Logger:             l.logger,
		ReserveBytes:       min(l.lim().SegmentBytes, reserveChunk),
		Preallocate:        l.preallocateBytes(),
		Now:                l.opts.Clock.Now,
	}
}

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
// base offset <= offset. The caller holds segMu.
func (l *Log) floorSegment(offset int64) *segment.Segment {
	var found *segment.Segment
	l.segs.DescendLessOrEqual(probe(offset), func(it segItem) bool {
		found = it.seg
		return false
	})
	return found
}

// nextSegment returns the segment after the one based at base, or nil. The
// caller holds segMu.
func (l *Log) nextSegment(base int64) *segment.Segment {
	var found *segment.Segment
	l.segs.AscendGreaterOrEqual(probe(base+1), func(it segItem) bool {
		found = it.seg
		return false
	})
	return found
}

// acquireFloor returns the segment holding offset with a reference taken, or
// nil. The reference keeps its files open even if the segment is removed
// from the log meanwhile.
func (l *Log) acquireFloor(offset int64) *segment.Segment {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	s := l.floorSegment(offset)
	if s == nil {
		if it, ok := l.segs.Min(); ok {
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
	if l.closed {
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
