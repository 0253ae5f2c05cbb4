package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/edsrzf/mmap-go"
	"golang.org/x/sys/unix"
)

// Default is the real filesystem of the operating system.
var Default FS = osFS{}

// OS returns the real filesystem of the operating system (the same value as
// Default).
func OS() FS { return osFS{} }

// osFS is the real filesystem. Data durability uses fdatasync, directory
// durability fsync of the directory, space reservation fallocate and locks
// flock, so its guarantees are exactly those the kernel documents for them.
type osFS struct{}

var _ FS = osFS{}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f, name: name}, nil
}

func (osFS) Open(name string) (File, error) {
	return openOS(name, os.O_RDONLY)
}

func (osFS) OpenReadWrite(name string) (File, error) {
	return openOS(name, os.O_RDWR)
}

// openOS opens an existing file with the write position at its end.
// Anything but a regular file or a directory is refused before it is
// opened (ErrNotRegular), and again after, should the name have changed
// in between.
func openOS(name string, flag int) (File, error) {
	if fi, err := os.Stat(name); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, notRegular(name, fi)
	}
	f, err := os.OpenFile(name, flag, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: name, Err: unix.EISDIR}
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(name, fi)
	}
	return &osFile{f: f, name: name, pos: fi.Size()}, nil
}

func notRegular(name string, fi os.FileInfo) error {
	kind := fi.Mode().Type().String()
	switch m := fi.Mode(); {
	case m&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	}
	return &os.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, kind)}
}

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) MkdirAll(dir string) error { return os.MkdirAll(dir, 0o755) }

func (osFS) List(dir string) ([]string, error) {
	// Readdirnames and a sort of plain strings: ReadDir would build and
	// sort a DirEntry per name, which dominates opening a log of 10,000
	// segments.
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

func (osFS) SyncDir(dir string) error {
	d, err := os.OpenFile(dir, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return &os.PathError{Op: "syncdir", Path: dir, Err: unwrapOr(err)}
	}
	return d.Close()
}

// Lock uses flock(2). flock locks belong to the open file description, and
// every Lock call opens the file anew, so two Lock calls in one process
// conflict just as two processes do. A Lock turned away reads the file's
// contents for HeldError.Owner.
func (osFS) Lock(name string) (Lock, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	err = control(f, func(fd int) error {
		for {
			err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			owner := make([]byte, maxOwnerBytes)
			n, _ := f.ReadAt(owner, 0)
			err = &HeldError{Owner: owner[:n], Err: err}
		}
		f.Close()
		return nil, &os.PathError{Op: "lock", Path: name, Err: err}
	}
	return &osLock{f: f}, nil
}

// osLock is a held flock.
type osLock struct {
	f *os.File
}

func (l *osLock) SetOwner(owner []byte) error {
	if _, err := l.f.WriteAt(owner, 0); err != nil {
		return err
	}
	return l.f.Truncate(int64(len(owner)))
}

// Close empties the file, if its owner was written, then releases the
// lock (closing the descriptor does).
func (l *osLock) Close() error {
	var err error
	if fi, serr := l.f.Stat(); serr == nil && fi.Size() > 0 {
		err = l.f.Truncate(0)
	}
	return errors.Join(err, l.f.Close())
}

// control runs fn with f's descriptor while keeping f from being closed
// concurrently.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	if err := rc.Control(func(fd uintptr) { opErr = fn(int(fd)) }); err != nil {
		return err
	}
	return opErr
}

// osFile is an open real file. Write uses pwrite at a tracked position rather
// than O_APPEND or the kernel's file offset, so WriteAt and ReadAt (pread,
// pwrite) never move it and concurrent readers need no lock.
type osFile struct {
	f    *os.File
	name string

	mu  sync.Mutex // guards pos and serialises Write
	pos int64
}

var _ File = (*osFile)(nil)

func (f *osFile) Close() error { return f.f.Close() }

func (f *osFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

func (f *osFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }

func (f *osFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.f.WriteAt(p, f.pos)
	f.pos += int64(n)
	if err != nil {
		return n, withOp(err, "write")
	}
	return n, nil
}

// withOp renames the operation of a *PathError, so a failed Write reports
// "write" rather than os.File's "writeat".
func withOp(err error, op string) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return &os.PathError{Op: op, Path: pe.Path, Err: pe.Err}
	}
	return err
}

func (f *osFile) Name() string { return f.name }

func (f *osFile) Size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Sync uses fdatasync: seglog never depends on mtime, and the size change of
// an append is metadata fdatasync does write.
func (f *osFile) Sync() error {
	err := control(f.f, func(fd int) error {
		for {
			err := unix.Fdatasync(fd)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if err != nil {
		return &os.PathError{Op: "sync", Path: f.name, Err: err}
	}
	return nil
}

func (f *osFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.f.Truncate(size); err != nil {
		return err
	}
	if f.pos > size {
		f.pos = size
	}
	return nil
}

// Reserve uses fallocate(FALLOC_FL_KEEP_SIZE). Filesystems that cannot
// (EOPNOTSUPP) get nothing: the size never changes, so there is nothing to
// emulate.
func (f *osFile) Reserve(off, length int64) error {
	if off < 0 || length <= 0 {
		return &os.PathError{Op: "reserve", Path: f.name, Err: unix.EINVAL}
	}
	err := control(f.f, func(fd int) error {
		for {
			err := unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, off, length)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "reserve", Path: f.name, Err: err}
	}
	return nil
}

// TruncateKeepingModTime truncates and sets the modification time back to
// what it was. The time is set through /proc/self/fd (utimensat has no
// descriptor-only form for an unprivileged caller); where that fails the
// truncate stands with a new time, since the time is advisory and the
// trim is what was asked.
func (f *osFile) TruncateKeepingModTime(size int64) error {
	var st unix.Stat_t
	if err := control(f.f, func(fd int) error { return unix.Fstat(fd, &st) }); err != nil {
		return &os.PathError{Op: "stat", Path: f.name, Err: err}
	}
	if err := f.Truncate(size); err != nil {
		return err
	}
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, st.Mtim}
	_ = control(f.f, func(fd int) error {
		return unix.UtimesNanoAt(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), ts, 0)
	})
	return nil
}

// WriteBack uses sync_file_range(SYNC_FILE_RANGE_WRITE): it queues the
// range's dirty pages for writeback and returns without waiting for them.
func (f *osFile) WriteBack(off, length int64) error {
	if off < 0 || length <= 0 {
		return &os.PathError{Op: "writeback", Path: f.name, Err: unix.EINVAL}
	}
	err := control(f.f, func(fd int) error {
		for {
			err := unix.SyncFileRange(fd, off, length, unix.SYNC_FILE_RANGE_WRITE)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if err != nil {
		return &os.PathError{Op: "writeback", Path: f.name, Err: err}
	}
	return nil
}

// Preallocate uses fallocate mode 0. Filesystems without fallocate (EOPNOTSUPP,
// e.g. some network or FUSE filesystems) get an ftruncate extension instead:
// the size is right but blocks are not reserved, so a later store into the
// range can still fail with ENOSPC (or SIGBUS through a mapping).
func (f *osFile) Preallocate(off, length int64) error {
	if off < 0 || length <= 0 {
		return &os.PathError{Op: "preallocate", Path: f.name, Err: unix.EINVAL}
	}
	err := control(f.f, func(fd int) error {
		for {
			err := unix.Fallocate(fd, 0, off, length)
			if err != unix.EINTR {
				return err
			}
		}
	})
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = nil
		fi, serr := f.f.Stat()
		if serr != nil {
			return serr
		}
		if end := off + length; end > fi.Size() {
			return f.f.Truncate(end)
		}
	}
	if err != nil {
		return &os.PathError{Op: "preallocate", Path: f.name, Err: err}
	}
	return nil
}

func (f *osFile) Map(length int, writable bool) (Mapping, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if length < 0 || int64(length) > size {
		return nil, &os.PathError{Op: "map", Path: f.name,
			Err: fmt.Errorf("length %d outside file size %d: %w", length, size, fs.ErrInvalid)}
	}
	if length == 0 {
		// mmap rejects empty mappings; an empty slice behaves the same.
		return &osMapping{name: f.name}, nil
	}
	prot := mmap.RDONLY
	if writable {
		prot = mmap.RDWR
	}
	m, err := mmap.MapRegion(f.f, length, prot, 0, 0)
	if err != nil {
		return nil, &os.PathError{Op: "map", Path: f.name, Err: unwrapOr(err)}
	}
	return &osMapping{m: m, name: f.name}, nil
}

func (f *osFile) Fd() (uintptr, error) { return f.f.Fd(), nil }

// osMapping is an mmap of a real file.
type osMapping struct {
	m        mmap.MMap
	name     string
	unmapped bool
}

func (m *osMapping) Bytes() []byte { return m.m }

// Flush uses msync(MS_SYNC).
func (m *osMapping) Flush() error {
	if m.unmapped {
		return &os.PathError{Op: "msync", Path: m.name, Err: os.ErrClosed}
	}
	if len(m.m) == 0 {
		return nil
	}
	if err := m.m.Flush(); err != nil {
		return &os.PathError{Op: "msync", Path: m.name, Err: unwrapOr(err)}
	}
	return nil
}

func (m *osMapping) Unmap() error {
	if m.unmapped {
		return &os.PathError{Op: "munmap", Path: m.name, Err: os.ErrClosed}
	}
	m.unmapped = true
	if len(m.m) == 0 {
		return nil
	}
	if err := m.m.Unmap(); err != nil {
		return &os.PathError{Op: "munmap", Path: m.name, Err: unwrapOr(err)}
	}
	return nil
}

// unwrapOr returns the error err wraps, or err itself if it wraps nothing.
func unwrapOr(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}
