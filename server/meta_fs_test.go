package server

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// TestMetaOnTheStoresFS: the server keeps meta.properties on the store's
// filesystem (an embedder's in-memory store gets it in memory, nothing on
// the real disk), and a read-only store's directory gets none: its cluster
// id lives as long as the server.
func TestMetaOnTheStoresFS(t *testing.T) {
	mem := vfs.NewMem()
	dir := filepath.Join(t.TempDir(), "store")
	path := filepath.Join(dir, layout.MetaPropertiesFile)
	st, err := store.Open(dir, store.Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := s.cfg.ClusterID
	s.Close()
	if _, err := mem.Stat(path); err != nil {
		t.Fatalf("meta.properties not on the store's filesystem: %v", err)
	}
	if _, err := vfs.Default.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("meta.properties on the real disk: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// The same store again: the same cluster id, read back.
	st, err = store.Open(dir, store.Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if s, err = New(st, Options{}); err != nil || s.cfg.ClusterID != id {
		t.Fatalf("reopened: cluster id %q, %v; want %q", s.cfg.ClusterID, err, id)
	}
	s.Close()
	st.Close()

	// A read-only store without the file: a cluster id, and no file.
	if err := mem.Remove(path); err != nil {
		t.Fatal(err)
	}
	ro, err := store.Open(dir, store.Options{FS: mem, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	s, err = New(ro, Options{})
	if err != nil || s.cfg.ClusterID == "" {
		t.Fatalf("read-only: cluster id %q, %v", s.cfg.ClusterID, err)
	}
	s.Close()
	if _, err := mem.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a read-only store got meta.properties: %v", err)
	}
}

// TestMetaDamaged: a meta.properties the server cannot use stops New with
// layout's typed error naming the file (and the line and byte where one
// is at fault), never a new cluster id over it; one a cluster node wrote
// before it knew its cluster (node.id alone) is refused too.
func TestMetaDamaged(t *testing.T) {
	for _, c := range []struct {
		body string
		says string
	}{
		{"version=1\nnode.id=oops\ncluster.id=x\n", "line 2, at byte 10"},
		{"node.id=1\n", "no cluster.id"},
	} {
		mem := vfs.NewMem()
		st, err := store.Open("/s", store.Options{FS: mem})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("/s", layout.MetaPropertiesFile)
		if err := vfs.WriteFileAtomic(mem, path, []byte(c.body)); err != nil {
			t.Fatal(err)
		}
		s, err := New(st, Options{})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, layout.ErrBadMetaProperties) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: New: %v, want layout.ErrBadMetaProperties naming %s, %s", c.body, err, path, c.says)
		}
		if got, _ := vfs.ReadFileLimit(mem, path, 1<<10); string(got) != c.body {
			t.Errorf("%q: the file became %q", c.body, got)
		}
		st.Close()
	}
}
