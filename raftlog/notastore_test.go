package raftlog

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

// tree returns every path under root with its contents ("/" for a
// directory), to show that a refused Open wrote nothing.
func tree(t *testing.T, fs vfs.FS, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			fi, err := fs.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.IsDir() {
				out[p] = "/"
				walk(p)
			} else {
				out[p] = string(vfstest.ReadFile(t, fs, p))
			}
		}
	}
	walk(root)
	return out
}

// TestOpenRefusesAPartition: Open refuses a directory that is a log
// partition (a seglog log, or a Store's own raft-0 given instead of the
// Store's directory) and an absent one inside a partition, with
// ErrNotAStore naming the partition, and writes nothing: the log opens as
// before. A directory holding unrelated files is a Store directory like a
// Kafka log.dir, and its files are left as they were.
func TestOpenRefusesAPartition(t *testing.T) {
	fs := vfs.NewMem()
	l, err := seglog.Open("/data/mylog", seglog.Options{FS: fs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(record.Record{Value: []byte("kept")}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s := openT(t, fs, "/data/store")
	if err := s.StoreLogs(entries(1, 5, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ dir, partition, hint string }{
		{"/data/mylog", "/data/mylog", "not a Store directory"},
		{"/data/mylog/n0", "/data/mylog", "would be created inside the log partition /data/mylog"},
		{"/data/mylog/a/b", "/data/mylog", "give a directory outside it"},
		{"/data/store/raft-0", "/data/store/raft-0", "give the directory above it, /data/store"},
	} {
		before := tree(t, fs, "/data")
		_, err := Open(c.dir, testOpts(fs))
		var ns *NotAStoreError
		if !errors.Is(err, ErrNotAStore) || !errors.As(err, &ns) || ns.Partition != c.partition || !strings.Contains(err.Error(), c.hint) {
			t.Fatalf("Open(%s) = %v; want a *NotAStoreError for %s saying %q", c.dir, err, c.partition, c.hint)
		}
		if after := tree(t, fs, "/data"); !maps.Equal(before, after) {
			t.Fatalf("the refused Open(%s) changed the tree:\n%v\nto\n%v", c.dir, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
		}
	}
	// Both still open and hold what they held.
	l, err = seglog.Open("/data/mylog", seglog.Options{FS: fs, Logger: quiet})
	if err != nil {
		t.Fatalf("the log no longer opens: %v", err)
	}
	if l.EndOffset() != 1 {
		t.Fatalf("the log ends at %d, want 1", l.EndOffset())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, fs, "/data/store")
	wantEntries(t, "the Store", s, entries(1, 5, 1), 1, 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Unrelated files beside the partition stay as they were.
	vfstest.WriteFile(t, fs, "/photos/cat.jpg", []byte("jpeg"))
	s = openT(t, fs, "/photos")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := string(vfstest.ReadFile(t, fs, "/photos/cat.jpg")); got != "jpeg" {
		t.Fatalf("cat.jpg holds %q", got)
	}
	checkFsck(t, fs, "/photos")
}

// TestPartitionWrittenOnlyByStore: the Store's partition is refused to a
// writable seglog.Open by anyone else (seglog.ErrInRaftLog), beside its
// quorum-state or inside a cluster node's metadata directory, with
// nothing written; read-only it opens, and the Store opens it again. A
// walk's seglog produce into a stopped node's metadata log appended a
// record of term 0 after term 7, and the node no longer started. A
// directory named raft-0 with no raft state beside it is an ordinary
// partition of a topic "raft".
func TestPartitionWrittenOnlyByStore(t *testing.T) {
	fs := vfs.NewMem()
	for _, dir := range []string{"/node/raftstore", filepath.Join("/node", layout.ClusterMetadataDir)} {
		s := openT(t, fs, dir)
		if err := s.StoreLogs(entries(1, 5, 1)); err != nil {
			t.Fatal(err)
		}
		if err := s.SetUint64([]byte("CurrentTerm"), 1); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		part := filepath.Join(dir, PartitionDir)
		before := tree(t, fs, dir)
		if l, err := seglog.Open(part, seglog.Options{FS: fs}); !errors.Is(err, seglog.ErrInRaftLog) || !strings.Contains(err.Error(), part) {
			if err == nil {
				l.Close()
			}
			t.Fatalf("writable Open of %s: %v, want ErrInRaftLog naming it", part, err)
		}
		if after := tree(t, fs, dir); !maps.Equal(before, after) {
			t.Fatalf("the refused Open changed %s", dir)
		}
		v, err := seglog.Open(part, seglog.Options{FS: fs, ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only Open of %s: %v", part, err)
		}
		if got := v.EndOffset(); got != 5 {
			t.Errorf("read-only %s ends at %d, want 5", part, got)
		}
		v.Close()
		s = openT(t, fs, dir)
		if last, err := s.LastIndex(); err != nil || last != 5 {
			t.Errorf("the Store reopened over %s: last index %d, %v", dir, last, err)
		}
		s.Close()
	}
	l, err := seglog.Open("/logs/"+PartitionDir, seglog.Options{FS: fs})
	if err != nil {
		t.Fatalf("a partition named %s with no raft state beside it: %v", PartitionDir, err)
	}
	l.Close()
}
