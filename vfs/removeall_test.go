package vfs

import (
	"errors"
	"io/fs"
	"testing"
)

// TestRemoveAll: a tree goes whole, its parent and siblings stay, and a
// directory that is not there is no error.
func TestRemoveAll(t *testing.T) {
	m := NewMem()
	for _, d := range []string{"/a/b/c", "/a/d", "/keep"} {
		if err := m.MkdirAll(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"/a/x", "/a/b/y", "/a/b/c/z", "/keep/k"} {
		if err := WriteFileAtomic(m, f, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := RemoveAll(m, "/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stat("/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("/a after RemoveAll: %v", err)
	}
	if _, err := m.Stat("/keep/k"); err != nil {
		t.Fatalf("a sibling went too: %v", err)
	}
	if err := RemoveAll(m, "/a"); err != nil {
		t.Fatalf("RemoveAll of a missing directory: %v", err)
	}
}
