package store

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := vfs.Default.MkdirAll(dir); err != nil {
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
	vfstest.WriteFile(t, vfs.Default, filepath.Join(files, "notes.txt"), []byte("mine"))

	// A cluster node's records: a meta.properties, as a log.dir has.
	nodeRecords := filepath.Join(t.TempDir(), layout.ClusterNodeDir)
	vfstest.WriteFile(t, vfs.Default, filepath.Join(nodeRecords, layout.MetaPropertiesFile), []byte("node.id=1\n"))

	for name, dir := range map[string]string{"partition directory": partition, "stray subdirectory": strayDir, "files only": files, "a cluster node's records": nodeRecords} {
		before := vfstest.Snapshot(t, vfs.Default, dir)
		s, err := Open(dir, Options{})
		if err == nil {
			s.Close()
			t.Errorf("%s: opened as a store", name)
			continue
		}
		var ns *NotAStoreError
		if !errors.Is(err, ErrNotAStore) || !errors.As(err, &ns) || ns.Dir != dir || !strings.HasPrefix(err.Error(), "store: not a store directory: "+dir) {
			t.Errorf("%s: %v, want a *NotAStoreError for %s (ErrNotAStore)", name, err, dir)
		}
		if after := vfstest.Snapshot(t, vfs.Default, dir); !maps.Equal(before, after) {
			t.Errorf("%s: the refused Open changed the directory:\nbefore %v\nafter  %v", name, before, after)
		}
	}
	if s, err := Open(nodeRecords, Options{ReadOnly: true}); !errors.Is(err, ErrNotAStore) {
		if err == nil {
			s.Close()
		}
		t.Errorf("a read-only Open of a cluster node's records: %v, want ErrNotAStore", err)
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
		vfstest.WriteFile(t, vfs.Default, filepath.Join(broker, f), nil)
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
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesClusterNodeDir: a cluster node's log.dir (it holds
// layout.ClusterMetadataDir or layout.ClusterNodeDir) is refused to a writer that is not its node
// (ErrClusterNode), and nothing in it changes; its node's Open
// (ReplicatedOffsets) and a read-only Open still open it. A single-node
// serve once took acknowledged writes in such a directory that the
// cluster then overwrote when the node rejoined.
func TestOpenRefusesClusterNodeDir(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{ReplicatedOffsets: true, OffsetsPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTopic("orders", 1, DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The node's own directory marks it, and the metadata log alone
	// does too (what a user who deleted the former leaves).
	for _, mark := range []string{layout.ClusterMetadataDir, layout.ClusterNodeDir} {
		mkdir(t, filepath.Join(dir, mark))
		before := vfstest.Snapshot(t, vfs.Default, dir)
		for _, opts := range []Options{{}, {Existing: true, OffsetsPartitions: 1}} {
			s, err := Open(dir, opts)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%+v) opened a cluster node's directory (with %s) to write it", opts, mark)
			}
			if !errors.Is(err, ErrClusterNode) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "--voters") {
				t.Fatalf("Open(%+v) with %s: %v, want ErrClusterNode naming %s and how to start the node", opts, mark, err, dir)
			}
		}
		if after := vfstest.Snapshot(t, vfs.Default, dir); !maps.Equal(before, after) {
			t.Fatalf("the refused Open changed the directory:\nbefore %v\nafter  %v", before, after)
		}
	}

	for _, opts := range []Options{{ReadOnly: true}, {ReplicatedOffsets: true, OffsetsPartitions: 1}} {
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatalf("Open(%+v) of a cluster node's directory: %v", opts, err)
		}
		if got := s.Topics(); !slices.Contains(got, "orders") {
			t.Errorf("Open(%+v) sees topics %v, want orders among them", opts, got)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
