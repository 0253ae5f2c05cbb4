package index

import (
	"errors"
	"io/fs"
	"sync"
	"sync/atomic"

	"github.com/seglog/seglog/vfs"
)

// base is the machinery shared by the offset and time indexes: the file, its
// mapping, the published entry count, and the writable/sealed life cycle.
//
// Concurrency: one writer (appends and structural changes, serialized by the
// caller) and any number of readers. Appends take no lock: they write the
// entry's bytes into the mapping and then publish the new count with an
// atomic store, so a reader that loads the count sees complete entries.
// Structural changes (truncate, reset, seal, make writable, close, rename)
// and the Cache's evictions take mu exclusively; readers hold mu shared for
// as long as they touch the mapped bytes.
type base struct {
	fs        vfs.FS
	entrySize int64
	base      int64
	maxBytes  int64 // Options.MaxBytes rounded down to a multiple of entrySize
	cache     *Cache

	mu       sync.RWMutex
	path     string
	writable bool
	closed   bool
	f        vfs.File // open while mapped or writable
	// unsynced is the descriptor of a file SealUnsynced trimmed, kept
	// open for syncFile: a sync through it reaches the file whatever it
	// has been renamed to since (retention renames to .deleted).
	unsynced vfs.File
	m        vfs.Mapping // nil when not mapped
	buf      []byte      // m.Bytes(); covers maxEntries (writable) or n (sealed) entries
	// diskSize is the file size when it was opened or last trimmed by us; a
	// size that is not a multiple of entrySize is damage SanityCheck reports,
	// even after the active file has been grown back to a whole size.
	diskSize int64

	n          atomic.Int64 // published entry count
	maxEntries atomic.Int64

	// warmEnd is where the pages warmed for the writer end (see warmFor);
	// writer only, reset when the index is mapped writable.
	warmEnd int64

	cached cacheLink

	// mem marks an in-memory index (Scratch): no file, no mapping, buf
	// grows as entries are appended.
	mem bool

	// lastMu guards last, the raw bytes of the final entry of a sealed index
	// that is not mapped, read with ReadAt so that asking a sealed segment
	// for its largest timestamp or last offset maps nothing.
	lastMu  sync.Mutex
	last    []byte
	lastFor int64 // entry count last was read for; -1 = none
}

func (x *base) link() *cacheLink { return &x.cached }

func (x *base) tryEvict() bool {
	if !x.mu.TryLock() {
		return false
	}
	x.unmapLocked()
	x.mu.Unlock()
	return true
}

// errShortMap means a vfs mapping came back shorter than asked for.
var errShortMap = errors.New("index: mapping shorter than requested")

func (x *base) errorf(op string, pos int64, err error, detail string) error {
	return &Error{Op: op, Path: x.path, Pos: pos, Detail: detail, Err: err}
}

// open prepares x for the file at path; see OpenOffset for the rules.
func (x *base) open(fsys vfs.FS, path string, baseOffset, entrySize int64, opts Options) error {
	maxBytes := int64(opts.MaxBytes)
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	*x = base{fs: fsys, path: path, entrySize: entrySize, base: baseOffset, cache: opts.Cache, lastFor: -1}
	if maxBytes < 0 || baseOffset < 0 {
		return x.errorf("open", -1, fs.ErrInvalid, "negative MaxBytes or base offset")
	}
	x.maxBytes = maxBytes / entrySize * entrySize
	if opts.Writable {
		f, err := fsys.OpenReadWrite(path)
		if errors.Is(err, fs.ErrNotExist) {
			f, err = fsys.Create(path)
		}
		if err != nil {
			return x.errorf("open", -1, err, "")
		}
		size, err := f.Size()
		if err != nil {
			f.Close()
			return x.errorf("open", -1, err, "")
		}
		x.diskSize = size
		x.n.Store(size / entrySize)
		if err := x.growLocked(f); err != nil {
			f.Close()
			return err
		}
		return nil
	}
	fi, err := fsys.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		var f vfs.File
		if f, err = fsys.Create(path); err == nil {
			if err = f.Close(); err == nil {
				fi, err = fsys.Stat(path)
			}
		}
	}
	if err != nil {
		return x.errorf("open", -1, err, "")
	}
	x.diskSize = fi.Size()
	x.n.Store(x.diskSize / entrySize)
	x.maxEntries.Store(x.n.Load())
	return nil
}

// growLocked makes x writable on the open read-write file f: the file is
// preallocated to the maximum size (or kept at its entries if they exceed
// it) and mapped read-write. On failure f is left for the caller to close
// and the file is cut back to its previous size if it was grown.
func (x *base) growLocked(f vfs.File) error {
	n := x.n.Load()
	size, err := f.Size()
	if err != nil {
		return x.errorf("open", -1, err, "")
	}
	// f holds no entry past its size. It can be shorter than the file x
	// was opened on: a read-only view rebuilds an index in a private,
	// empty in-memory file, and sizing that by the entries of the file on
	// disk (a crashed writer's preallocated 10 MiB) instead of the view's
	// bound made every view of an unclean log allocate, zero and copy
	// twice that (1.2 s of a store's restart after a SIGKILL).
	if inFile := size / x.entrySize; inFile < n {
		n = inFile
		x.n.Store(n)
	}
	target := max(x.maxBytes, n*x.entrySize)
	if target > 0 {
		// Preallocating the whole range (not only the growth) also reserves
		// blocks for sparse holes, so no store through the mapping can hit
		// a full disk (SIGBUS) later.
		if err := f.Preallocate(0, target); err != nil {
			x.restoreSize(f, size)
			return x.errorf("preallocate", target, err, "")
		}
	}
	m, err := f.Map(int(target), true)
	if err != nil {
		x.restoreSize(f, size)
		return x.errorf("map", -1, err, "")
	}
	b := m.Bytes()
	if int64(len(b)) < target {
		m.Unmap()
		x.restoreSize(f, size)
		return x.errorf("map", -1, errShortMap, "")
	}
	x.f, x.m, x.buf = f, m, b[:target]
	x.writable = true
	x.warmEnd = n * x.entrySize
	x.maxEntries.Store(target / x.entrySize)
	return nil
}

// warmChunk is how much of a writable index warmFor zeroes at a time: 16
// pages, room for 8,192 offset or 5,461 time entries.
const warmChunk = 64 << 10

// zeroChunk is warmChunk zero bytes.
var zeroChunk [warmChunk]byte

// warmFor makes sure the pages of the writable mapping up to end are in the
// page cache before the writer stores there. The first store into a page of
// a shared mapping of a fallocated file faults, and on ext4 that fault
// reads, zeroes and journals the page: 20 µs typically and over 2 ms when
// it waits for a journal commit, measured here under a steady write load.
// Writing zeros to the next warmChunk with pwrite instead costs about 25 µs
// per 16 pages, after which each first store is a minor fault (~0.5 µs).
// The zeros land beyond the last entry (entries are only stored below
// warmEnd, which only grows, except that a Rewrite brings it down to its
// new last entry), so they never overwrite one; what they write is what
// the fallocated range already reads as. A failed write is ignored: the
// store then takes the slow fault, nothing worse. An in-memory index
// (Scratch) has no pages: its buffer grows instead.
func (x *base) warmFor(end int64) {
	if x.mem {
		x.grow(end)
		return
	}
	if end <= x.warmEnd || x.warmEnd >= int64(len(x.buf)) {
		return
	}
	n := min(int64(warmChunk), int64(len(x.buf))-x.warmEnd)
	_, _ = x.f.WriteAt(zeroChunk[:n], x.warmEnd) // a hint; see above
	x.warmEnd += n
}

// restoreSize undoes a partial growth after a failed preallocation; it is
// best effort because the caller already reports the first error.
func (x *base) restoreSize(f vfs.File, size int64) {
	if cur, err := f.Size(); err == nil && cur != size {
		_ = f.Truncate(size)
	}
}

// unmapLocked releases the mapping and file of x. Caller holds mu
// exclusively.
func (x *base) unmapLocked() error {
	var err error
	if x.m != nil {
		err = x.m.Unmap()
	}
	if x.f != nil {
		if cerr := x.f.Close(); err == nil {
			err = cerr
		}
	}
	x.f, x.m, x.buf = nil, nil, nil
	return err
}

// mapLocked maps a sealed index read-only if it is not mapped yet. Caller
// holds mu exclusively.
func (x *base) mapLocked() error {
	if x.closed {
		return x.errorf("map", -1, ErrClosed, "")
	}
	if x.buf != nil {
		return nil
	}
	if x.writable {
		if x.n.Load() > 0 {
			return x.errorf("map", -1, errShortMap, "writable index without a mapping")
		}
		return nil
	}
	size := x.n.Load() * x.entrySize
	if size == 0 {
		return nil
	}
	f, err := x.fs.Open(x.path)
	if err != nil {
		return x.errorf("map", -1, err, "")
	}
	m, err := f.Map(int(size), false)
	if err != nil {
		f.Close()
		return x.errorf("map", -1, err, "")
	}
	if b := m.Bytes(); int64(len(b)) < size {
		m.Unmap()
		f.Close()
		return x.errorf("map", -1, errShortMap, "")
	}
	x.f, x.m, x.buf = f, m, m.Bytes()[:size]
	x.cache.admit(x)
	return nil
}

// acquire returns the mapped bytes and the entry count with mu held; the
// caller must call x.release(excl) when done, unless err != nil. A sealed
// index is mapped on first use; the caller then holds mu exclusively, so the
// Cache cannot evict the fresh mapping before it is used (which could
// otherwise repeat under heavy eviction). buf is nil when n == 0.
func (x *base) acquire() (buf []byte, n int64, excl bool, err error) {
	x.mu.RLock()
	if x.closed {
		err = x.errorf("read", -1, ErrClosed, "")
		x.mu.RUnlock()
		return nil, 0, false, err
	}
	n = x.n.Load()
	if n == 0 {
		return nil, 0, false, nil
	}
	if x.buf != nil {
		if !x.writable {
			x.cache.touch(x)
		}
		return x.buf, n, false, nil
	}
	x.mu.RUnlock()
	x.mu.Lock()
	if err = x.mapLocked(); err != nil {
		x.mu.Unlock()
		return nil, 0, false, err
	}
	// mapLocked may find nothing to map if a structural change emptied the
	// index meanwhile.
	n = x.n.Load()
	if n == 0 {
		return nil, 0, true, nil
	}
	return x.buf, n, true, nil
}

// release undoes acquire.
func (x *base) release(excl bool) {
	if excl {
		x.mu.Unlock()
	} else {
		x.mu.RUnlock()
	}
	x.cache.settle()
}

// lastRaw returns a copy of the final entry's bytes, or nil if there are no
// entries. A sealed index that is not mapped is read with ReadAt, not mapped.
func (x *base) lastRaw() ([]byte, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, x.errorf("read", -1, ErrClosed, "")
	}
	n := x.n.Load()
	if n == 0 {
		return nil, nil
	}
	es := x.entrySize
	if x.buf != nil {
		return append([]byte(nil), x.buf[(n-1)*es:n*es]...), nil
	}
	x.lastMu.Lock()
	defer x.lastMu.Unlock()
	if x.lastFor == n {
		return x.last, nil
	}
	f, err := x.fs.Open(x.path)
	if err != nil {
		return nil, x.errorf("read", (n-1)*es, err, "")
	}
	defer f.Close()
	b := make([]byte, es)
	if _, err := f.ReadAt(b, (n-1)*es); err != nil {
		return nil, x.errorf("read", (n-1)*es, err, "")
	}
	x.last, x.lastFor = b, n
	return b, nil
}

// truncateLocked keeps the first k entries. Caller holds mu exclusively.
func (x *base) truncateLocked(k int64) error {
	n := x.n.Load()
	k = min(k, n)
	if k == n && x.diskSize == k*x.entrySize {
		return nil
	}
	if x.writable {
		// Zero the dropped entries so a crash before the next trim leaves a
		// zero tail (which SanityCheck rejects) rather than stale entries
		// that look valid.
		x.n.Store(k)
		clear(x.buf[k*x.entrySize : n*x.entrySize])
		x.diskSize = k * x.entrySize
		return nil
	}
	x.lastFor = -1
	x.cache.forget(x)
	if err := x.unmapLocked(); err != nil {
		return x.errorf("truncate", -1, err, "")
	}
	f, err := x.fs.OpenReadWrite(x.path)
	if err != nil {
		return x.errorf("truncate", -1, err, "")
	}
	defer f.Close()
	if err := f.Truncate(k * x.entrySize); err != nil {
		return x.errorf("truncate", k*x.entrySize, err, "")
	}
	x.n.Store(k)
	x.maxEntries.Store(k)
	x.diskSize = k * x.entrySize
	if err := f.Sync(); err != nil {
		return x.errorf("sync", -1, err, "")
	}
	return nil
}

// sealLocked trims the file to its entries, makes it durable when sync
// says so, and drops the mapping; the index is read-only afterwards.
// Without sync the trimmed file and the entries written through the
// mapping are left in the page cache (the unmap keeps them), for a later
// syncFile. Caller holds mu exclusively.
func (x *base) sealLocked(sync bool) error {
	if !x.writable {
		return nil
	}
	n := x.n.Load()
	if x.mem {
		x.writable = false
		x.maxEntries.Store(n)
		return nil
	}
	var first error
	keep := func(err error, op string, pos int64) {
		if err != nil && first == nil {
			first = x.errorf(op, pos, err, "")
		}
	}
	if sync {
		keep(x.m.Flush(), "flush", -1)
	}
	f := x.f
	// Unmap before truncating: stores past the new end would fault, and an
	// in-memory mapping written back on Unmap must not regrow the file.
	keep(x.m.Unmap(), "unmap", -1)
	x.m, x.buf, x.f = nil, nil, nil
	x.writable = false
	x.maxEntries.Store(n)
	if err := f.Truncate(n * x.entrySize); err != nil {
		// The file keeps its zero tail; the count in memory is still right,
		// and a reopen sees the tail and fails SanityCheck (rebuild).
		keep(err, "trim", n*x.entrySize)
	} else {
		x.diskSize = n * x.entrySize
		if sync {
			keep(f.Sync(), "sync", -1)
		} else {
			x.unsynced = f
			return first
		}
	}
	keep(f.Close(), "close", -1)
	return first
}

// dropUnsyncedLocked closes the descriptor SealUnsynced kept, syncing it
// first when sync says so. Caller holds mu exclusively.
func (x *base) dropUnsyncedLocked(sync bool) error {
	f := x.unsynced
	if f == nil {
		return nil
	}
	x.unsynced = nil
	var err error
	if sync {
		if err = f.Sync(); err != nil {
			err = x.errorf("sync", -1, err, "")
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = x.errorf("close", -1, cerr, "")
	}
	return err
}

// makeWritableLocked grows a sealed index back to its maximum size and maps
// it read-write. Caller holds mu exclusively.
func (x *base) makeWritableLocked() error {
	if x.closed {
		return x.errorf("make writable", -1, ErrClosed, "")
	}
	if x.writable {
		return nil
	}
	x.lastFor = -1
	x.cache.forget(x)
	if err := x.unmapLocked(); err != nil {
		return x.errorf("make writable", -1, err, "")
	}
	// A writable index is synced through its own descriptor (flush).
	if err := x.dropUnsyncedLocked(false); err != nil {
		return err
	}
	f, err := x.fs.OpenReadWrite(x.path)
	if err != nil {
		return x.errorf("make writable", -1, err, "")
	}
	if err := x.growLocked(f); err != nil {
		f.Close()
		return err
	}
	return nil
}

// closeLocked releases everything; trim says whether a writable file is
// trimmed first (Close) or not (Delete).
func (x *base) closeLocked(trim bool) error {
	if x.closed {
		return nil
	}
	var err error
	if trim {
		err = x.sealLocked(true)
	}
	// Close leaves a trimmed file durable, as a sealing Close does; a
	// Delete has nothing to keep.
	if derr := x.dropUnsyncedLocked(trim); err == nil {
		err = derr
	}
	x.cache.forget(x)
	if uerr := x.unmapLocked(); err == nil && uerr != nil {
		err = x.errorf("close", -1, uerr, "")
	}
	x.writable = false
	x.closed = true
	return err
}

// Shared exported behaviour, wrapped by OffsetIndex and TimeIndex.

func (x *base) entries() int { return int(x.n.Load()) }

func (x *base) reset() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return x.errorf("reset", -1, ErrClosed, "")
	}
	return x.truncateLocked(0)
}

func (x *base) isWritable() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.writable
}

// flush makes stores durable. It may run alongside lookups, but callers
// order it with Append like the other writer operations: msync of a page
// being stored to is harmless on a real mapping, but MemFS copies the bytes,
// and the race detector would (rightly, by the vfs contract) report it.
func (x *base) flush() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return x.errorf("flush", -1, ErrClosed, "")
	}
	if !x.writable || x.mem {
		// Sealed files were made durable when trimmed (or are synced by
		// SyncFile: when recovery found one right and left it as it was,
		// or after SealUnsynced).
		return nil
	}
	if err := x.m.Flush(); err != nil {
		return x.errorf("flush", -1, err, "")
	}
	// The size set by preallocation is metadata msync does not cover.
	if err := x.f.Sync(); err != nil {
		return x.errorf("sync", -1, err, "")
	}
	return nil
}

func (x *base) seal(sync bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return x.errorf("seal", -1, ErrClosed, "")
	}
	return x.sealLocked(sync)
}

func (x *base) close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.closeLocked(true)
}

func (x *base) rename(newPath string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return x.errorf("rename", -1, ErrClosed, "")
	}
	if err := x.fs.Rename(x.path, newPath); err != nil {
		return x.errorf("rename", -1, err, "to "+newPath)
	}
	x.path = newPath
	return nil
}

func (x *base) delete() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	err := x.closeLocked(false)
	if rerr := x.fs.Remove(x.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = x.errorf("delete", -1, rerr, "")
	}
	return err
}

func (x *base) getPath() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.path
}

// checkSize reports a file size that is not a whole number of entries.
func (x *base) checkSize() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if r := x.diskSize % x.entrySize; r != 0 {
		return x.errorf("sanity check", x.diskSize-r, ErrCorrupt,
			"file size is not a multiple of the entry size")
	}
	return nil
}
