package vfs

import (
	"errors"
	"path"
	"testing"
)

// TestReadFileLimit: a file up to the limit reads whole; one byte more is
// ErrFileTooLarge, on every filesystem.
func TestReadFileLimit(t *testing.T) {
	for _, c := range fsCases {
		t.Run(c.name, func(t *testing.T) {
			fsys, dir := c.new(t)
			name := path.Join(dir, "f")
			f := create(t, fsys, name, "0123456789")
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFileLimit(fsys, name, 10)
			if err != nil || string(got) != "0123456789" {
				t.Fatalf("ReadFileLimit(10) = %q, %v", got, err)
			}
			if _, err := ReadFileLimit(fsys, name, 9); !errors.Is(err, ErrFileTooLarge) {
				t.Fatalf("ReadFileLimit(9) = %v, want ErrFileTooLarge", err)
			}
			if _, err := ReadFileLimit(fsys, path.Join(dir, "none"), 9); err == nil {
				t.Fatal("missing file read")
			}
		})
	}
}
