package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// The store's holder says who it is in the log.dir's lock file: a second
// Open is turned away with a *HeldError naming it (command, pid,
// listener), writes nothing, and the lock file is empty again once the
// holder closes.
func TestLockFileNamesTheHolder(t *testing.T) {
	fsys := vfs.NewMem()
	h := Holder{Command: "seglog serve", PID: 4242, Listener: "127.0.0.1:9092"}
	s, err := Open(testDir, Options{FS: fsys, Logger: quiet, OffsetsPartitions: 2, Holder: h})
	mustf(t, err, "open")
	if got, ok := layout.ParseHolder(vfstest.ReadFile(t, fsys, filepath.Join(testDir, layout.LockFile))); !ok || got != h {
		t.Fatalf("lock file names %+v, want %+v", got, h)
	}
	before := vfstest.Snapshot(t, fsys, testDir)
	_, err = Open(testDir, Options{FS: fsys, Logger: quiet, Holder: Holder{Command: "seglog produce"}})
	var he *HeldError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &he) || !he.HolderKnown || he.Holder != h {
		t.Fatalf("second open: %v, want a *HeldError naming %+v", err, h)
	}
	if want := "store: /data is held by `seglog serve` (pid 4242, listening on 127.0.0.1:9092)"; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q, want it to start %q", err, want)
	}
	vfstest.Unchanged(t, "the store, after a refused open", before, vfstest.Snapshot(t, fsys, testDir))
	mustf(t, s.Close(), "close")
	if data := vfstest.ReadFile(t, fsys, filepath.Join(testDir, layout.LockFile)); len(data) != 0 {
		t.Fatalf("the released lock still names %q", data)
	}
	// A holder that gives nothing is named by its pid all the same.
	s, err = Open(testDir, Options{FS: fsys, Logger: quiet})
	mustf(t, err, "reopen")
	defer s.Close()
	_, err = Open(testDir, Options{FS: fsys, Logger: quiet})
	if !errors.As(err, &he) || !he.HolderKnown || he.Holder.PID <= 0 || he.Holder.Command == "" {
		t.Fatalf("open beside a default holder: %v", err)
	}
}

// A caller that works on a store rather than making one (Options.Existing)
// and every read-only open refuse a directory that holds no store, and
// create nothing there.
func TestExistingRefusesANewStore(t *testing.T) {
	fsys := vfs.NewMem()
	mustf(t, fsys.MkdirAll("/empty"), "mkdir")
	for _, o := range []Options{{FS: fsys, Existing: true}, {FS: fsys, ReadOnly: true}} {
		for _, dir := range []string{"/empty", "/missing"} {
			if _, err := Open(dir, o); !errors.Is(err, ErrNotAStore) {
				t.Fatalf("open %s (read-only %v): %v, want ErrNotAStore", dir, o.ReadOnly, err)
			}
		}
	}
	if names, _ := fsys.List("/empty"); len(names) != 0 {
		t.Fatalf("created %v", names)
	}
	if _, err := fsys.Stat("/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("created /missing: %v", err)
	}
}

// Item 5: DeleteRecords through the store moves the partition's start in
// the log.dir's checkpoint, and every reader agrees: the Log, a group
// reading from the earliest offset, a read-only view, a reopen. The
// partition directory gains no checkpoint of its own.
func TestDeleteRecordsEveryReaderAgrees(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newFakeClock()
	s := openStore(t, fsys, clock)
	mustf(t, s.CreateTopic("bookings", 3, smallConfig()), "create")
	for i := range 5 {
		_, err := s.ProduceTo("bookings", 2, kv(fmt.Sprint("k", i), "v"))
		mustf(t, err, "produce")
	}
	if _, err := s.DeleteRecords("bookings", 2, 6); !errors.Is(err, seglog.ErrOffsetOutOfRange) {
		t.Fatalf("past the end: %v", err)
	}
	if _, err := s.DeleteRecords(OffsetsTopic, 0, 0); !errors.Is(err, ErrInternalTopic) {
		t.Fatalf("the offsets topic: %v", err)
	}
	start, err := s.DeleteRecords("bookings", 2, 2)
	if err != nil || start != 2 {
		t.Fatalf("DeleteRecords: %d, %v", start, err)
	}
	if off, ok, err := layout.PartitionOffset(fsys, filepath.Join(testDir, layout.LogStartOffsetFile), "bookings", 2); err != nil || !ok || off != 2 {
		t.Fatalf("log.dir's log-start line: %d %v %v", off, ok, err)
	}
	check := func(label string, s *Store) {
		t.Helper()
		if got := partitionRecords(t, s, "bookings", 2, 2); len(got) != 3 {
			t.Fatalf("%s: %d records from the start, want 3", label, len(got))
		}
		ps, err := s.Position("fresh", "bookings", 2, Earliest)
		if err != nil || ps.Offset != 2 {
			t.Fatalf("%s: a new group starts at %d (%v), want 2", label, ps.Offset, err)
		}
		info, err := s.DescribeTopic("bookings")
		if err != nil || info.Partitions[2].StartOffset != 2 {
			t.Fatalf("%s: describe %+v, %v", label, info.Partitions, err)
		}
	}
	check("the writer", s)
	ro, err := Open(testDir, Options{FS: fsys, ReadOnly: true, Logger: quiet})
	mustf(t, err, "read-only open")
	check("a read-only view beside the writer", ro)
	mustf(t, ro.Close(), "close view")
	mustf(t, s.Close(), "close")
	s = openStore(t, fsys, clock)
	check("a reopen", s)
	mustf(t, s.Close(), "close")
	ro, err = Open(testDir, Options{FS: fsys, ReadOnly: true, Logger: quiet})
	mustf(t, err, "read-only open")
	check("a read-only view after a clean close", ro)
	mustf(t, ro.Close(), "close view")
	names, _ := fsys.List(filepath.Join(testDir, "bookings-2"))
	for _, n := range names {
		if layout.IsLogDirFile(n) {
			t.Fatalf("the partition directory holds %s", n)
		}
	}
}

// Clean applies each topic's own config through the store: a topic with
// a short retention.ms loses its old segments, one kept forever loses
// nothing, a compacted one is compacted; naming a topic cleans it alone.
func TestCleanAppliesEachTopicsConfig(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newFakeClock()
	s := openStore(t, fsys, clock)
	short := smallConfig()
	short.RetentionMs = 1000
	keep := smallConfig()
	keep.RetentionMs = -1
	comp := smallConfig()
	comp.CleanupPolicy = cleaner.Compact
	comp.MinCleanableDirtyRatio = 0.01
	mustf(t, s.CreateTopic("short", 1, short), "create short")
	mustf(t, s.CreateTopic("keep", 1, keep), "create keep")
	mustf(t, s.CreateTopic("comp", 1, comp), "create comp")
	big := strings.Repeat("x", 300)
	for i := range 40 {
		for _, topic := range []string{"short", "keep", "comp"} {
			_, err := s.ProduceTo(topic, 0, kv(fmt.Sprint("k", i%4), big))
			mustf(t, err, "produce %s", topic)
		}
	}
	clock.Advance(time.Hour)
	segments := func(topic string) int {
		info, err := s.DescribeTopic(topic)
		mustf(t, err, "describe")
		return info.Partitions[0].Segments
	}
	keepSegs := segments("keep")
	if keepSegs < 3 {
		t.Fatalf("keep has %d segments, want several", keepSegs)
	}

	res, err := s.Clean(context.Background(), "keep")
	mustf(t, err, "clean keep")
	if len(res) != 1 || res[0].Topic != "keep" || res[0].Cleaned.Segments != 0 || res[0].Err != nil {
		t.Fatalf("clean keep: %+v", res)
	}
	if segments("short") == 1 {
		t.Fatal("cleaning keep cleaned short")
	}

	res, err = s.Clean(context.Background())
	mustf(t, err, "clean all")
	got := map[string]PartitionCleaned{}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s-%d: %v", r.Topic, r.Partition, r.Err)
		}
		got[r.Topic] = r
	}
	if r := got["short"]; r.Cleaned.Segments == 0 || r.Cleaned.NewStartOffset != 40 || segments("short") != 1 {
		t.Fatalf("short: %+v, %d segments left", r.Cleaned, segments("short"))
	}
	if r := got["keep"]; r.Cleaned.Segments != 0 || segments("keep") != keepSegs {
		t.Fatalf("keep: %+v", r.Cleaned)
	}
	if r := got["comp"]; r.Compacted == nil || r.Compacted.RecordsRemoved == 0 {
		t.Fatalf("comp: %+v", r.Compacted)
	}
	if _, err := s.Clean(context.Background(), "nope"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("clean of an unknown topic: %v", err)
	}
	mustf(t, s.Close(), "close")
	// The start the pass moved is in the log.dir's checkpoint.
	if off, ok, _ := layout.PartitionOffset(fsys, filepath.Join(testDir, layout.LogStartOffsetFile), "short", 0); !ok || off != 40 {
		t.Fatalf("short's log-start line: %d %v", off, ok)
	}
}

// A partition whose Log does not open (damage below its recovery point)
// is described by its error; the others are described all the same, and
// nothing is changed.
func TestDescribeReportsABrokenPartition(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newFakeClock()
	s := openStore(t, fsys, clock)
	mustf(t, s.CreateTopic("t", 2, smallConfig()), "create")
	for i := range 3 {
		for p := range int32(2) {
			_, err := s.ProduceTo("t", p, kv(fmt.Sprint("k", i), "value"))
			mustf(t, err, "produce")
		}
	}
	mustf(t, s.Commit("g", "t", map[int32]int64{0: 1, 1: 1}), "commit")
	mustf(t, s.Close(), "close")
	// A crash (no marker) with the recovery point at the end, and a byte
	// flipped in what was synced: corruption, which no open may cut.
	mustf(t, fsys.Remove(filepath.Join(testDir, layout.CleanShutdownFile)), "remove marker")
	seg := filepath.Join(testDir, "t-1", layout.FileName(0, layout.LogSuffix))
	data := vfstest.ReadFile(t, fsys, seg)
	data[70] ^= 0xff
	vfstest.WriteFile(t, fsys, seg, data)
	before := vfstest.Snapshot(t, fsys, testDir)
	ro, err := Open(testDir, Options{FS: fsys, ReadOnly: true, Logger: quiet})
	mustf(t, err, "read-only open")
	info, err := ro.DescribeTopic("t")
	mustf(t, err, "describe")
	if p := info.Partitions[0]; p.Err != nil || p.EndOffset != 3 {
		t.Fatalf("the healthy partition: %+v", p)
	}
	if p := info.Partitions[1]; p.Err == nil || !strings.Contains(p.Err.Error(), "t-1") {
		t.Fatalf("the damaged partition: %+v, want its error", p)
	}
	rows, total, err := ro.DescribeGroup("g")
	mustf(t, err, "describe group")
	if len(rows) != 2 || rows[0].Err != nil || rows[0].Lag != 2 || rows[1].Err == nil || total != 2 {
		t.Fatalf("group rows %+v, total %d", rows, total)
	}
	mustf(t, ro.Close(), "close")
	vfstest.Unchanged(t, "the store", before, vfstest.Snapshot(t, fsys, testDir))
}
