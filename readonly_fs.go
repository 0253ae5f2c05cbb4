package seglog

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// readOnlyFS is the filesystem of a read-only Log: it reads the directory
// through the underlying FS and refuses every change to it, so no code path
// of the engine can write there by mistake, whatever it tries. The one
// exception is index files: a read-only view rebuilds missing, damaged or
// live (preallocated, still being written) indexes, and an index file the
// engine creates or opens for writing is kept in a private in-memory FS
// from then on, shadowing the file on disk. Nothing else is ever shadowed.
type readOnlyFS struct {
	under vfs.FS
	mem   *vfs.MemFS

	mu     sync.Mutex
	shadow map[string]bool // index paths served from mem
}

func newReadOnlyFS(under vfs.FS) *readOnlyFS {
	return &readOnlyFS{under: under, mem: vfs.NewMem(), shadow: map[string]bool{}}
}

// isIndexPath reports whether name is a segment index file, the only kind
// of file a read-only Log keeps a private copy of.
func isIndexPath(name string) bool {
	_, suffix, ok := segment.ParseFileName(filepath.Base(name))
	return ok && (suffix == segment.IndexSuffix || suffix == segment.TimeIndexSuffix)
}

func (r *readOnlyFS) shadowed(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shadow[filepath.Clean(name)]
}

func refuse(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: ErrReadOnly}
}

// Create makes an empty in-memory index file; anything else is refused.
func (r *readOnlyFS) Create(name string) (vfs.File, error) {
	if !isIndexPath(name) {
		return nil, refuse("create", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.mem.MkdirAll(filepath.Dir(name)); err != nil {
		return nil, err
	}
	f, err := r.mem.Create(name)
	if err == nil {
		r.shadow[filepath.Clean(name)] = true
	}
	return f, err
}

// Open opens the in-memory copy of a shadowed index, the file on disk
// otherwise.
func (r *readOnlyFS) Open(name string) (vfs.File, error) {
	if r.shadowed(name) {
		return r.mem.Open(name)
	}
	return r.under.Open(name)
}

// OpenReadWrite opens an index file in memory, starting it empty if it was
// not shadowed yet: the read-only Log only opens an index for writing to
// rebuild it, which empties it first. Anything else is refused.
func (r *readOnlyFS) OpenReadWrite(name string) (vfs.File, error) {
	if !isIndexPath(name) {
		return nil, refuse("open for writing", name)
	}
	if r.shadowed(name) {
		return r.mem.OpenReadWrite(name)
	}
	return r.Create(name)
}

// Remove forgets an in-memory index; anything else is refused.
func (r *readOnlyFS) Remove(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.shadow[filepath.Clean(name)] {
		return refuse("remove", name)
	}
	delete(r.shadow, filepath.Clean(name))
	return r.mem.Remove(name)
}

// Rename is refused.
func (r *readOnlyFS) Rename(oldname, _ string) error { return refuse("rename", oldname) }

// MkdirAll is refused.
func (r *readOnlyFS) MkdirAll(dir string) error { return refuse("mkdir", dir) }

// List lists the directory on disk.
func (r *readOnlyFS) List(dir string) ([]string, error) { return r.under.List(dir) }

// Stat describes the in-memory copy of a shadowed index, the file on disk
// otherwise.
func (r *readOnlyFS) Stat(name string) (os.FileInfo, error) {
	if r.shadowed(name) {
		return r.mem.Stat(name)
	}
	return r.under.Stat(name)
}

// SyncDir is refused: a read-only Log changes no directory entry.
func (r *readOnlyFS) SyncDir(dir string) error { return refuse("sync", dir) }

// Lock is refused: a read-only Log takes no lock.
func (r *readOnlyFS) Lock(name string) (vfs.Lock, error) { return nil, refuse("lock", name) }
