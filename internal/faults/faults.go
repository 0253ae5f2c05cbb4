// Package faults fails one filesystem operation of a workload the way a
// real disk does: with EIO, with ENOSPC, or as a short write that stores
// part of its bytes and then reports ENOSPC. The reliability tests run a
// workload once per operation index and kind (their fault matrices).
package faults

import (
	"os"
	"sync"
	"syscall"

	"github.com/seglog/seglog/vfs"
)

// Kind is how the chosen operation fails.
type Kind int

const (
	EIO    Kind = iota // the operation fails with EIO, doing nothing
	ENOSPC             // it fails with ENOSPC, doing nothing
	Short              // a write stores half its bytes, then ENOSPC; any other operation fails with ENOSPC
)

// Kinds is every Kind, for a matrix.
var Kinds = []Kind{EIO, ENOSPC, Short}

// String names the kind as test names and failure messages show it.
func (k Kind) String() string { return [...]string{"EIO", "ENOSPC", "short write"}[k] }

// At fails the I-th operation (from 1) of the FS it returns.
type At struct {
	i     int64
	kind  Kind
	short *shortFS
	mu    sync.Mutex
	n     int64
	fired *vfs.Op
	// current is a label the workload sets (SetCurrent) for what it is
	// doing; during is current when the fault fired.
	current, during string
}

// New returns an At failing the i-th operation of base, and the FS to run
// the workload on.
func New(base vfs.FS, i int64, kind Kind) (*At, vfs.FS) {
	s := &shortFS{FS: base}
	a := &At{i: i, kind: kind, short: s}
	return a, vfs.Inject(s, a)
}

// SetCurrent labels what the workload does next.
func (a *At) SetCurrent(label string) {
	a.mu.Lock()
	a.current = label
	a.mu.Unlock()
}

// Inject implements vfs.Injector.
func (a *At) Inject(op vfs.Op) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n++; a.n != a.i {
		return nil
	}
	a.fired = &op
	a.during = a.current
	switch {
	case a.kind == EIO:
		return syscall.EIO
	case a.kind == Short && (op.Kind == vfs.OpWrite || op.Kind == vfs.OpWriteAt) && op.Len > 1:
		a.short.arm(op.Path)
		return nil
	}
	return syscall.ENOSPC
}

// Fired returns the operation failed, the label current then, and whether
// the workload got that far.
func (a *At) Fired() (vfs.Op, string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fired == nil {
		return vfs.Op{}, "", false
	}
	return *a.fired, a.during, true
}

// shortFS makes the next write to one file store only half its bytes and
// fail with ENOSPC, as a filling disk does.
type shortFS struct {
	vfs.FS
	mu   sync.Mutex
	path string // armed for this file's next write; "" when not armed
}

func (s *shortFS) arm(path string) {
	s.mu.Lock()
	s.path = path
	s.mu.Unlock()
}

func (s *shortFS) take(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path != "" && s.path == path {
		s.path = ""
		return true
	}
	return false
}

func (s *shortFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &shortFile{File: f, fs: s}, nil
}

func (s *shortFS) Create(name string) (vfs.File, error) { return s.wrap(s.FS.Create(name)) }
func (s *shortFS) Open(name string) (vfs.File, error)   { return s.wrap(s.FS.Open(name)) }
func (s *shortFS) OpenReadWrite(name string) (vfs.File, error) {
	return s.wrap(s.FS.OpenReadWrite(name))
}

type shortFile struct {
	vfs.File
	fs *shortFS
}

func (f *shortFile) Write(p []byte) (int, error) {
	if f.fs.take(f.Name()) {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (f *shortFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.take(f.Name()) {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}
