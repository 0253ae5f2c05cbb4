// Package vfstest holds the file helpers tests across seglog share: reading
// and replacing whole files through a vfs.FS, failing the test on any
// error, so that tests touch files the way the code under test does.
package vfstest

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// ReadFile returns the whole of name on fsys.
func ReadFile(tb testing.TB, fsys vfs.FS, name string) []byte {
	tb.Helper()
	b, err := vfs.ReadFileLimit(fsys, name, math.MaxInt64)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// WriteFile creates or replaces name on fsys with data, making its
// directory if needed. Nothing is synced.
func WriteFile(tb testing.TB, fsys vfs.FS, name string, data []byte) {
	tb.Helper()
	if err := fsys.MkdirAll(filepath.Dir(name)); err != nil {
		tb.Fatal(err)
	}
	f, err := fsys.Create(name)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}
