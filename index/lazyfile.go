package index

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/seglog/seglog/vfs"
)

// LazyFile is a segment's .log descriptor that a Cache may close while
// nobody uses it, and that reopens on the next use. A log with thousands of
// sealed segments that a consumer reads from the beginning would otherwise
// keep one descriptor per segment it has passed until the log closes; with
// a Cache of its own (a Log gives it one), only the most recently used
// sealed segments keep theirs.
//
// Every method holds the file for its duration, so no call ever meets a
// descriptor closed under it; a closed descriptor's number can be reused by
// the kernel, so Fd's result is only safe to use while the file is pinned
// (Pin). Only an evictable file (SetEvictable) is ever closed: a segment
// makes its .log evictable once sealed and never while it is appended to,
// truncated or removed, so the path a reopen uses is the file's.
type LazyFile struct {
	cache    *Cache
	fs       vfs.FS
	path     string
	writable bool

	// mu is held shared for each use of f and exclusively to open or
	// close it.
	mu     sync.RWMutex
	f      vfs.File // nil while closed by the Cache
	closed bool     // Close was called
	// pins counts holders that use f beyond one call (Pin); the Cache
	// never closes a pinned file.
	pins      atomic.Int32
	evictable atomic.Bool
	cached    cacheLink
}

// NewLazyFile wraps f, open at path (read-write if writable), so that c may
// close it while it is evictable and idle. A nil c never closes it.
func NewLazyFile(c *Cache, fsys vfs.FS, path string, writable bool, f vfs.File) *LazyFile {
	return &LazyFile{cache: c, fs: fsys, path: path, writable: writable, f: f}
}

// errLazyClosed is what a use of a LazyFile after Close returns.
var errLazyClosed = fmt.Errorf("index: lazy file: %w", os.ErrClosed)

// use returns the open file with mu held, shared or (after a reopen)
// exclusive as excl says; release lets it go. Not a returned closure: the
// active segment's every append comes through here, and a method value
// that escapes is an allocation per call.
func (lf *LazyFile) use() (f vfs.File, excl bool, err error) {
	lf.mu.RLock()
	if lf.f != nil {
		if lf.evictable.Load() {
			lf.cache.touch(lf)
		}
		return lf.f, false, nil
	}
	closed := lf.closed
	lf.mu.RUnlock()
	if closed {
		return nil, false, fmt.Errorf("%s: %w", lf.path, errLazyClosed)
	}
	lf.mu.Lock()
	if err := lf.reopenLocked(); err != nil {
		lf.mu.Unlock()
		return nil, false, err
	}
	return lf.f, true, nil
}

// release lets go of what use took.
func (lf *LazyFile) release(excl bool) {
	if excl {
		lf.mu.Unlock()
	} else {
		lf.mu.RUnlock()
	}
	lf.cache.settle()
}

// reopenLocked opens the file again if the Cache closed it. The caller
// holds mu exclusively.
func (lf *LazyFile) reopenLocked() error {
	if lf.closed {
		return fmt.Errorf("%s: %w", lf.path, errLazyClosed)
	}
	if lf.f != nil {
		return nil
	}
	var f vfs.File
	var err error
	if lf.writable {
		f, err = lf.fs.OpenReadWrite(lf.path)
	} else {
		f, err = lf.fs.Open(lf.path)
	}
	if err != nil {
		return fmt.Errorf("index: reopen %s: %w", lf.path, err)
	}
	lf.f = f
	if lf.evictable.Load() {
		lf.cache.admit(lf)
	}
	return nil
}

// SetEvictable says whether the Cache may close the file while it is idle.
// Turning it off opens the file again if it was closed, so the caller can
// then change the file (append, truncate, rename) knowing no reopen will
// race with it.
func (lf *LazyFile) SetEvictable(on bool) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	lf.evictable.Store(on)
	if on {
		if lf.f != nil {
			lf.cache.admit(lf)
		}
		return nil
	}
	lf.cache.forget(lf)
	return lf.reopenLocked()
}

// Pin opens the file if needed and keeps it open until the returned
// function is called: for a holder that uses the descriptor itself
// (sendfile through Fd) or across many calls.
func (lf *LazyFile) Pin() (vfs.File, func(), error) {
	f, excl, err := lf.use()
	if err != nil {
		return nil, nil, err
	}
	lf.pins.Add(1)
	lf.release(excl)
	var once sync.Once
	return f, func() {
		once.Do(func() {
			lf.pins.Add(-1)
			lf.cache.settle()
		})
	}, nil
}

// IsOpen reports whether the descriptor is open now (for tests and stats).
func (lf *LazyFile) IsOpen() bool {
	lf.mu.RLock()
	defer lf.mu.RUnlock()
	return lf.f != nil
}

// ReadAt reads from the file, reopening it first if it was closed.
func (lf *LazyFile) ReadAt(p []byte, off int64) (int, error) {
	f, excl, err := lf.use()
	if err != nil {
		return 0, err
	}
	defer lf.release(excl)
	return f.ReadAt(p, off)
}

// WriteAt writes to the file, reopening it first if it was closed.
func (lf *LazyFile) WriteAt(p []byte, off int64) (int, error) {
	f, excl, err := lf.use()
	if err != nil {
		return 0, err
	}
	defer lf.release(excl)
	return f.WriteAt(p, off)
}

// Write appends to the file. An appended file is not evictable, so its
// write position is never lost to a reopen.
func (lf *LazyFile) Write(p []byte) (int, error) {
	f, excl, err := lf.use()
	if err != nil {
		return 0, err
	}
	defer lf.release(excl)
	return f.Write(p)
}

// Name returns the path the file was opened with.
func (lf *LazyFile) Name() string { return lf.path }

// Size returns the file's size.
func (lf *LazyFile) Size() (int64, error) {
	f, excl, err := lf.use()
	if err != nil {
		return 0, err
	}
	defer lf.release(excl)
	return f.Size()
}

// Sync makes the file's data durable. Closing a descriptor loses no data
// (the page cache keeps it), so a file the Cache closed and reopened syncs
// what was written through the old descriptor too.
func (lf *LazyFile) Sync() error {
	f, excl, err := lf.use()
	if err != nil {
		return err
	}
	defer lf.release(excl)
	return f.Sync()
}

// Truncate sets the file's size.
func (lf *LazyFile) Truncate(size int64) error {
	f, excl, err := lf.use()
	if err != nil {
		return err
	}
	defer lf.release(excl)
	return f.Truncate(size)
}

// TruncateKeepingModTime sets the file's size and leaves its
// modification time (vfs.TruncateKeepingModTime).
func (lf *LazyFile) TruncateKeepingModTime(size int64) error {
	f, excl, err := lf.use()
	if err != nil {
		return err
	}
	defer lf.release(excl)
	return vfs.TruncateKeepingModTime(f, size)
}

// Preallocate reserves blocks and extends the size (fallocate mode 0).
func (lf *LazyFile) Preallocate(off, length int64) error {
	f, excl, err := lf.use()
	if err != nil {
		return err
	}
	defer lf.release(excl)
	return f.Preallocate(off, length)
}

// Reserve reserves blocks without changing the size (a hint).
func (lf *LazyFile) Reserve(off, length int64) error {
	f, excl, err := lf.use()
	if err != nil {
		return err
	}
	defer lf.release(excl)
	return f.Reserve(off, length)
}

// WriteBack starts the writeback of [off, off+length) where the file can
// (vfs.WriteBack); it makes nothing durable.
func (lf *LazyFile) WriteBack(off, length int64) error {
	f, excl, err := lf.use()
	if err != nil {
		return err
	}
	defer lf.release(excl)
	return vfs.WriteBack(f, off, length)
}

// Map maps the file's first length bytes. The mapping outlives the
// descriptor: the Cache may close the file while it is mapped.
func (lf *LazyFile) Map(length int, writable bool) (vfs.Mapping, error) {
	f, excl, err := lf.use()
	if err != nil {
		return nil, err
	}
	defer lf.release(excl)
	return f.Map(length, writable)
}

// Fd returns the descriptor open now. It may be closed, and its number
// reused, as soon as Fd returns unless the caller holds a Pin.
func (lf *LazyFile) Fd() (uintptr, error) {
	f, excl, err := lf.use()
	if err != nil {
		return 0, err
	}
	defer lf.release(excl)
	return f.Fd()
}

// Close closes the file for good; later uses fail.
func (lf *LazyFile) Close() error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.closed {
		return nil
	}
	lf.closed = true
	lf.cache.forget(lf)
	if lf.f == nil {
		return nil
	}
	err := lf.f.Close()
	lf.f = nil
	return err
}

func (lf *LazyFile) link() *cacheLink { return &lf.cached }

// tryEvict closes the descriptor unless the file is in use, pinned or not
// evictable. The caller holds the Cache's mu.
func (lf *LazyFile) tryEvict() bool {
	if !lf.mu.TryLock() {
		return false
	}
	defer lf.mu.Unlock()
	if lf.f == nil {
		return true
	}
	if lf.pins.Load() > 0 || !lf.evictable.Load() {
		return false
	}
	// Nothing to report a close error to: the file was only read since it
	// was sealed, and the next use reopens it (and reports what fails).
	_ = lf.f.Close()
	lf.f = nil
	return true
}

var _ vfs.File = (*LazyFile)(nil)
