package vfs

import (
	"errors"
	"fmt"
	"os"
)

// ErrInjected marks every failure an Injector made up through Inject:
// errors.Is(err, ErrInjected) tells a simulated failure from a real one, and
// errors.Is(err, syscall.EIO) (or whichever errno the injector chose) still
// holds.
var ErrInjected = errors.New("vfs: injected error")

// OpKind says which filesystem operation an Op is.
type OpKind uint8

// The operations the FS that Inject returns reports to its Injector. Loads
// and stores through mapped memory are not operations: nothing can
// intercept them.
const (
	OpCreate        OpKind = iota + 1 // FS.Create
	OpOpen                            // FS.Open
	OpOpenReadWrite                   // FS.OpenReadWrite
	OpRemove                          // FS.Remove
	OpRename                          // FS.Rename (Path is the old name, NewPath the new)
	OpMkdirAll                        // FS.MkdirAll
	OpList                            // FS.List
	OpStat                            // FS.Stat
	OpSyncDir                         // FS.SyncDir
	OpLock                            // FS.Lock
	OpUnlock                          // Close of the lock FS.Lock returned
	OpRead                            // File.ReadAt
	OpWrite                           // File.Write
	OpWriteAt                         // File.WriteAt
	OpSize                            // File.Size
	OpSync                            // File.Sync
	OpTruncate                        // File.Truncate
	OpPreallocate                     // File.Preallocate
	OpReserve                         // File.Reserve
	OpMap                             // File.Map
	OpFd                              // File.Fd
	OpClose                           // File.Close
	OpFlush                           // Mapping.Flush
	OpUnmap                           // Mapping.Unmap
	OpSetOwner                        // Lock.SetOwner (Close's emptying of the file is OpUnlock's)
	OpWriteBack                       // WriteBacker.WriteBack (vfs.WriteBack of a file that has it)
)

var opNames = [...]string{
	OpCreate: "create", OpOpen: "open", OpOpenReadWrite: "openrw", OpRemove: "remove",
	OpRename: "rename", OpMkdirAll: "mkdirall", OpList: "list", OpStat: "stat",
	OpSyncDir: "syncdir", OpLock: "lock", OpUnlock: "unlock", OpRead: "read",
	OpWrite: "write", OpWriteAt: "writeat", OpSize: "size", OpSync: "sync",
	OpTruncate: "truncate", OpPreallocate: "preallocate", OpReserve: "reserve", OpMap: "mmap", OpFd: "fd",
	OpClose: "close", OpFlush: "msync", OpUnmap: "munmap", OpSetOwner: "setowner",
	OpWriteBack: "writeback",
}

// String returns the operation's name, as used in error messages.
func (k OpKind) String() string {
	if int(k) < len(opNames) && opNames[k] != "" {
		return opNames[k]
	}
	return fmt.Sprintf("OpKind(%d)", k)
}

// Op describes one filesystem operation about to run.
type Op struct {
	Kind OpKind
	// Path is the name the operation is about: the file's name for file
	// and mapping operations, the old name for a rename.
	Path string
	// NewPath is the new name of a rename.
	NewPath string
	// Off and Len are the byte range of reads, writes, truncations
	// (Off is the new size), preallocations and mappings (Len only).
	// Write's Off is -1: the append position is the file's business.
	Off int64
	Len int64
}

// Injector decides which operations fail. Inject is called before each
// operation; a non-nil result is returned (wrapped, see InjectedError)
// instead of running the operation. Inject may be called concurrently.
type Injector interface {
	Inject(op Op) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op) error

// Inject implements Injector.
func (f InjectorFunc) Inject(op Op) error { return f(op) }

// InjectedError is the error an operation of the FS that Inject returns
// fails with when its injector says so; the returned error is an
// *os.PathError (an *os.LinkError for Rename) wrapping it, like a real
// failure.
type InjectedError struct {
	Op  Op
	Err error // the injector's choice, e.g. syscall.EIO
}

// Error describes the injected failure.
func (e *InjectedError) Error() string { return "injected: " + e.Err.Error() }

// Unwrap returns the chosen error, so errors.Is(err, syscall.EIO) works.
func (e *InjectedError) Unwrap() error { return e.Err }

// Is makes every InjectedError match ErrInjected.
func (e *InjectedError) Is(target error) bool { return target == ErrInjected }

// Inject returns fsys with failures injected by inj. Files, mappings and
// locks obtained through it report their operations too. Failed operations
// have no effect: they are refused before they reach fsys.
func Inject(fsys FS, inj Injector) FS {
	return &injectFS{fs: fsys, inj: inj}
}

type injectFS struct {
	fs  FS
	inj Injector
}

var _ FS = (*injectFS)(nil)

// check asks the injector about op.
func check(inj Injector, op Op) error {
	err := inj.Inject(op)
	if err == nil {
		return nil
	}
	ie := &InjectedError{Op: op, Err: err}
	if op.Kind == OpRename {
		return &os.LinkError{Op: op.Kind.String(), Old: op.Path, New: op.NewPath, Err: ie}
	}
	return &os.PathError{Op: op.Kind.String(), Path: op.Path, Err: ie}
}

func (i *injectFS) Create(name string) (File, error) {
	return i.open(OpCreate, name, i.fs.Create)
}

func (i *injectFS) Open(name string) (File, error) {
	return i.open(OpOpen, name, i.fs.Open)
}

func (i *injectFS) OpenReadWrite(name string) (File, error) {
	return i.open(OpOpenReadWrite, name, i.fs.OpenReadWrite)
}

func (i *injectFS) open(k OpKind, name string, fn func(string) (File, error)) (File, error) {
	if err := check(i.inj, Op{Kind: k, Path: name}); err != nil {
		return nil, err
	}
	f, err := fn(name)
	if err != nil {
		return nil, err
	}
	return &injectFile{f: f, inj: i.inj}, nil
}

func (i *injectFS) Remove(name string) error {
	if err := check(i.inj, Op{Kind: OpRemove, Path: name}); err != nil {
		return err
	}
	return i.fs.Remove(name)
}

func (i *injectFS) Rename(oldname, newname string) error {
	if err := check(i.inj, Op{Kind: OpRename, Path: oldname, NewPath: newname}); err != nil {
		return err
	}
	return i.fs.Rename(oldname, newname)
}

func (i *injectFS) MkdirAll(dir string) error {
	if err := check(i.inj, Op{Kind: OpMkdirAll, Path: dir}); err != nil {
		return err
	}
	return i.fs.MkdirAll(dir)
}

func (i *injectFS) List(dir string) ([]string, error) {
	if err := check(i.inj, Op{Kind: OpList, Path: dir}); err != nil {
		return nil, err
	}
	return i.fs.List(dir)
}

func (i *injectFS) Stat(name string) (os.FileInfo, error) {
	if err := check(i.inj, Op{Kind: OpStat, Path: name}); err != nil {
		return nil, err
	}
	return i.fs.Stat(name)
}

func (i *injectFS) SyncDir(dir string) error {
	if err := check(i.inj, Op{Kind: OpSyncDir, Path: dir}); err != nil {
		return err
	}
	return i.fs.SyncDir(dir)
}

func (i *injectFS) Lock(name string) (Lock, error) {
	if err := check(i.inj, Op{Kind: OpLock, Path: name}); err != nil {
		return nil, err
	}
	l, err := i.fs.Lock(name)
	if err != nil {
		return nil, err
	}
	return &injectLock{c: l, name: name, inj: i.inj}, nil
}

type injectLock struct {
	c    Lock
	name string
	inj  Injector
}

// SetOwner is an operation of its own: it writes the lock file, but
// what it writes describes the holder, not data.
func (l *injectLock) SetOwner(owner []byte) error {
	if err := check(l.inj, Op{Kind: OpSetOwner, Path: l.name, Len: int64(len(owner))}); err != nil {
		return err
	}
	return l.c.SetOwner(owner)
}

func (l *injectLock) Close() error {
	if err := check(l.inj, Op{Kind: OpUnlock, Path: l.name}); err != nil {
		return err
	}
	return l.c.Close()
}

// injectFile reports a File's operations to an injector.
type injectFile struct {
	f   File
	inj Injector
}

var _ File = (*injectFile)(nil)

func (f *injectFile) op(k OpKind, off, n int64) error {
	return check(f.inj, Op{Kind: k, Path: f.f.Name(), Off: off, Len: n})
}

func (f *injectFile) Close() error {
	if err := f.op(OpClose, 0, 0); err != nil {
		return err
	}
	return f.f.Close()
}

func (f *injectFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.op(OpRead, off, int64(len(p))); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *injectFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.op(OpWriteAt, off, int64(len(p))); err != nil {
		return 0, err
	}
	return f.f.WriteAt(p, off)
}

func (f *injectFile) Write(p []byte) (int, error) {
	if err := f.op(OpWrite, -1, int64(len(p))); err != nil {
		return 0, err
	}
	return f.f.Write(p)
}

func (f *injectFile) Name() string { return f.f.Name() }

func (f *injectFile) Size() (int64, error) {
	if err := f.op(OpSize, 0, 0); err != nil {
		return 0, err
	}
	return f.f.Size()
}

func (f *injectFile) Sync() error {
	if err := f.op(OpSync, 0, 0); err != nil {
		return err
	}
	return f.f.Sync()
}

func (f *injectFile) Truncate(size int64) error {
	if err := f.op(OpTruncate, size, 0); err != nil {
		return err
	}
	return f.f.Truncate(size)
}

// TruncateKeepingModTime reports OpTruncate and passes the call on to
// the wrapped file (vfs.TruncateKeepingModTime).
func (f *injectFile) TruncateKeepingModTime(size int64) error {
	if err := f.op(OpTruncate, size, 0); err != nil {
		return err
	}
	return TruncateKeepingModTime(f.f, size)
}

func (f *injectFile) Preallocate(off, length int64) error {
	if err := f.op(OpPreallocate, off, length); err != nil {
		return err
	}
	return f.f.Preallocate(off, length)
}

func (f *injectFile) Reserve(off, length int64) error {
	if err := f.op(OpReserve, off, length); err != nil {
		return err
	}
	return f.f.Reserve(off, length)
}

// WriteBack reports OpWriteBack and passes the call on to the wrapped
// file, which may not have it (vfs.WriteBack then does nothing).
func (f *injectFile) WriteBack(off, length int64) error {
	if err := f.op(OpWriteBack, off, length); err != nil {
		return err
	}
	return WriteBack(f.f, off, length)
}

func (f *injectFile) Map(length int, writable bool) (Mapping, error) {
	if err := f.op(OpMap, 0, int64(length)); err != nil {
		return nil, err
	}
	m, err := f.f.Map(length, writable)
	if err != nil {
		return nil, err
	}
	return &injectMapping{m: m, name: f.f.Name(), inj: f.inj}, nil
}

func (f *injectFile) Fd() (uintptr, error) {
	if err := f.op(OpFd, 0, 0); err != nil {
		return 0, err
	}
	return f.f.Fd()
}

// injectMapping reports Flush and Unmap; loads and stores go straight to
// the underlying memory.
type injectMapping struct {
	m    Mapping
	name string
	inj  Injector
}

func (m *injectMapping) Bytes() []byte { return m.m.Bytes() }

func (m *injectMapping) Flush() error {
	if err := check(m.inj, Op{Kind: OpFlush, Path: m.name, Len: int64(len(m.m.Bytes()))}); err != nil {
		return err
	}
	return m.m.Flush()
}

func (m *injectMapping) Unmap() error {
	if err := check(m.inj, Op{Kind: OpUnmap, Path: m.name}); err != nil {
		return err
	}
	return m.m.Unmap()
}
