package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/defaults"
	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Defaults applied to zero Options fields (Kafka's defaults).
const (
	// DefaultIndexIntervalBytes is Kafka's index.interval.bytes.
	DefaultIndexIntervalBytes = defaults.IndexIntervalBytes
	// DefaultMaxIndexBytes is Kafka's segment.index.bytes.
	DefaultMaxIndexBytes = defaults.MaxIndexBytes
)

// Options configures a Segment. The zero value means Kafka's defaults.
type Options struct {
	// IndexIntervalBytes is index.interval.bytes: an index entry is added
	// for a batch when more than this many bytes were appended since the
	// last entry. Zero means 4096; a negative value means Kafka's 0 (index
	// every batch but the first).
	IndexIntervalBytes int
	// MaxIndexBytes is segment.index.bytes, the preallocated size of an
	// active segment's index files; it bounds the entries and so is a roll
	// trigger. Zero means 10 MiB.
	MaxIndexBytes int
	// MaxBatchBytes is the largest entry (batch) accepted by Append. Zero
	// means record.DefaultMaxBatchSize (Kafka's max.message.bytes,
	// 1,048,588). It bounds appends only: reads and recovery accept any
	// stored entry that fits in the file (see MaxStoredEntry).
	MaxBatchBytes int
	// IndexCache bounds how many sealed indexes are mapped at once across a
	// log; nil means unbounded (still mapped lazily).
	IndexCache *index.Cache
	// LogMapCache, when set, lets the segment read batch headers through a
	// read-only mapping of its .log (index.LogMap) instead of a pread each,
	// and bounds how many segments' .log files are mapped at once across a
	// log. Nil means no mapping: every header is read with pread.
	LogMapCache *index.Cache
	// FileCache, when set, bounds how many sealed segments keep their .log
	// descriptor open across a log: an idle one is closed and reopened on
	// its next use (index.LazyFile). Nil keeps every opened .log open
	// until Close.
	FileCache *index.Cache
	// Logger receives warnings (recovery truncations, unexpected damage met
	// by lazy loads). Nil means slog.Default().
	Logger *slog.Logger
	// ReadOnly opens sealed segments' .log files read-only, for tools
	// working on directories they may not modify; such a segment cannot be
	// unsealed, recovered or truncated. Active segments are always opened
	// read-write. By default every .log is opened read-write, so a sealed
	// segment can become active again without reopening its descriptor
	// (which readers may be using).
	ReadOnly bool
	// ReserveBytes, when positive, makes an active segment reserve disk
	// blocks for its .log this many bytes at a time ahead of its appends
	// (vfs.File.Reserve: fallocate with FALLOC_FL_KEEP_SIZE), as Kafka's
	// log.preallocate and pebble's WAL preallocation do. An append into
	// reserved blocks skips the filesystem's block allocation, about a
	// quarter of what a page-cache write costs on ext4; the file's size,
	// and so everything a reader or recovery sees, is unchanged. Sealing or
	// closing the segment releases what was reserved past its end.
	ReserveBytes int64
	// HoldReserve, when set, is asked before each reservation; while it
	// says true the segment reserves nothing and its appends go to blocks
	// the filesystem allocates as it writes them back. The log holds
	// reservations while it syncs a sealed segment: on ext4 the fallocate
	// waits for the journal behind that fdatasync (up to 0.7 s measured,
	// with the appender and the file's lock held), where a write into
	// unreserved blocks only costs a little more.
	HoldReserve func() bool
	// WriteBackBytes, when positive, makes an active segment start the
	// writeback of its .log's new pages every this many bytes of appends
	// (vfs.WriteBack: sync_file_range with SYNC_FILE_RANGE_WRITE), as
	// RocksDB's bytes_per_sync does, so the fdatasync that seals the
	// segment finds little left to write and does not hold the
	// filesystem's journal, and with it the appends, for long. It makes
	// nothing durable and changes nothing a reader or recovery sees.
	WriteBackBytes int64
	// Preallocate, when positive, makes an active segment extend its .log
	// to this many bytes with vfs.File.Preallocate (fallocate mode 0) when
	// it is created and before its first append after it was opened,
	// unsealed or cut, as Kafka's log.preallocate, etcd's WAL and raft-wal
	// do: an fdatasync after an append into the allocated range has no
	// file size to commit. The logical end stays in memory; sealing and
	// closing trim the file to it (Close also syncs the trim), and
	// recovery treats a tail of zero bytes as the end of the file (see
	// RecoverResult.ZeroTailBytes), so an untrimmed file left by a crash
	// is neither damage nor data. A segment with a batch past this size
	// simply grows beyond it.
	Preallocate int64
	// Now is the clock for the segment's creation time, which the age-based
	// roll check uses when the first batch has no timestamp. Nil means
	// time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	switch {
	case o.IndexIntervalBytes == 0:
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	case o.IndexIntervalBytes < 0:
		o.IndexIntervalBytes = 0
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = record.DefaultMaxBatchSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Segment is one .log file with its offset and time indexes. See the package
// documentation for the concurrency and lifetime rules.
type Segment struct {
	fs   vfs.FS
	dir  string
	base int64
	opts Options

	// Files. Open of a sealed segment does no I/O at all: the files are
	// opened on first use (filesOpen publishes them, openMu serializes the
	// opening), so a log with thousands of sealed segments opens, and
	// closes, in a few milliseconds (Kafka's KAFKA-7283 and KAFKA-9373).
	openMu    sync.Mutex
	filesOpen atomic.Bool
	closed    bool // guarded by openMu
	log       vfs.File
	offIdx    *index.OffsetIndex
	timeIdx   *index.TimeIndex
	logPath   atomic.Pointer[string] // changes on Remove
	// idxPath and timePath are where unopened index files are; guarded by
	// openMu (an opened index tracks its own path).
	idxPath, timePath string

	// Published state, read by concurrent readers.
	size   atomic.Int64 // bytes of complete batches in .log
	next   atomic.Int64 // offset after the last batch; -1 until known
	maxTS  atomic.Int64 // running max batch timestamp; -1 if none
	sealed atomic.Bool
	// sealMu guards sealPending: a SealDeferred whose work on the files
	// (finishSeal) is not done yet. Flush finishes it, from the flusher,
	// while the writer may Unseal (truncation) or Close.
	sealMu      sync.Mutex
	sealPending bool

	// Tail state: known from creation for new segments, computed by
	// loadTail for opened ones. loadMu serializes the lazy load of sealed
	// segments by concurrent readers; the writer only touches these fields
	// once tailLoaded is set.
	loadMu         sync.Mutex
	tailLoaded     atomic.Bool
	maxTSOffset    int64 // last offset of the batch that first reached maxTS
	sinceLastEntry int64 // bytes appended since the last offset-index entry

	// Deferred appends (AppendDeferred), writer only; broken is set when
	// writing them failed.
	pend   pending
	broken bool

	// lmap maps the .log for header reads (Options.LogMapCache); nil
	// without a cache.
	lmap *index.LogMap
	// lazy is log as an index.LazyFile when Options.FileCache is set (nil
	// otherwise): evictable while the segment is sealed and not removed.
	lazy *index.LazyFile
	// evictMu orders the changes of lazy's evictability (mayClose,
	// holdOpen) with one another; evictOK says a sync covered every write
	// made through the descriptor while the segment was sealed.
	evictMu sync.Mutex
	evictOK bool

	// reserved is where the blocks reserved ahead of the appends end
	// (Options.ReserveBytes); writer only. Zero when nothing is reserved.
	reserved int64
	// writtenBack is where the writeback started by Options.WriteBackBytes
	// has reached; writer only.
	writtenBack int64
	// writeBackBusy says a writeback started by maybeWriteBack is still
	// running; writeBacks counts them, for closeLog to wait.
	writeBackBusy atomic.Bool
	writeBacks    sync.WaitGroup
	// preallocated says the .log was extended to Options.Preallocate and
	// not trimmed since; writer only.
	preallocated bool
	// trimPending says the .log was trimmed from its preallocated size
	// since the last Flush (TrimPending).
	trimPending atomic.Bool

	// created is when the segment was made, or opened, or emptied by a
	// truncation (Kafka's LogSegment.created), in Unix nanoseconds: the
	// writer sets it, Created reads it from any goroutine.
	created atomic.Int64
	// Roll-check state, writer only.
	firstTS      int64 // max timestamp of the first batch; valid if firstTSKnown
	firstTSKnown bool

	needsRecovery atomic.Bool
	// indexSyncPending says the sealed index files may not be durable
	// (recovery found them right and left them as they were, or
	// a SealDeferred's finishSeal trimmed them): Flush syncs them.
	indexSyncPending atomic.Bool

	// view marks the last batch a read-only view published (RebuildView,
	// ExtendView), to notice the file being rewritten under the view.
	view viewMark

	refs      atomic.Int32
	removed   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Create makes a new, empty active segment with base offset base in dir. It
// fails with an error wrapping ErrExists if any of the segment's .log,
// .index or .timeindex files exists.
func Create(fsys vfs.FS, dir string, base int64, opts Options) (*Segment, error) {
	if base < 0 {
		return nil, fmt.Errorf("segment: create %s: negative base offset %d", dir, base)
	}
	for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		p := filepath.Join(dir, FileName(base, suf))
		_, err := fsys.Stat(p)
		if err == nil {
			return nil, &fs.PathError{Op: "create", Path: p, Err: ErrExists}
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	s := newSegment(fsys, dir, base, opts)
	f, err := fsys.Create(*s.logPath.Load())
	if err != nil {
		return nil, err
	}
	err = s.openIndexesLocked(true)
	if err == nil && s.opts.Preallocate > 0 {
		s.adoptLog(f, true)
		if err = s.preallocate(); err != nil {
			s.offIdx.Close()
			s.timeIdx.Close()
		}
	}
	if err != nil {
		// A full disk fails the index or .log preallocation here: remove
		// what was made, so the directory holds no half-created segment
		// (a .log without its indexes) for the next Open or fsck to trip
		// on.
		f.Close()
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			fsys.Remove(filepath.Join(dir, FileName(base, suf)))
		}
		return nil, err
	}
	if s.log == nil {
		s.adoptLog(f, true)
	}
	s.filesOpen.Store(true)
	s.next.Store(base)
	s.maxTSOffset = base
	s.tailLoaded.Store(true)
	return s, nil
}

// Open opens the existing segment with base offset base in dir.
//
// A sealed segment (active = false) is opened without any I/O: its files
// are opened on first use (a lookup, a read, Size, NextOffset,
// MaxTimestamp, NeedsRecovery), so errors about them (a missing .log)
// surface there; its indexes are mapped only when a lookup needs them
// (through Options.IndexCache), and NextOffset is computed on first call.
// Opening 10,000 sealed segments thus costs a few milliseconds.
//
// An active segment is opened at once: .log read-write, indexes writable
// and preallocated, and its next offset, running maximum timestamp and
// index byte counter computed from the last offset-index entry plus a scan
// of batch headers to the end of the file.
//
// A missing .index or .timeindex is created empty and NeedsRecovery
// reports true: the caller must Recover the segment before relying on it
// (Kafka rebuilds the indexes in that case). Open trusts the files
// otherwise; after an unclean shutdown the caller recovers the segments at
// and after its recovery point, as Kafka does.
func Open(fsys vfs.FS, dir string, base int64, active bool, opts Options) (*Segment, error) {
	if base < 0 {
		return nil, fmt.Errorf("segment: open %s: negative base offset %d", dir, base)
	}
	s := newSegment(fsys, dir, base, opts)
	s.sealed.Store(!active)
	if !active {
		return s, nil
	}
	if err := s.files(); err != nil {
		return nil, err
	}
	if !s.needsRecovery.Load() {
		if err := s.loadTail(); err != nil {
			s.closeFiles()
			return nil, err
		}
	}
	return s, nil
}

// Created is when the segment was created by a roll, or opened by this
// process, or emptied by a truncation: the clock segment.ms measures a
// segment's age by when its first batch carries no timestamp. It is not
// stored on disk, as Kafka's LogSegment.created is not.
func (s *Segment) Created() time.Time { return time.Unix(0, s.created.Load()) }

func newSegment(fsys vfs.FS, dir string, base int64, opts Options) *Segment {
	opts = opts.withDefaults()
	s := &Segment{fs: fsys, dir: dir, base: base, opts: opts}
	s.created.Store(opts.Now().UnixNano())
	stem := filepath.Join(dir, FileName(base, ""))
	p := stem + LogSuffix
	s.logPath.Store(&p)
	s.idxPath = stem + IndexSuffix
	s.timePath = stem + TimeIndexSuffix
	s.next.Store(-1)
	s.maxTS.Store(-1)
	s.refs.Store(1)
	if opts.LogMapCache != nil {
		s.lmap = index.NewLogMap(opts.LogMapCache)
	}
	return s
}

// files opens the segment's files if they are not open yet: the .log
// (read-write unless Options.ReadOnly for a sealed segment) and both
// indexes, writable if the segment is active. Index files found missing
// are created empty and mark the segment as needing recovery.
func (s *Segment) files() error {
	if s.filesOpen.Load() {
		return nil
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if s.filesOpen.Load() {
		return nil
	}
	if s.closed {
		return fmt.Errorf("segment: %s: %w", s.LogPath(), ErrClosed)
	}
	for _, p := range []string{s.idxPath, s.timePath} {
		_, err := s.fs.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			s.needsRecovery.Store(true)
		} else if err != nil {
			return err
		}
	}
	active := !s.sealed.Load()
	var f vfs.File
	var err error
	if active || !s.opts.ReadOnly {
		f, err = s.fs.OpenReadWrite(s.LogPath())
	} else {
		f, err = s.fs.Open(s.LogPath())
	}
	if err != nil {
		return err
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return err
	}
	if err := s.openIndexesLocked(active); err != nil {
		f.Close()
		return err
	}
	s.adoptLog(f, active || !s.opts.ReadOnly)
	if !active {
		// Nothing was written through this descriptor: it may go.
		s.mayClose()
	}
	s.size.Store(size)
	s.filesOpen.Store(true)
	return nil
}

// adoptLog makes f, open read-write if writable, the segment's .log: as an
// index.LazyFile when Options.FileCache bounds the open descriptors.
func (s *Segment) adoptLog(f vfs.File, writable bool) {
	if s.opts.FileCache == nil {
		s.log = f
		return
	}
	s.lazy = index.NewLazyFile(s.opts.FileCache, s.fs, f.Name(), writable, f)
	s.log = s.lazy
}

// PinFile returns the .log file open, for a caller that uses its
// descriptor itself (sendfile) or holds it across calls: it stays open
// until release is called, whatever Options.FileCache's bound. The caller
// holds a reference (Acquire) for as long.
func (s *Segment) PinFile() (f vfs.File, release func(), err error) {
	if err := s.files(); err != nil {
		return nil, nil, err
	}
	if s.lazy == nil {
		return s.log, func() {}, nil
	}
	return s.lazy.Pin()
}

func (s *Segment) openIndexesLocked(writable bool) error {
	io := index.Options{MaxBytes: s.opts.MaxIndexBytes, Writable: writable, Cache: s.opts.IndexCache}
	oi, err := index.OpenOffset(s.fs, s.idxPath, s.base, io)
	if err != nil {
		return err
	}
	ti, err := index.OpenTime(s.fs, s.timePath, s.base, io)
	if err != nil {
		oi.Close()
		return err
	}
	s.offIdx, s.timeIdx = oi, ti
	return nil
}

// BaseOffset is the segment's base offset: at most its first offset and
// larger than every offset of earlier segments.
func (s *Segment) BaseOffset() int64 { return s.base }

// Dir is the directory holding the segment's files.
func (s *Segment) Dir() string { return s.dir }

// LogPath is the current path of the .log file (ending in DeletedSuffix
// after Remove).
func (s *Segment) LogPath() string { return *s.logPath.Load() }

// Size is the published size of the .log in bytes: the end of the last
// complete batch. For a sealed segment not used yet it opens the files; if
// that fails, the error is logged and Size is 0 (reads report the error).
func (s *Segment) Size() int64 {
	if !s.filesOpen.Load() {
		// A segment whose files are not open is sealed and unchanging:
		// its size is the file's, which a stat gives without spending a
		// descriptor (summing the sizes of 10,000 segments must not open
		// them all).
		if fi, err := s.fs.Stat(s.LogPath()); err == nil {
			return fi.Size()
		}
		if err := s.files(); err != nil {
			s.opts.Logger.Warn("segment: opening files", "path", s.LogPath(), "err", err)
		}
	}
	return s.size.Load()
}

// IsSealed reports whether the segment is sealed (read-only).
func (s *Segment) IsSealed() bool { return s.sealed.Load() }

// NeedsRecovery reports whether an index file was missing when the
// segment's files were opened, so the indexes must be rebuilt by Recover
// before the segment is used. For a sealed segment it opens the files; if
// that fails it reports true (Recover then returns the error).
func (s *Segment) NeedsRecovery() bool {
	if err := s.files(); err != nil {
		return true
	}
	return s.needsRecovery.Load()
}

// NextOffset is the offset after the segment's last batch (the base offset
// if it is empty). For a sealed segment it is computed on the first call
// from the last offset-index entry plus a scan of the batch headers after
// it; if that scan fails (I/O error or damage) the error is logged and the
// offset after the last good batch is returned without being cached.
func (s *Segment) NextOffset() int64 {
	if v := s.next.Load(); v >= 0 {
		return v
	}
	next, err := s.ensureTail()
	if err != nil {
		s.opts.Logger.Warn("segment: computing next offset", "path", s.LogPath(), "err", err)
	}
	return next
}

// MaxTimestamp is the largest batch max timestamp in the segment, -1 if no
// batch has one. For a sealed segment it is the time index's last entry
// (read without mapping the index), as Kafka's largestTimestamp.
func (s *Segment) MaxTimestamp() int64 {
	if !s.tailLoaded.Load() && s.sealed.Load() {
		if err := s.files(); err != nil {
			s.opts.Logger.Warn("segment: opening files", "path", s.LogPath(), "err", err)
			return -1
		}
		if !s.needsRecovery.Load() {
			// Seal wrote the running maximum as the time index's last
			// entry; reading it maps nothing (retention asks every
			// segment).
			return s.timeIdx.LastEntry().Timestamp
		}
	}
	if !s.tailLoaded.Load() {
		if _, err := s.ensureTail(); err != nil {
			s.opts.Logger.Warn("segment: computing max timestamp", "path", s.LogPath(), "err", err)
		}
	}
	return s.maxTS.Load()
}

// ensureTail loads the tail state if needed and returns the next offset.
// On error the returned offset is the best known and nothing is cached.
func (s *Segment) ensureTail() (int64, error) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.tailLoaded.Load() {
		return s.next.Load(), nil
	}
	if err := s.files(); err != nil {
		return s.base, err
	}
	t, err := s.scanTail()
	if err != nil {
		return t.next, err
	}
	s.publishTail(t)
	return t.next, nil
}

// loadTail computes and publishes the tail state (writer or Open).
func (s *Segment) loadTail() error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	t, err := s.scanTail()
	if err != nil {
		return err
	}
	s.publishTail(t)
	return nil
}

// tail is the state the append path needs about the end of the segment.
type tail struct {
	next, maxTS, maxTSOffset, sinceLastEntry int64
	// end, when positive, is where scanTail found a zero tail: the
	// logical end of the file, below its size.
	end int64
}

func (s *Segment) publishTail(t tail) {
	if t.end > 0 && t.end < s.size.Load() {
		s.size.Store(t.end)
	}
	s.maxTSOffset = t.maxTSOffset
	s.sinceLastEntry = t.sinceLastEntry
	s.maxTS.Store(t.maxTS)
	s.next.Store(t.next)
	s.tailLoaded.Store(true)
}

// scanTail derives the tail state from the last offset-index entry, the last
// time-index entry and the batch headers after that index entry. This also
// recomputes the index byte counter exactly (Kafka resets it to 0 on reload
// and truncation, which shifts later index entries; here a reopened or
// truncated segment continues exactly as if it had never been closed).
//
// The time index's last entry holds the running maximum as of its offset;
// every batch that could raise the maximum since then lies at or after the
// last offset-index entry, because time entries are only written together
// with offset entries or as the final entry (which covers the whole
// segment).
func (s *Segment) scanTail() (tail, error) {
	t := tail{next: s.base, maxTS: -1, maxTSOffset: s.base}
	var from int64
	if n := s.offIdx.Entries(); n > 0 {
		e, err := s.offIdx.LastEntryErr() // a sealed index is read, not mapped
		if err != nil {
			return t, err
		}
		from = e.Position
		t.next = e.Offset + 1
	}
	if te := s.timeIdx.LastEntry(); te.Timestamp >= 0 {
		t.maxTS, t.maxTSOffset = te.Timestamp, te.Offset
	}
	end := s.size.Load()
	if from > end || (from == end && end > 0) {
		return t, &index.Error{Op: "load", Path: s.offIdx.Path(), Pos: -1, Err: index.ErrCorrupt,
			Detail: fmt.Sprintf("last entry points at byte %d, the .log has %d bytes", from, end)}
	}
	t.sinceLastEntry = end - from
	sc := s.newHeaderScanner(from, end)
	defer sc.release()
	// A preallocated file that a crash left untrimmed after a clean
	// shutdown was recorded: its data ends at the zero tail.
	sc.zeroEnds = true
	for {
		h, ok, err := sc.next()
		if err != nil {
			return t, asReadDamage(err)
		}
		if !ok && sc.zeroAt {
			zero, err := allZero(s.log, sc.pos, end)
			if err != nil {
				return t, err
			}
			if zero {
				t.sinceLastEntry -= end - sc.pos
				t.end = sc.pos
				return t, nil
			}
			// Zeros with data after them: damage, reported as before.
			sc.zeroEnds, sc.zeroAt = false, false
			continue
		}
		if !ok {
			return t, nil
		}
		if h.maxTS > t.maxTS {
			t.maxTS, t.maxTSOffset = h.maxTS, h.last
		}
		t.next = h.last + 1
	}
}

// Close closes the segment's files. An active segment first gets its final
// time-index entry, and its index files are trimmed to their entries, as
// Kafka does, so a clean shutdown leaves the same files as a roll. A sealed
// segment whose files were never used has nothing to close. Close does not
// fsync the .log: call Flush first when the data must be durable. Close is
// idempotent; after Remove it does nothing (the last Release closes and
// unlinks the files).
func (s *Segment) Close() error {
	if s.removed.Load() {
		return nil
	}
	if err := s.WriteDeferred(); err != nil {
		return errors.Join(err, s.closeFiles())
	}
	s.openMu.Lock()
	s.closed = true
	open := s.filesOpen.Load()
	s.openMu.Unlock()
	if !open {
		return nil
	}
	var first error
	if !s.sealed.Load() && s.tailLoaded.Load() && s.maxTS.Load() >= 0 {
		err := s.timeIdx.MaybeAppend(s.maxTS.Load(), s.maxTSOffset, true)
		if err != nil && !errors.Is(err, index.ErrClosed) {
			first = err
		}
	}
	// A deferred seal is finished here: the release below and the
	// indexes' Close trim and sync what its finishSeal would have.
	s.sealMu.Lock()
	s.sealPending = false
	wasPreallocated := s.preallocated
	first = errors.Join(first, s.releaseReserved())
	s.sealMu.Unlock()
	if wasPreallocated && first == nil {
		// The trim must be durable before anything (a clean-shutdown
		// marker) tells the next open to trust the file's size.
		first = s.log.Sync()
	}
	return errors.Join(first, s.closeFiles())
}

// closeFiles closes the indexes (trimming writable ones) and the .log.
func (s *Segment) closeFiles() error {
	return errors.Join(s.offIdx.Close(), s.timeIdx.Close(), s.closeLog())
}

// closeLog closes the .log descriptor once.
func (s *Segment) closeLog() error {
	s.closeOnce.Do(func() {
		s.writeBacks.Wait() // none may outlive the descriptor it uses
		s.closeErr = errors.Join(s.lmap.Close(), s.log.Close())
	})
	return s.closeErr
}
