package index

import (
	"runtime/debug"
	"sync"

	"github.com/seglog/seglog/vfs"
)

// LogMap is a read-only memory mapping of a segment's .log through which the
// segment reads batch headers without a system call. Finding the batch that
// holds an offset takes one header read after the index lookup; as a pread
// that is a system call of about 1.5 µs (measured on cloud VMs), three
// quarters of a lookup, and from a warm mapping it is a copy of 61 bytes.
//
// It lives beside the indexes because the Cache that bounds how many indexes
// are mapped bounds these mappings too (a Log gives them a Cache of their
// own). A LogMap never owns the file: the segment passes it on every call.
//
// A store through the mapping is impossible (it is read-only), but a load
// can fault: a page past the end of a file that someone else truncated, or
// a disk error while paging in. Such a fault is caught and ReadAt reports
// false, so the caller falls back to pread and gets a proper error.
type LogMap struct {
	cache *Cache

	mu     sync.RWMutex
	m      vfs.Mapping // nil when not mapped
	buf    []byte      // m.Bytes()
	closed bool
	// unmappable is set for a file with no OS descriptor (the in-memory
	// FS), whose mapping could not follow the file as it grows.
	unmappable bool
	// failedAt is the readable size at which mapping last failed; no new
	// attempt is made until the file has grown by remapStep past it.
	failedAt int64
	cached   cacheLink
}

// remapStep is how far the readable size must have grown past the mapping
// before a read beyond it remaps (or past a failed attempt before it
// retries): an active segment is remapped once per 16 MiB of appends at
// most, and reads of its newest batches meanwhile use pread.
const remapStep = 16 << 20

// NewLogMap returns an unmapped LogMap whose mapping c bounds (nil: no
// bound).
func NewLogMap(c *Cache) *LogMap { return &LogMap{cache: c} }

// ReadAt fills p with the bytes of f at off, from the mapping, and reports
// whether it could. size is how much of f may be read (the segment's
// published size); the mapping is made, or redone to cover size, when p
// lies beyond it. False means the caller must read with f.ReadAt: p is past
// size or the mapping, mapping failed, or a load faulted.
func (lm *LogMap) ReadAt(f vfs.File, p []byte, off, size int64) bool {
	end := off + int64(len(p))
	if lm == nil || off < 0 || end > size {
		return false
	}
	lm.mu.RLock()
	if end <= int64(len(lm.buf)) {
		ok := copyOut(p, lm.buf, off)
		lm.cache.touch(lm)
		lm.mu.RUnlock()
		lm.cache.settle()
		return ok
	}
	lm.mu.RUnlock()
	if !lm.remap(f, end, size) {
		return false
	}
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	return end <= int64(len(lm.buf)) && copyOut(p, lm.buf, off)
}

// remap maps the first size bytes of f when a read must reach end, unless
// the current mapping (or the last failure) is less than remapStep behind.
func (lm *LogMap) remap(f vfs.File, end, size int64) bool {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	have := int64(len(lm.buf))
	switch {
	case lm.closed, lm.unmappable:
		return false
	case end <= have:
		return true // another reader mapped it
	case have > 0 && size-have < remapStep, lm.failedAt > 0 && size-lm.failedAt < remapStep:
		return false
	}
	if _, err := f.Fd(); err != nil {
		// An in-memory file refuses to grow while mapped; the segment
		// must keep appending, so it is read with ReadAt only.
		lm.unmappable = true
		return false
	}
	lm.unmapLocked()
	m, err := f.Map(int(size), false)
	if err != nil {
		lm.failedAt = size
		return false
	}
	lm.m, lm.buf, lm.failedAt = m, m.Bytes(), 0
	lm.cache.admit(lm)
	return true
}

// copyOut copies buf[off:] into p and reports false, instead of crashing,
// if a load faults (SIGBUS on a truncated file or a bad disk page).
func copyOut(p, buf []byte, off int64) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			ok = false
		}
	}()
	copy(p, buf[off:])
	return true
}

// Unmap drops the mapping; the next ReadAt maps again. The segment calls it
// before it truncates the file, so no reader can load a page cut off by the
// truncation.
func (lm *LogMap) Unmap() error {
	if lm == nil {
		return nil
	}
	lm.mu.Lock()
	defer lm.mu.Unlock()
	lm.failedAt = 0
	return lm.unmapLocked()
}

// Close drops the mapping for good; ReadAt then always reports false.
func (lm *LogMap) Close() error {
	if lm == nil {
		return nil
	}
	lm.mu.Lock()
	defer lm.mu.Unlock()
	lm.closed = true
	return lm.unmapLocked()
}

// Mapped returns how many bytes of the file are mapped now.
func (lm *LogMap) Mapped() int64 {
	if lm == nil {
		return 0
	}
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	return int64(len(lm.buf))
}

func (lm *LogMap) unmapLocked() error {
	lm.cache.forget(lm)
	if lm.m == nil {
		return nil
	}
	err := lm.m.Unmap()
	lm.m, lm.buf = nil, nil
	return err
}

func (lm *LogMap) link() *cacheLink { return &lm.cached }

func (lm *LogMap) tryEvict() bool {
	if !lm.mu.TryLock() {
		return false
	}
	defer lm.mu.Unlock()
	if lm.m != nil {
		_ = lm.m.Unmap() // nothing to report it to; the next ReadAt maps again
	}
	lm.m, lm.buf = nil, nil
	return true
}
