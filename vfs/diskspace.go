package vfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ErrNoDiskSpace is DiskSpace's error for a file system that cannot
// report its size (an in-memory one, a test wrapper).
var ErrNoDiskSpace = errors.New("vfs: the file system does not report its size")

// DiskSpacer is an FS that reports the size of the file system holding a
// directory.
type DiskSpacer interface {
	// DiskSpace returns the file system's total bytes and the bytes an
	// unprivileged writer may still use (statfs's f_blocks and f_bavail,
	// what Java's File.getTotalSpace and getUsableSpace report).
	DiskSpace(dir string) (total, usable int64, err error)
}

// DiskSpace returns the total and usable bytes of the file system holding
// dir, or ErrNoDiskSpace when fsys cannot tell.
func DiskSpace(fsys FS, dir string) (total, usable int64, err error) {
	if d, ok := fsys.(DiskSpacer); ok {
		return d.DiskSpace(dir)
	}
	return 0, 0, ErrNoDiskSpace
}

// DiskSpace is statfs(2) of dir.
func (osFS) DiskSpace(dir string) (total, usable int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	bs := int64(st.Bsize)
	return int64(st.Blocks) * bs, int64(st.Bavail) * bs, nil
}
