package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// memWith returns a MemFS with /d made and a file /d/name holding data,
// written but neither synced nor dir-synced.
func memWith(t *testing.T, name, data string) (*MemFS, File) {
	t.Helper()
	m := NewMem()
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	f, err := m.Create("/d/" + name)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte(data))
	return m, f
}

func contents(t *testing.T, fsys FS, name string) (string, bool) {
	t.Helper()
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return string(readWhole(t, f)), true
}

func TestMemCrashDropsUnsyncedEntry(t *testing.T) {
	m, f := memWith(t, "a", "data")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, ok := contents(t, m.CrashClone(), "/d/a"); ok {
		t.Fatal("file whose directory was never synced survived the crash")
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if got, ok := contents(t, m.CrashClone(), "/d/a"); !ok || got != "data" {
		t.Fatalf("after Sync and SyncDir: %q, %v", got, ok)
	}
}

func TestMemCrashDropsUnsyncedData(t *testing.T) {
	m, f := memWith(t, "a", "never synced")
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if got, ok := contents(t, m.CrashClone(), "/d/a"); !ok || got != "" {
		t.Fatalf("never-synced file after crash: %q, %v; want empty", got, ok)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte(" + tail"))
	if _, err := f.WriteAt([]byte("N"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if got, _ := contents(t, m.CrashClone(), "/d/a"); got != "never synced" {
		t.Fatalf("after crash: %q, want the synced contents", got)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, _ := contents(t, m.CrashClone(), "/d/a"); got != "Nev" {
		t.Fatalf("after second sync and crash: %q, want Nev", got)
	}
	// The original is untouched by cloning.
	if got, _ := contents(t, m, "/d/a"); got != "Nev" {
		t.Fatalf("original after CrashClone: %q", got)
	}
}

// TestMemSyncTracksChanges checks the incremental copy of Sync: writes below,
// at and past the synced length, and a shrink followed by regrowth, must all
// reach the synced contents.
func TestMemSyncTracksChanges(t *testing.T) {
	m, f := memWith(t, "a", "0123456789")
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		f.Sync,
		func() error { _, err := f.WriteAt([]byte("AB"), 3); return err },
		f.Sync,
		func() error { return f.Truncate(2) },
		func() error { return f.Truncate(6) },
		f.Sync,
		func() error { _, err := f.Write([]byte("xyz")); return err },
		func() error { _, err := f.WriteAt([]byte("Q"), 0); return err },
		f.Sync,
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		want, _ := contents(t, m, "/d/a")
		got, _ := contents(t, m.CrashClone(), "/d/a")
		if isSync := i == 0 || i == 2 || i == 5 || i == 8; isSync && got != want {
			t.Fatalf("step %d: crash state %q, current %q", i, got, want)
		}
	}
}

func TestMemCrashRevertsRename(t *testing.T) {
	m, f := memWith(t, "a.tmp", "new")
	g, err := m.Create("/d/a")
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, g, []byte("old"))
	for _, x := range []File{f, g} {
		if err := x.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if err := m.Rename("/d/a.tmp", "/d/a"); err != nil {
		t.Fatal(err)
	}
	c := m.CrashClone()
	if got, _ := contents(t, c, "/d/a"); got != "old" {
		t.Fatalf("rename not dir-synced: /d/a = %q, want old", got)
	}
	if got, ok := contents(t, c, "/d/a.tmp"); !ok || got != "new" {
		t.Fatalf("rename not dir-synced: /d/a.tmp = %q, %v", got, ok)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	c = m.CrashClone()
	if got, _ := contents(t, c, "/d/a"); got != "new" {
		t.Fatalf("rename dir-synced: /d/a = %q, want new", got)
	}
	if names, _ := c.List("/d"); len(names) != 1 {
		t.Fatalf("after synced rename: %v", names)
	}
}

func TestMemCrashRestoresUnsyncedRemove(t *testing.T) {
	m, f := memWith(t, "a", "keep")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove("/d/a"); err != nil {
		t.Fatal(err)
	}
	if got, ok := contents(t, m.CrashClone(), "/d/a"); !ok || got != "keep" {
		t.Fatalf("remove not dir-synced: %q, %v", got, ok)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if _, ok := contents(t, m.CrashClone(), "/d/a"); ok {
		t.Fatal("dir-synced remove undone by crash")
	}
}

func TestMemCrashTornTail(t *testing.T) {
	const synced, tail = "synced|", "0123456789abcdefghijklmnopqrstuvwxyz"
	m, f := memWith(t, "a", synced)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte(tail))
	lengths := map[int]bool{}
	for seed := range uint64(64) {
		c := m.CrashCloneWith(CrashOptions{Rand: rand.New(rand.NewPCG(seed, 1)), KeepUnsynced: 0.75})
		got, _ := contents(t, c, "/d/a")
		if len(got) < len(synced) || got != (synced + tail)[:len(got)] {
			t.Fatalf("seed %d: %q is not the synced data plus a prefix of the tail", seed, got)
		}
		lengths[len(got)] = true
		again, _ := contents(t, m.CrashCloneWith(CrashOptions{Rand: rand.New(rand.NewPCG(seed, 1)), KeepUnsynced: 0.75}), "/d/a")
		if again != got {
			t.Fatalf("seed %d: not deterministic: %q then %q", seed, got, again)
		}
	}
	if !lengths[len(synced)] || len(lengths) < 5 {
		t.Fatalf("torn tails over 64 seeds had lengths %v: want the bare synced length and several others", lengths)
	}
	for seed := range uint64(8) {
		c := m.CrashCloneWith(CrashOptions{Rand: rand.New(rand.NewPCG(seed, 1)), KeepUnsynced: 0})
		if got, _ := contents(t, c, "/d/a"); got != synced {
			t.Fatalf("KeepUnsynced 0 kept %q", got)
		}
	}
}

func TestMemCrashKeepUnsyncedEntries(t *testing.T) {
	m, f := memWith(t, "a", "x")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	kept := 0
	for seed := range uint64(32) {
		c := m.CrashCloneWith(CrashOptions{Rand: rand.New(rand.NewPCG(seed, 2)), KeepUnsyncedEntries: 0.5})
		if got, ok := contents(t, c, "/d/a"); ok {
			if got != "x" {
				t.Fatalf("kept entry holds %q", got)
			}
			kept++
		}
	}
	if kept == 0 || kept == 32 {
		t.Fatalf("entry kept in %d of 32 crashes at probability 0.5", kept)
	}
}

func TestMemMappingDurableAfterFlush(t *testing.T) {
	m, f := memWith(t, "idx", "")
	if err := f.Preallocate(0, 4096); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	mp, err := f.Map(4096, true)
	if err != nil {
		t.Fatal(err)
	}
	copy(mp.Bytes()[100:], "entry1")
	if got, _ := contents(t, m.CrashClone(), "/d/idx"); got[100:106] != "\x00\x00\x00\x00\x00\x00" {
		t.Fatalf("unflushed mapped store survived: %q", got[100:106])
	}
	if err := mp.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, _ := contents(t, m.CrashClone(), "/d/idx"); got[100:106] != "entry1" {
		t.Fatalf("flushed mapped store lost: %q", got[100:106])
	}
	// File.Sync also writes back stores made through a mapping, as
	// fdatasync does with dirty shared pages.
	copy(mp.Bytes()[200:], "entry2")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, _ := contents(t, m.CrashClone(), "/d/idx"); got[200:206] != "entry2" {
		t.Fatalf("mapped store lost after File.Sync: %q", got[200:206])
	}
	mp.Unmap()
}

func TestMemMappingFlushCoversOnlyItsRange(t *testing.T) {
	m, f := memWith(t, "a", "")
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, bytes.Repeat([]byte("m"), 100))
	mp, err := f.Map(40, true)
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Unmap()
	if err := mp.Flush(); err != nil {
		t.Fatal(err)
	}
	got, _ := contents(t, m.CrashClone(), "/d/a")
	if got != string(bytes.Repeat([]byte("m"), 40)) {
		t.Fatalf("after Flush of a 40-byte mapping the crash kept %d bytes: %q", len(got), got)
	}
}

func TestMemMappingStaysAliased(t *testing.T) {
	_, f := memWith(t, "a", "abcd")
	mp, err := f.Map(4, true)
	if err != nil {
		t.Fatal(err)
	}
	// Growth within the reserved room keeps the mapping on the file's bytes.
	mustWrite(t, f, make([]byte, 32<<10))
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8); err != nil {
		t.Fatal(err)
	}
	// The kernel zeroes bytes a file regains; the mapping sees that.
	if got := string(mp.Bytes()); got != "ab\x00\x00" {
		t.Fatalf("mapping after shrink and regrowth: %q", got)
	}
	mp.Bytes()[0] = 'Z'
	buf := make([]byte, 1)
	if n, err := f.ReadAt(buf, 0); n != len(buf) {
		t.Fatalf("ReadAt: %d of %d bytes: %v", n, len(buf), err)
	}
	if buf[0] != 'Z' {
		t.Fatalf("store through mapping not seen after growth: %q", buf)
	}
	// Growth past the reservation is refused rather than cutting the
	// mapping off.
	err = f.Truncate(1 << 20)
	if !errors.Is(err, ErrMappedGrowth) {
		t.Fatalf("growth past the reservation while mapped: %v", err)
	}
	if _, err := f.Write(make([]byte, 1<<20)); !errors.Is(err, ErrMappedGrowth) {
		t.Fatalf("append past the reservation while mapped: %v", err)
	}
	if err := mp.Unmap(); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 20); err != nil {
		t.Fatalf("growth after Unmap: %v", err)
	}
}

func TestMemLimitsAndNoFd(t *testing.T) {
	_, f := memWith(t, "a", "")
	if _, err := f.Fd(); !errors.Is(err, ErrNoFd) {
		t.Fatalf("Fd: %v", err)
	}
	if _, err := f.WriteAt([]byte("x"), MemMaxFileSize); err == nil {
		t.Fatal("write past MemMaxFileSize succeeded")
	}
	if err := f.Truncate(MemMaxFileSize + 1); err == nil {
		t.Fatal("truncate past MemMaxFileSize succeeded")
	}
}

func TestMemCrashReleasesLocks(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	l, err := m.Lock("/d/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	c := m.CrashClone()
	l2, err := c.Lock("/d/LOCK")
	if err != nil {
		t.Fatalf("lock held across a crash: %v", err)
	}
	l2.Close()
	if _, err := m.Lock("/d/LOCK"); !errors.Is(err, ErrLocked) {
		t.Fatalf("original lost its lock: %v", err)
	}
}

func TestMemPathsNormalised(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("a/b"); err != nil {
		t.Fatal(err)
	}
	f, err := m.Create("/a//b/../b/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stat("a/b/f"); err != nil {
		t.Fatalf("relative and absolute names differ: %v", err)
	}
	if err := m.Rename("/a", "/a/b/c"); err == nil {
		t.Fatal("renaming a directory into itself succeeded")
	}
}

// TestMemCrashCloneDuringWrites takes crash snapshots while a writer appends
// and syncs: each snapshot must hold at least what was synced before it
// began and never more than was written.
func TestMemCrashCloneDuringWrites(t *testing.T) {
	m, f := memWith(t, "a", "")
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	var synced atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			if _, err := f.Write([]byte{byte(i)}); err != nil {
				t.Error(err)
				return
			}
			if i%3 == 0 {
				if err := f.Sync(); err != nil {
					t.Error(err)
					return
				}
				synced.Store(int64(i + 1))
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		before := synced.Load()
		got, _ := contents(t, m.CrashClone(), "/d/a")
		if int64(len(got)) < before {
			t.Fatalf("snapshot holds %d bytes, %d were synced before it", len(got), before)
		}
		for i := range len(got) {
			if got[i] != byte(i) {
				t.Fatalf("snapshot byte %d = %d", i, got[i])
			}
		}
	}
}
