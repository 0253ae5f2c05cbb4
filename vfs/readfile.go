package vfs

import (
	"errors"
	"fmt"
	"io"
)

// ErrFileTooLarge is returned by ReadFileLimit for a file larger than the
// caller's limit.
var ErrFileTooLarge = errors.New("vfs: file larger than allowed")

// ReadFileLimit reads the whole of a small file (a checkpoint, an index),
// refusing one larger than limit bytes, so that a damaged or hostile file
// cannot make the caller allocate what its size says.
func ReadFileLimit(fs FS, name string, limit int64) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than the %d it may hold", ErrFileTooLarge, name, size, limit)
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}
