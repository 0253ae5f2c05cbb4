package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// tree lists every path below dir with its mode, size and modification
// time, to show that a refused Open wrote nothing.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	var walk func(rel string)
	walk = func(rel string) {
		name := filepath.Join(dir, rel)
		fi, err := vfs.Default.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(rel, " ", fi.Mode(), " ", fi.Size(), " ", fi.ModTime().UnixNano()))
		if !fi.IsDir() {
			return
		}
		names, err := vfs.Default.List(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			walk(filepath.Join(rel, n))
		}
	}
	walk("")
	slices.Sort(out)
	return out
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := vfs.Default.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := vfs.WriteFileAtomic(vfs.Default, name, data); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesNonStoreDirs: a partition directory, a directory Kafka
// would not start on, and a directory of someone's files are refused with
// ErrNotAStore, and nothing in them changes.
func TestOpenRefusesNonStoreDirs(t *testing.T) {
	partition := t.TempDir()
	l, err := seglog.Open(partition, seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(record.Record{Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	strayDir := t.TempDir()
	for _, d := range []string{"orders-0", "photos"} {
		mkdir(t, filepath.Join(strayDir, d))
	}

	files := t.TempDir()
	writeFile(t, filepath.Join(files, "notes.txt"), []byte("mine"))

	for name, dir := range map[string]string{"partition directory": partition, "stray subdirectory": strayDir, "files only": files} {
		before := tree(t, dir)
		s, err := Open(dir, Options{})
		if err == nil {
			s.Close()
			t.Errorf("%s: opened as a store", name)
			continue
		}
		if !errors.Is(err, ErrNotAStore) {
			t.Errorf("%s: %v, want ErrNotAStore", name, err)
		}
		if after := tree(t, dir); !slices.Equal(before, after) {
			t.Errorf("%s: the refused Open changed the directory:\nbefore %v\nafter  %v", name, before, after)
		}
	}
}

// TestOpenAcceptsStoreDirs: a new or empty directory, and a broker's
// log.dir with what Kafka leaves in one (partitions, a partition renamed
// for deletion, a future replica, meta.properties, checkpoints, a
// hidden directory, lost+found, a stray file), open as stores.
func TestOpenAcceptsStoreDirs(t *testing.T) {
	broker := t.TempDir()
	for _, d := range []string{"orders-0", "orders-1", "old-0.5b1e4c3d-delete", "orders-2.7a9f-future", ".snapshots", "lost+found"} {
		mkdir(t, filepath.Join(broker, d))
	}
	for _, f := range []string{"meta.properties", "replication-offset-checkpoint", "README"} {
		writeFile(t, filepath.Join(broker, f), nil)
	}
	for name, dir := range map[string]string{
		"new":        filepath.Join(t.TempDir(), "new", "store"),
		"empty":      t.TempDir(),
		"broker dir": broker,
	} {
		s, err := Open(dir, Options{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name == "broker dir" {
			if n, err := s.Partitions("orders"); err != nil || n != 2 {
				t.Errorf("broker dir: orders has %d partitions (%v), want 2 adopted", n, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
	}
	// A store is still a store when reopened.
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTopic("t", 1, DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s.Close()
}
