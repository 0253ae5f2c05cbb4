package vfs

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that models what survives a power loss.
//
// Every file is an inode holding its current bytes and the bytes it held at
// its last Sync (or Mapping.Flush). Every directory holds its current entries
// and the entries it held at its last SyncDir. CrashClone returns the state a
// machine would find after losing power now: the durable entries only, each
// file with its synced bytes. See the package documentation for the full
// crash model.
//
// Paths are cleaned with path.Clean; a leading "/" is optional, so "/a/b" and
// "a/b" name the same file. The root directory always exists. Directories
// made by MkdirAll, and removals and renames of directories, are durable at
// once (a deliberate simplification: seglog creates its directories at setup,
// and crash tests are about the files and entries inside them); creating,
// renaming and removing files needs SyncDir of the directories involved.
//
// Map returns memory that aliases the file's bytes, as a shared mapping
// does. To keep that true, the file may grow while mapped only within room
// reserved at the first Map (double its size plus 64 KiB); growing further
// fails with ErrMappedGrowth instead of silently moving the bytes. Shrinking
// is always allowed, and bytes the file regains read as zeros through the
// mapping too. Fd fails with ErrNoFd. MemFS files hold at most
// MemMaxFileSize bytes.
//
// A MemFS is safe for concurrent use. Its results depend only on the sequence
// of calls (modification times come from a logical clock unless SetClock
// replaces it), so a test that replays the same calls sees the same state.
type MemFS struct {
	mu    sync.Mutex // guards the namespace (every directory's entries) and locks
	root  *memNode
	locks map[*memNode]bool
	now   atomic.Pointer[func() time.Time]
	tick  atomic.Int64
}

var _ FS = (*MemFS)(nil)

// NewMem returns an empty in-memory filesystem holding only the root
// directory.
func NewMem() *MemFS {
	return &MemFS{root: newDirNode(time.Time{}), locks: make(map[*memNode]bool)}
}

// SetClock makes the filesystem stamp modification times with now instead of
// its logical clock (which starts at the Unix epoch and advances one
// millisecond per modification).
func (m *MemFS) SetClock(now func() time.Time) {
	m.now.Store(&now)
}

// stamp returns the next modification time. It takes no lock, so file
// writers holding only their inode's lock can call it.
func (m *MemFS) stamp() time.Time {
	if now := m.now.Load(); now != nil && *now != nil {
		return (*now)()
	}
	t := m.tick.Add(1)
	return time.Unix(0, 0).Add(time.Duration(t) * time.Millisecond)
}

// memNode is an inode: a directory or a regular file.
type memNode struct {
	dir bool

	// Directory state, guarded by MemFS.mu.
	entries map[string]*memNode // current view
	durable map[string]*memNode // view as of the last SyncDir
	dirTime time.Time

	// File state, guarded by mu. Readers take it shared, writers exclusive.
	mu      sync.RWMutex
	data    []byte
	synced  []byte // contents as of the last Sync
	dirty   int    // data may differ from synced at offsets >= dirty
	maps    int    // live mappings; while > 0, data's array must not move
	mapDirt int    // data may differ from synced below this offset through writable mappings
	// nonzero bounds the bytes of data that may be non-zero: every byte
	// at and past it is zero. Copies of the array (growth, the room made
	// before a first mapping) copy only below it, so a file grown large
	// and sparsely written (a preallocated index in a read-only Log's
	// view) costs memory only for the pages written, as a sparse file
	// on disk does, instead of the whole size, touched by the copy.
	nonzero int
	// mapStored is the longest writable mapping made since nonzero was
	// last brought up to date: stores through a mapping are not seen one
	// by one, so liveNonzero finds how far they reached when it matters.
	mapStored int
	modTime   time.Time
}

func newDirNode(t time.Time) *memNode {
	return &memNode{dir: true, entries: map[string]*memNode{}, durable: map[string]*memNode{}, dirTime: t}
}

func newFileNode(t time.Time) *memNode {
	return &memNode{modTime: t}
}

// clean turns name into the slash-separated components below the root.
func clean(name string) []string {
	p := path.Clean("/" + filepath.ToSlash(name))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// walkDir returns the directory node named by parts. m.mu must be held.
func (m *MemFS) walkDir(parts []string) (*memNode, error) {
	n := m.root
	for _, p := range parts {
		c, ok := n.entries[p]
		if !ok {
			return nil, syscall.ENOENT
		}
		if !c.dir {
			return nil, syscall.ENOTDIR
		}
		n = c
	}
	return n, nil
}

// parent returns the directory holding name and name's last component.
// m.mu must be held.
func (m *MemFS) parent(name string) (*memNode, string, error) {
	parts := clean(name)
	if len(parts) == 0 {
		// The root has no parent entry to create, remove or rename.
		return nil, "", syscall.EINVAL
	}
	d, err := m.walkDir(parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	return d, parts[len(parts)-1], nil
}

// lookup returns the node named by name. m.mu must be held.
func (m *MemFS) lookup(name string) (*memNode, error) {
	parts := clean(name)
	if len(parts) == 0 {
		return m.root, nil
	}
	d, err := m.walkDir(parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	n, ok := d.entries[parts[len(parts)-1]]
	if !ok {
		return nil, syscall.ENOENT
	}
	return n, nil
}

func pathErr(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.createLocked(name, true)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return &memFile{fs: m, node: n, name: name, writable: true}, nil
}

// createLocked returns the file name, creating it if missing and emptying it
// if truncate is set. m.mu must be held.
func (m *MemFS) createLocked(name string, truncate bool) (*memNode, error) {
	d, base, err := m.parent(name)
	if err != nil {
		return nil, err
	}
	if n, ok := d.entries[base]; ok {
		if n.dir {
			return nil, syscall.EISDIR
		}
		if truncate {
			n.mu.Lock()
			defer n.mu.Unlock()
			if err := n.resize(0); err != nil {
				return nil, err
			}
			n.modTime = m.stamp()
		}
		return n, nil
	}
	t := m.stamp()
	n := newFileNode(t)
	d.entries[base] = n
	d.dirTime = t
	return n, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) { return m.open(name, false) }

// OpenReadWrite implements FS.
func (m *MemFS) OpenReadWrite(name string) (File, error) { return m.open(name, true) }

func (m *MemFS) open(name string, writable bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	if n.dir {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	n.mu.RLock()
	size := int64(len(n.data))
	n.mu.RUnlock()
	return &memFile{fs: m, node: n, name: name, writable: writable, pos: size}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	n, ok := d.entries[base]
	if !ok {
		return pathErr("remove", name, syscall.ENOENT)
	}
	if n.dir && len(n.entries) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(d.entries, base)
	if n.dir {
		// Directories are durable when made, so their removal is too.
		delete(d.durable, base)
	}
	d.dirTime = m.stamp()
	return nil
}

// Rename implements FS. Like rename(2) it replaces a file at newname, refuses
// to put a directory below itself, and is durable only after SyncDir of both
// parent directories.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	lerr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	od, obase, err := m.parent(oldname)
	if err != nil {
		return lerr(err)
	}
	n, ok := od.entries[obase]
	if !ok {
		return lerr(syscall.ENOENT)
	}
	nd, nbase, err := m.parent(newname)
	if err != nil {
		return lerr(err)
	}
	if od == nd && obase == nbase {
		return nil
	}
	if n.dir && m.isBelow(nd, n) {
		return lerr(syscall.EINVAL)
	}
	if old, ok := nd.entries[nbase]; ok {
		switch {
		case old.dir && !n.dir:
			return lerr(syscall.EISDIR)
		case !old.dir && n.dir:
			return lerr(syscall.ENOTDIR)
		case old.dir && len(old.entries) > 0:
			return lerr(syscall.ENOTEMPTY)
		}
	}
	delete(od.entries, obase)
	nd.entries[nbase] = n
	if n.dir {
		// Directory changes are durable at once (see MemFS); this also
		// keeps the durable views free of cycles.
		if od.durable[obase] == n {
			delete(od.durable, obase)
		}
		nd.durable[nbase] = n
	}
	t := m.stamp()
	od.dirTime, nd.dirTime = t, t
	return nil
}

// isBelow reports whether d is dir or lies inside it. m.mu must be held.
func (m *MemFS) isBelow(d, dir *memNode) bool {
	if d == dir {
		return true
	}
	for _, c := range dir.entries {
		if c.dir && m.isBelow(d, c) {
			return true
		}
	}
	return false
}

// MkdirAll implements FS. New directories are durable at once.
func (m *MemFS) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, p := range clean(dir) {
		c, ok := n.entries[p]
		if !ok {
			c = newDirNode(m.stamp())
			n.entries[p] = c
			n.durable[p] = c
		} else if !c.dir {
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = c
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(dir)
	if err != nil {
		return nil, pathErr("open", dir, err)
	}
	if !n.dir {
		return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
	}
	names := make([]string, 0, len(n.entries))
	for name := range n.entries {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	parts := clean(name)
	base := "/"
	if len(parts) > 0 {
		base = parts[len(parts)-1]
	}
	if n.dir {
		return memInfo{name: base, mode: fs.ModeDir | 0o755, mod: n.dirTime}, nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return memInfo{name: base, size: int64(len(n.data)), mode: 0o644, mod: n.modTime}, nil
}

// SyncDir implements FS: the current entries of dir become its durable ones.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookup(dir)
	if err != nil {
		return pathErr("open", dir, err)
	}
	if !n.dir {
		return pathErr("syncdir", dir, syscall.ENOTDIR)
	}
	n.durable = make(map[string]*memNode, len(n.entries))
	for k, v := range n.entries {
		n.durable[k] = v
	}
	return nil
}

// Lock implements FS. The lock belongs to the inode, as flock's does, so it
// follows the file through renames; it does not survive CrashClone.
func (m *MemFS) Lock(name string) (Lock, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.createLocked(name, false)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	if m.locks[n] {
		n.mu.RLock()
		owner := bytes.Clone(n.data[:min(len(n.data), maxOwnerBytes)])
		n.mu.RUnlock()
		return nil, pathErr("lock", name, &HeldError{Owner: owner})
	}
	m.locks[n] = true
	return &memLock{fs: m, node: n, name: name}, nil
}

// memLock is a held MemFS lock.
type memLock struct {
	fs   *MemFS
	node *memNode
	name string
	once sync.Once
}

func (l *memLock) file() *memFile {
	return &memFile{fs: l.fs, node: l.node, name: l.name, writable: true}
}

func (l *memLock) SetOwner(owner []byte) error {
	f := l.file()
	if _, err := f.WriteAt(owner, 0); err != nil {
		return err
	}
	return f.Truncate(int64(len(owner)))
}

func (l *memLock) Close() error {
	released := false
	var err error
	l.once.Do(func() {
		if size, _ := l.file().Size(); size > 0 {
			err = l.file().Truncate(0)
		}
		l.fs.mu.Lock()
		delete(l.fs.locks, l.node)
		l.fs.mu.Unlock()
		released = true
	})
	if !released {
		return pathErr("close", l.name, os.ErrClosed)
	}
	return err
}

// memInfo is the os.FileInfo of a MemFS entry.
type memInfo struct {
	name string
	size int64
	mode fs.FileMode
	mod  time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return i.mode }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i memInfo) Sys() any           { return nil }
