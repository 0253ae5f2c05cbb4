package vfs

import "os"

// Lstater is implemented by a filesystem that can describe a symbolic link
// itself rather than what it points to (lstat(2)). The real filesystem
// does; MemFS has no links, so its Stat already answers.
type Lstater interface {
	// Lstat describes name without following it if it is a symbolic link.
	Lstat(name string) (os.FileInfo, error)
}

// Lstat describes name without following a symbolic link where fsys can
// (Lstater), and with Stat otherwise. A tool that walks a tree (fsck
// searching a directory for partitions) uses it to stay inside the tree:
// a link may lead anywhere, or back up into the tree.
func Lstat(fsys FS, name string) (os.FileInfo, error) {
	if l, ok := fsys.(Lstater); ok {
		return l.Lstat(name)
	}
	return fsys.Stat(name)
}

// Lstat is lstat(2).
func (osFS) Lstat(name string) (os.FileInfo, error) { return os.Lstat(name) }

// Lstat passes through to the wrapped filesystem, failing like Stat when
// the injector fails the stat.
func (i *injectFS) Lstat(name string) (os.FileInfo, error) {
	if err := check(i.inj, Op{Kind: OpStat, Path: name}); err != nil {
		return nil, err
	}
	return Lstat(i.fs, name)
}
