package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// RemoveAll removes dir and everything below it through fsys, as
// os.RemoveAll does: a dir that does not exist is no error. It stops at
// the first error, which names the path it could not list, stat or
// remove.
func RemoveAll(fsys FS, dir string) error {
	names, err := fsys.List(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		fi, err := fsys.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			err = RemoveAll(fsys, p)
		} else {
			err = fsys.Remove(p)
		}
		if err != nil {
			return err
		}
	}
	return fsys.Remove(dir)
}
