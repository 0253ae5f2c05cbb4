package meta

import (
	"errors"
	"io"
	"path"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/vfs"
)

var testConf = raft.Configuration{Servers: []raft.Server{{ID: "1", Address: "a"}, {ID: "2", Address: "b"}}}

func writeSnap(t *testing.T, s *SnapshotStore, index uint64, data string) string {
	t.Helper()
	sink, err := s.Create(1, index, 3, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(sink, data); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	return sink.ID()
}

func listIDs(t *testing.T, s *SnapshotStore) []string {
	t.Helper()
	metas, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range metas {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestSnapshotStore(t *testing.T) {
	fs := vfs.NewMem()
	s, err := NewSnapshotStore(fs, "/snaps", 2)
	if err != nil {
		t.Fatal(err)
	}
	a := writeSnap(t, s, 10, "state at 10")
	b := writeSnap(t, s, 20, "state at 20")
	meta, rc, err := s.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	if string(got) != "state at 20" || meta.Index != 20 || meta.Term != 3 || meta.Size != int64(len(got)) ||
		len(meta.Configuration.Servers) != 2 || meta.ConfigurationIndex != 1 {
		t.Errorf("opened %q, meta %+v", got, meta)
	}
	if ids := listIDs(t, s); len(ids) != 2 || ids[0] != b || ids[1] != a {
		t.Errorf("list %v, want [%s %s]", ids, b, a)
	}
	// A third snapshot removes the oldest: two are kept.
	c := writeSnap(t, s, 30, "state at 30")
	if ids := listIDs(t, s); len(ids) != 2 || ids[0] != c || ids[1] != b {
		t.Errorf("after a third: %v", ids)
	}
	// A cancelled snapshot leaves nothing.
	sink, err := s.Create(1, 40, 3, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(sink, "partial")
	if err := sink.Cancel(); err != nil {
		t.Fatal(err)
	}
	if names, _ := fs.List("/snaps"); len(names) != 2 {
		t.Errorf("after a cancel the directory holds %v", names)
	}
	// A damaged file is not listed, and Open says why.
	name := path.Join("/snaps", c+snapSuffix)
	f, err := fs.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if ids := listIDs(t, s); len(ids) != 1 || ids[0] != b {
		t.Errorf("with %s damaged: %v", c, ids)
	}
	if _, _, err := s.Open(c); !errors.Is(err, ErrBadSnapshot) {
		t.Errorf("opening a damaged snapshot: %v", err)
	}
	if _, _, err := s.Open("../x"); err == nil {
		t.Error("an id with a path in it was opened")
	}
}

// TestSnapshotStoreCrash: a power loss while a snapshot is written
// leaves the older ones, and nothing of it once the store is reopened;
// one after Close keeps it.
func TestSnapshotStoreCrash(t *testing.T) {
	fs := vfs.NewMem()
	s, err := NewSnapshotStore(fs, "/snaps", 2)
	if err != nil {
		t.Fatal(err)
	}
	a := writeSnap(t, s, 10, "state at 10")
	sink, err := s.Create(1, 20, 3, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(sink, "state at 20")
	mid := fs.CrashClone()
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	after := fs.CrashClone()

	s2, err := NewSnapshotStore(mid, "/snaps", 2)
	if err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, s2); len(ids) != 1 || ids[0] != a {
		t.Errorf("crash mid-snapshot: %v, want [%s]", ids, a)
	}
	if names, _ := mid.List("/snaps"); len(names) != 1 {
		t.Errorf("reopened after a crash, the directory holds %v", names)
	}
	s3, err := NewSnapshotStore(after, "/snaps", 2)
	if err != nil {
		t.Fatal(err)
	}
	if ids := listIDs(t, s3); len(ids) != 2 || ids[0] != sink.ID() {
		t.Errorf("crash after Close: %v", ids)
	}
}
