package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// noWrite is the real filesystem as a user without write permission sees
// it: every operation that would change something fails with EACCES.
func noWrite() vfs.FS {
	return vfs.Inject(vfs.Default, vfs.If(vfs.Kinds(vfs.OpCreate, vfs.OpOpenReadWrite, vfs.OpRemove, vfs.OpRename,
		vfs.OpMkdirAll, vfs.OpSyncDir, vfs.OpLock, vfs.OpWrite, vfs.OpWriteAt, vfs.OpSync, vfs.OpTruncate,
		vfs.OpPreallocate, vfs.OpReserve, vfs.OpFlush), syscall.EACCES))
}

// A read-only store beside a live writer in the same log.dir: it opens
// without the lock and without write permission, reads topics, groups and
// records, refuses every write with ErrReadOnly, follows the writer with
// Refresh, and leaves the directory byte for byte as it found it (checked
// while the writer is closed: a live one rewrites checkpoints from its
// background flushes).
func TestReadOnlyBesideLiveWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	clock := newFakeClock()
	openW := func() *Store {
		w, err := Open(dir, Options{OffsetsPartitions: 5, Clock: clock, Logger: quiet, OffsetsConfig: &offsetsCfg})
		mustf(t, err, "open writer")
		return w
	}
	w := openW()
	defer func() { w.Close() }()
	mustf(t, w.CreateTopic("bookings", 4, smallConfig()), "create")
	mustf(t, w.CreateTopic("old", 2, smallConfig()), "create old")
	for i := range 200 {
		_, err := w.Produce("bookings", kv(fmt.Sprintf("b%d", i), "BookingCreated"))
		mustf(t, err, "produce")
	}
	mustf(t, w.Commit("billing", "bookings", map[int32]int64{0: 3, 1: 5}), "commit")

	ro, err := Open(dir, Options{FS: noWrite(), ReadOnly: true, Logger: quiet})
	mustf(t, err, "open read-only beside the writer")
	mustf(t, ro.Close(), "close")
	mustf(t, w.Close(), "close writer")
	before := vfstest.Snapshot(t, vfs.Default, dir)
	ro, err = Open(dir, Options{FS: noWrite(), ReadOnly: true, Logger: quiet})
	mustf(t, err, "open read-only")
	if !ro.ReadOnly() {
		t.Error("ReadOnly() = false")
	}
	if got := ro.Topics(); !slices.Equal(got, []string{"bookings", "old"}) {
		t.Errorf("Topics = %v", got)
	}
	info, err := ro.DescribeTopic("bookings")
	mustf(t, err, "describe")
	var total int64
	for _, p := range info.Partitions {
		total += p.EndOffset
	}
	if total != 200 || info.Partitions[0].Lag["billing"] != info.Partitions[0].EndOffset-3 {
		t.Errorf("describe: %d records, partition 0 lag %v", total, info.Partitions[0].Lag)
	}
	if n, err := ro.Partitions("bookings"); n != 4 || err != nil {
		t.Errorf("Partitions = %d, %v", n, err)
	}
	if g := ro.Groups(); !slices.Equal(g, []string{"billing"}) {
		t.Errorf("Groups = %v", g)
	}
	if c, ok := ro.CommittedOffset("billing", "bookings", 1); !ok || c.Offset != 5 {
		t.Errorf("CommittedOffset = %v, %v", c, ok)
	}
	rows, lagSum, err := ro.DescribeGroup("billing")
	mustf(t, err, "describe group")
	if len(rows) != 2 || rows[1].Committed != 5 || lagSum != rows[0].Lag+rows[1].Lag {
		t.Errorf("DescribeGroup = %+v, %d", rows, lagSum)
	}
	if pos, err := ro.Position("billing", "bookings", 0, Earliest); err != nil || pos.Offset != 3 {
		t.Errorf("Position = %+v, %v", pos, err)
	}
	read := 0
	for p := range int32(4) {
		read += len(partitionRecords(t, ro, "bookings", p, 0))
	}
	if read != 200 {
		t.Errorf("read %d records, want 200", read)
	}

	// Every write is refused, and changes nothing.
	l, release, err := ro.acquireLog("bookings", 0)
	mustf(t, err, "acquire")
	_, logErr := l.Append(kv("k", "v"))
	release()
	_, writerErr := ro.Writer("bookings", 0)
	_, prodErr := ro.Produce("bookings", kv("k", "v"))
	_, toErr := ro.ProduceTo("bookings", 0, kv("k", "v"))
	_, resetErr := ro.ResetOffsets("billing", "bookings", Reset{Kind: ToEarliest})
	for what, err := range map[string]error{
		"CreateTopic":   ro.CreateTopic("x", 1, smallConfig()),
		"DeleteTopic":   ro.DeleteTopic("old"),
		"AddPartitions": ro.AddPartitions("bookings", 5),
		"Produce":       prodErr,
		"ProduceTo":     toErr,
		"Commit":        ro.Commit("billing", "bookings", map[int32]int64{0: 4}),
		"DeleteGroup":   ro.DeleteGroup("billing"),
		"DeleteOffsets": ro.DeleteOffsets("billing", "bookings", 0),
		"ResetOffsets":  resetErr,
		"CleanOnce":     ro.CleanOnce(context.Background()),
		"Start":         ro.Start(context.Background()),
		"Log.Append":    logErr,
		"Writer":        writerErr,
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only store: %v, want ErrReadOnly", what, err)
		}
	}
	vfstest.Unchanged(t, "a read-only open and reads", before, vfstest.Snapshot(t, vfs.Default, dir))

	// The writer goes on; Refresh shows it while the writer runs.
	w = openW()
	for i := range 100 {
		_, err := w.Produce("bookings", kv(fmt.Sprintf("c%d", i), "PaymentCaptured"))
		mustf(t, err, "produce")
	}
	mustf(t, w.Commit("billing", "bookings", map[int32]int64{1: 7}), "commit")
	mustf(t, w.Commit("email", "bookings", map[int32]int64{2: 1}), "commit email")
	mustf(t, w.CreateTopic("later", 3, smallConfig()), "create later")
	mustf(t, w.AddPartitions("bookings", 6), "grow")
	mustf(t, w.DeleteTopic("old"), "delete old")
	_, err = w.Produce("later", kv("x", "y"))
	mustf(t, err, "produce later")

	mustf(t, ro.Refresh(), "refresh")
	if got := ro.Topics(); !slices.Equal(got, []string{"bookings", "later"}) {
		t.Errorf("after Refresh Topics = %v", got)
	}
	if n, _ := ro.Partitions("bookings"); n != 6 {
		t.Errorf("after Refresh bookings has %d partitions, want 6", n)
	}
	read = 0
	for p := range int32(6) {
		read += len(partitionRecords(t, ro, "bookings", p, 0))
	}
	if read != 300 {
		t.Errorf("after Refresh read %d records, want 300", read)
	}
	if got := partitionRecords(t, ro, "later", PartitionForKey([]byte("x"), 3), 0); len(got) != 1 {
		t.Errorf("later: %d records", len(got))
	}
	if g := ro.Groups(); !slices.Equal(g, []string{"billing", "email"}) {
		t.Errorf("after Refresh Groups = %v", g)
	}
	if c, _ := ro.CommittedOffset("billing", "bookings", 1); c.Offset != 7 {
		t.Errorf("after Refresh billing's commit on 1 is %d, want 7", c.Offset)
	}
	mustf(t, w.DeleteGroup("email"), "delete group")
	mustf(t, w.Close(), "close writer")
	before = vfstest.Snapshot(t, vfs.Default, dir)
	mustf(t, ro.Refresh(), "refresh")
	if g := ro.Groups(); !slices.Equal(g, []string{"billing"}) {
		t.Errorf("after a group's deletion Groups = %v", g)
	}
	for p := range int32(6) {
		partitionRecords(t, ro, "bookings", p, 0)
	}
	vfstest.Unchanged(t, "Refresh and reads", before, vfstest.Snapshot(t, vfs.Default, dir))
	mustf(t, ro.Close(), "close read-only")
}

// A read-only open of a directory that is not there, or that holds no
// store (an empty directory), fails with ErrNotAStore and creates
// nothing: a reader never makes a store. Once a store was created there,
// the same open shows it.
func TestReadOnlyOpenCreatesNothing(t *testing.T) {
	fsys := vfs.NewMem()
	if _, err := Open("/nope", Options{FS: fsys, ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read-only open of a missing dir: %v", err)
	}
	if _, err := fsys.Stat("/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the directory was created: %v", err)
	}
	mustf(t, fsys.MkdirAll("/empty"), "mkdir")
	if _, err := Open("/empty", Options{FS: fsys, ReadOnly: true}); !errors.Is(err, ErrNotAStore) || !strings.Contains(err.Error(), "holds no store") {
		t.Fatalf("read-only open of an empty directory: %v, want ErrNotAStore", err)
	}
	if names, _ := fsys.List("/empty"); len(names) != 0 {
		t.Errorf("the read-only open wrote %v", names)
	}
	w, err := Open("/empty", Options{FS: fsys})
	mustf(t, err, "create")
	mustf(t, w.Close(), "close")
	s, err := Open("/empty", Options{FS: fsys, ReadOnly: true})
	mustf(t, err, "open")
	if len(s.Topics()) != 0 || len(s.Groups()) != 0 {
		t.Errorf("a new store shows %v, %v", s.Topics(), s.Groups())
	}
	mustf(t, s.Close(), "close")
}

// TestWritableOpenWithoutWritePermission: a writable Open of a store this
// user cannot write fails at the lock with an error that says so (and
// still matches fs.ErrPermission), changing nothing; a walk's read-only
// DIR said only "open DIR/.lock: permission denied".
func TestWritableOpenWithoutWritePermission(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := vfstest.Snapshot(t, vfs.Default, dir)
	// As a read-only directory does: its existing entries stay, the lock
	// file cannot be created.
	lockDenied := vfs.Inject(vfs.Default, vfs.If(vfs.Kinds(vfs.OpLock), syscall.EACCES))
	_, err = Open(dir, Options{FS: lockDenied, Logger: quiet})
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "cannot be written by this user") {
		t.Fatalf("writable open without write permission: %v", err)
	}
	vfstest.Unchanged(t, "a refused writable open", before, vfstest.Snapshot(t, vfs.Default, dir))
	// A read-only mount (a walk's said only "open DIR/.lock: read-only
	// file system").
	readOnlyMount := vfs.Inject(vfs.Default, vfs.If(vfs.Kinds(vfs.OpLock), syscall.EROFS))
	_, err = Open(dir, Options{FS: readOnlyMount, Logger: quiet})
	if !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), "is on a read-only file system") {
		t.Fatalf("writable open on a read-only mount: %v", err)
	}
	vfstest.Unchanged(t, "a writable open refused by a read-only mount", before, vfstest.Snapshot(t, vfs.Default, dir))
}
