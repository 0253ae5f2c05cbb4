package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sync/atomic"
	"syscall"
)

// ErrMappedGrowth is returned (wrapped in an *os.PathError) when a MemFS file
// would have to grow beyond the memory reserved for it while it is mapped.
// MemFS mappings alias the file's bytes, so moving them would silently cut
// the mapping off from the file; MemFS refuses instead. Map reserves room for
// the file to double (plus 64 KiB) before the first mapping, and growth
// within that room keeps the mapping aliased, as on a real shared mapping.
var ErrMappedGrowth = errors.New("vfs: memory file cannot grow this far while mapped")

// MemMaxFileSize is the largest file a MemFS holds; larger writes fail with
// EFBIG rather than allocating whatever an offset asks for.
const MemMaxFileSize = 1 << 32

// mapHeadroom is the spare capacity reserved before a file is first mapped.
const mapHeadroom = 64 << 10

// resize sets the file's length, zeroing any bytes it gains. n.mu must be
// held exclusively.
func (n *memNode) resize(size int) error {
	old := len(n.data)
	switch {
	case size <= old:
		n.nonzero = min(n.nonzero, size)
		if n.maps == 0 && size < cap(n.data)/4 {
			// Give back memory of a file cut short; nothing aliases it.
			n.data = append([]byte(nil), n.data[:size]...)
		} else {
			// Keep the array: mappings alias it. Bytes past size are
			// zeroed if the file grows again.
			n.data = n.data[:size]
		}
	case size <= cap(n.data):
		n.data = n.data[:size]
		clear(n.data[old:])
	default:
		if n.maps > 0 {
			return ErrMappedGrowth
		}
		// A fresh array is zero: only the bytes that may not be are
		// copied, so the pages past them are never touched. The room is
		// what Map reserves, so mapping the grown file (a preallocated
		// index) does not move it again and leave a freed array that
		// the next allocation would have to clear.
		nd := make([]byte, size, 2*size+mapHeadroom)
		copy(nd, n.data[:min(n.liveNonzero(), old)])
		n.data = nd
	}
	n.dirty = min(n.dirty, old, size)
	return nil
}

// liveNonzero brings nonzero up to date with the stores made through
// writable mappings, by finding the last page below the longest one's end
// that holds a non-zero byte, and returns it. Reading a page never
// written costs no memory (the kernel maps its shared zero page). n.mu
// must be held exclusively.
func (n *memNode) liveNonzero() int {
	if end := min(n.mapStored, len(n.data)); end > n.nonzero {
		for end > n.nonzero {
			from := max(n.nonzero, end-len(zeroPage))
			if !bytes.Equal(n.data[from:end], zeroPage[:end-from]) {
				break
			}
			end = from
		}
		n.nonzero = end
	}
	if n.maps == 0 {
		n.mapStored = 0
	}
	return n.nonzero
}

// zeroPage is what an unwritten page of a file holds.
var zeroPage = make([]byte, 4096)

// memFile is an open MemFS file.
type memFile struct {
	fs       *MemFS
	node     *memNode
	name     string
	writable bool
	closed   atomic.Bool
	pos      int64 // guarded by node.mu
}

var _ File = (*memFile)(nil)

func (f *memFile) check(op string, write bool) error {
	if f.closed.Load() {
		return pathErr(op, f.name, os.ErrClosed)
	}
	if write && !f.writable {
		return pathErr(op, f.name, syscall.EBADF)
	}
	return nil
}

func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, os.ErrClosed)
	}
	return nil
}

func (f *memFile) Name() string { return f.name }

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, syscall.EINVAL)
	}
	n := f.node
	n.mu.RLock()
	defer n.mu.RUnlock()
	if off >= int64(len(n.data)) {
		return 0, io.EOF
	}
	c := copy(p, n.data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := f.writeLocked(p, off); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	return len(p), nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := f.writeLocked(p, f.pos); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	f.pos += int64(len(p))
	return len(p), nil
}

// writeLocked stores p at off. f.node.mu must be held exclusively.
func (f *memFile) writeLocked(p []byte, off int64) error {
	if off < 0 {
		return syscall.EINVAL
	}
	if len(p) == 0 {
		return nil // as pwrite: an empty write never extends the file
	}
	if off > MemMaxFileSize-int64(len(p)) {
		return syscall.EFBIG
	}
	n := f.node
	end := int(off) + len(p)
	if end > len(n.data) {
		if err := n.resize(end); err != nil {
			return err
		}
	}
	copy(n.data[off:], p)
	n.nonzero = max(n.nonzero, end)
	n.dirty = min(n.dirty, int(off))
	n.modTime = f.fs.stamp()
	return nil
}

func (f *memFile) Size() (int64, error) {
	if err := f.check("stat", false); err != nil {
		return 0, err
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	return int64(len(f.node.data)), nil
}

// Sync makes the current bytes the ones that survive a crash. It copies only
// what changed since the last Sync (plus any writably mapped prefix, whose
// stores MemFS cannot see), so frequent syncs of a growing file stay cheap.
func (f *memFile) Sync() error {
	if err := f.check("sync", false); err != nil {
		return err
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	size := len(n.data)
	lo := min(n.dirty, len(n.synced), size)
	if n.mapDirt > 0 {
		lo = 0
	}
	n.synced = resizeCopy(n.synced, size, lo)
	copy(n.synced[lo:], n.data[lo:])
	n.dirty = math.MaxInt
	if n.maps == 0 {
		n.mapDirt = 0
	}
	return nil
}

// resizeCopy returns b with length size, keeping b[:keep].
func resizeCopy(b []byte, size, keep int) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	nb := make([]byte, size, 2*size)
	copy(nb, b[:keep])
	return nb
}

func (f *memFile) Truncate(size int64) error { return f.truncate(size, true) }

// TruncateKeepingModTime implements ModTimeKeeper.
func (f *memFile) TruncateKeepingModTime(size int64) error { return f.truncate(size, false) }

func (f *memFile) truncate(size int64, stamp bool) error {
	if err := f.check("truncate", false); err != nil {
		return err
	}
	if !f.writable || size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	if size > MemMaxFileSize {
		return pathErr("truncate", f.name, syscall.EFBIG)
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.resize(int(size)); err != nil {
		return pathErr("truncate", f.name, err)
	}
	if stamp {
		n.modTime = f.fs.stamp()
	}
	f.pos = min(f.pos, size)
	return nil
}

func (f *memFile) Preallocate(off, length int64) error {
	if err := f.check("preallocate", true); err != nil {
		return err
	}
	if off < 0 || length <= 0 {
		return pathErr("preallocate", f.name, syscall.EINVAL)
	}
	if off > MemMaxFileSize-length {
		return pathErr("preallocate", f.name, syscall.EFBIG)
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	if end := int(off + length); end > len(n.data) {
		if err := n.resize(end); err != nil {
			return pathErr("preallocate", f.name, err)
		}
		n.modTime = f.fs.stamp()
	}
	return nil
}

// Map returns a mapping whose bytes alias the file's: stores through it are
// seen by ReadAt, and WriteAt is seen through it. A read-only mapping is not
// write-protected (stores through it would reach the file, where the kernel
// would fault). As with the kernel, the caller orders stores through the
// mapping against ReadAt, Sync and Flush of the same bytes; the race
// detector reports what a real mapping would silently tolerate.
func (f *memFile) Map(length int, writable bool) (Mapping, error) {
	if err := f.check("mmap", false); err != nil {
		return nil, err
	}
	if writable && !f.writable {
		return nil, pathErr("mmap", f.name, syscall.EACCES)
	}
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	size := len(n.data)
	if length < 0 || length > size {
		return nil, pathErr("map", f.name,
			fmt.Errorf("length %d outside file size %d: %w", length, size, fs.ErrInvalid))
	}
	if n.maps == 0 && cap(n.data) < 2*size+mapHeadroom {
		// Reserve room now, while nothing aliases the array, so that the
		// file can grow while mapped without moving.
		nd := make([]byte, size, 2*size+mapHeadroom)
		copy(nd, n.data[:min(n.liveNonzero(), size)])
		n.data = nd
	}
	n.maps++
	if writable {
		n.mapDirt = max(n.mapDirt, length)
		n.mapStored = max(n.mapStored, length)
	}
	return &memMapping{file: f, buf: n.data[:length:length]}, nil
}

func (f *memFile) Fd() (uintptr, error) {
	return 0, pathErr("fd", f.name, ErrNoFd)
}

// memMapping is a MemFS mapping: a slice of the inode's array.
type memMapping struct {
	file     *memFile
	buf      []byte
	unmapped atomic.Bool
}

func (m *memMapping) Bytes() []byte {
	if m.unmapped.Load() {
		return nil
	}
	return m.buf
}

// Flush makes the mapped bytes durable, like msync: only the mapped range,
// extending the durable size to cover it.
func (m *memMapping) Flush() error {
	if m.unmapped.Load() {
		return pathErr("msync", m.file.name, os.ErrClosed)
	}
	n := m.file.node
	n.mu.Lock()
	defer n.mu.Unlock()
	// The file may have been truncated below the mapping; the kernel would
	// fault on those bytes, so there is nothing there to flush.
	l := min(len(m.buf), len(n.data))
	old := len(n.synced)
	if old < l {
		if l <= cap(n.synced) {
			n.synced = n.synced[:l]
			clear(n.synced[old:]) // what a shorter synced left there
		} else {
			n.synced = resizeCopy(n.synced, l, old) // fresh: zero past old
		}
	}
	// Past nonzero the file is zero: copying those bytes would touch
	// every page of a sparsely written mapping (a preallocated index).
	nz := min(l, n.liveNonzero())
	copy(n.synced[:nz], n.data[:nz])
	if nz < old {
		clear(n.synced[nz:min(l, old)])
	}
	return nil
}

func (m *memMapping) Unmap() error {
	if m.unmapped.Swap(true) {
		return pathErr("munmap", m.file.name, os.ErrClosed)
	}
	n := m.file.node
	n.mu.Lock()
	n.maps--
	n.mu.Unlock()
	return nil
}

// Reserve checks its arguments and otherwise does nothing: memory needs no
// block reservation, and the size must not change.
func (f *memFile) Reserve(off, length int64) error {
	if err := f.check("reserve", true); err != nil {
		return err
	}
	if off < 0 || length <= 0 {
		return pathErr("reserve", f.name, syscall.EINVAL)
	}
	return nil
}
