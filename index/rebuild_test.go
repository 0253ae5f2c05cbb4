package index

import (
	"bytes"
	"errors"
	"io/fs"
	"sync"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// opLog records the operations made through an injecting FS.
type opLog struct {
	mu  sync.Mutex
	ops []vfs.Op
}

func (l *opLog) Inject(op vfs.Op) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
	return nil
}

// kinds returns the operations of the given kinds recorded since from.
func (l *opLog) kinds(from int, kinds ...vfs.OpKind) []vfs.Op {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []vfs.Op
	for _, op := range l.ops[from:] {
		for _, k := range kinds {
			if op.Kind == k {
				out = append(out, op)
			}
		}
	}
	return out
}

func (l *opLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ops)
}

// writes are the operations that change a file or make it durable.
var writes = []vfs.OpKind{vfs.OpWrite, vfs.OpWriteAt, vfs.OpSync, vfs.OpTruncate, vfs.OpPreallocate,
	vfs.OpFlush, vfs.OpCreate, vfs.OpRemove, vfs.OpRename, vfs.OpSyncDir}

// TestScratchFollowsAppendRules: an in-memory index takes and refuses
// exactly the appends its file-backed twin does, ErrFull included.
func TestScratchFollowsAppendRules(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		opts := Options{MaxBytes: 10 * OffsetEntrySize, Writable: true}
		x := mustOffset(t, fsys, indexPath(dir, "0.index"), 100, opts)
		defer x.Close()
		s := x.Scratch()
		offsets := []int64{105, 105, 104, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200}
		for i, off := range offsets {
			errFile := x.Append(off, int64(i)*10)
			errMem := s.Append(off, int64(i)*10)
			if (errFile == nil) != (errMem == nil) || !errors.Is(errMem, errors.Unwrap(errFile)) && errFile != nil {
				t.Fatalf("append %d: file %v, scratch %v", off, errFile, errMem)
			}
		}
		if x.Entries() != s.Entries() || s.Entries() != 10 {
			t.Fatalf("entries: file %d, scratch %d, want 10", x.Entries(), s.Entries())
		}
		for i := range x.Entries() {
			if x.Entry(i) != s.Entry(i) {
				t.Fatalf("entry %d: file %v, scratch %v", i, x.Entry(i), s.Entry(i))
			}
		}

		tx := mustTime(t, fsys, indexPath(dir, "0.timeindex"), 100, Options{MaxBytes: 4 * TimeEntrySize, Writable: true})
		defer tx.Close()
		ts := tx.Scratch()
		for _, e := range []TimestampOffset{{5, 101}, {5, 102}, {4, 103}, {7, 99}, {9, 104}, {11, 105}, {12, 106}} {
			errFile := tx.MaybeAppend(e.Timestamp, e.Offset, false)
			errMem := ts.MaybeAppend(e.Timestamp, e.Offset, false)
			if (errFile == nil) != (errMem == nil) {
				t.Fatalf("time append %v: file %v, scratch %v", e, errFile, errMem)
			}
		}
		if err := ts.MaybeAppend(20, 110, true); err != nil {
			t.Fatal(err)
		}
		if err := tx.MaybeAppend(20, 110, true); err != nil {
			t.Fatal(err)
		}
		if tx.Entries() != ts.Entries() || tx.LastEntry() != ts.LastEntry() {
			t.Fatalf("time entries: file %d (last %v), scratch %d (last %v)", tx.Entries(), tx.LastEntry(), ts.Entries(), ts.LastEntry())
		}
	})
}

// sealedOffsetFile writes a sealed offset index holding entries and opens
// it sealed on an FS that records its operations.
func sealedOffsetFile(t *testing.T, fsys vfs.FS, dir string, entries []OffsetPosition) (*OffsetIndex, *opLog) {
	t.Helper()
	p := indexPath(dir, "7.index")
	w := mustOffset(t, fsys, p, 7, Options{Writable: true, MaxBytes: 1024})
	for _, e := range entries {
		if err := w.Append(e.Offset, e.Position); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ops := &opLog{}
	return mustOffset(t, vfs.Inject(fsys, ops), p, 7, Options{MaxBytes: 1024}), ops
}

// TestHoldsComparesWithoutWriting: a sealed index holds a scratch's entries
// only when the file has exactly those bytes; comparing only reads.
func TestHoldsComparesWithoutWriting(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		entries := []OffsetPosition{{10, 100}, {20, 250}, {35, 400}}
		x, ops := sealedOffsetFile(t, fsys, dir, entries)
		defer x.Close()
		before := readFile(t, fsys, x.Path())
		for _, tc := range []struct {
			name string
			want []OffsetPosition
			same bool
		}{
			{"same", entries, true},
			{"fewer", entries[:2], false},
			{"more", append(entries[:3:3], OffsetPosition{40, 500}), false},
			{"other position", []OffsetPosition{{10, 100}, {20, 251}, {35, 400}}, false},
			{"none", nil, false},
		} {
			s := x.Scratch()
			for _, e := range tc.want {
				if err := s.Append(e.Offset, e.Position); err != nil {
					t.Fatal(err)
				}
			}
			got, err := x.Holds(s)
			if err != nil || got != tc.same {
				t.Fatalf("%s: Holds = %v, %v; want %v", tc.name, got, err, tc.same)
			}
		}
		if w := ops.kinds(0, writes...); len(w) > 0 {
			t.Fatalf("comparing wrote: %v", w)
		}
		if !bytes.Equal(readFile(t, fsys, x.Path()), before) {
			t.Fatal("comparing changed the file")
		}
		// A sealed index left as it was is made durable on request.
		from := ops.len()
		if err := x.SyncFile(); err != nil {
			t.Fatal(err)
		}
		if s := ops.kinds(from, vfs.OpSync); len(s) != 1 || s[0].Path != x.Path() {
			t.Fatalf("SyncFile made %v, want one sync of %s", s, x.Path())
		}
	})
}

// crashedOffsetFile leaves the file an active offset index has after a
// crash: its entries, then zeros up to its preallocated size.
func crashedOffsetFile(t *testing.T, fsys vfs.FS, p string, base int64, maxBytes int, entries []OffsetPosition) {
	t.Helper()
	if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	w := mustOffset(t, fsys, p, base, Options{Writable: true, MaxBytes: maxBytes})
	for _, e := range entries {
		if err := w.Append(e.Offset, e.Position); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// No Close: that would trim the file. Unmapping is what a killed
	// process's exit does.
	w.b.mu.Lock()
	w.b.unmapLocked()
	w.b.mu.Unlock()
	if got := fileSize(t, fsys, p); got != int64(maxBytes) {
		t.Fatalf("crashed index of %d bytes, want %d", got, maxBytes)
	}
}

// TestRewriteStoresOnlyWhatDiffers: rewriting a crashed active index with
// the entries it already holds stores nothing and keeps the appends that
// follow, and the entries before them, intact; a rewrite with other
// entries stores them and zeroes the stale ones after them.
func TestRewriteStoresOnlyWhatDiffers(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		const maxBytes = 4096
		p := indexPath(dir, "3.index")
		entries := []OffsetPosition{{10, 100}, {20, 250}, {35, 400}}
		crashedOffsetFile(t, fsys, p, 3, maxBytes, entries)
		before := readFile(t, fsys, p)

		ops := &opLog{}
		x := mustOffset(t, vfs.Inject(fsys, ops), p, 3, Options{Writable: true, MaxBytes: maxBytes})
		s := x.Scratch()
		for _, e := range entries {
			if err := s.Append(e.Offset, e.Position); err != nil {
				t.Fatal(err)
			}
		}
		from := ops.len()
		changed, err := x.Rewrite(s)
		if err != nil || changed {
			t.Fatalf("Rewrite of the same entries = %v, %v; want no change", changed, err)
		}
		if w := ops.kinds(from, writes...); len(w) > 0 {
			t.Fatalf("a Rewrite that changed nothing made %v", w)
		}
		if x.Entries() != len(entries) {
			t.Fatalf("%d entries after Rewrite, want %d", x.Entries(), len(entries))
		}
		if !bytes.Equal(readFile(t, fsys, p), before) {
			t.Fatal("a Rewrite that changed nothing changed the file")
		}
		// The appender goes on after the rewritten entries (and warms the
		// pages past them, which must not reach back over them).
		if err := x.Append(50, 600); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		got := decodeOffsetFile(t, readFile(t, fsys, p), 3)
		want := append(entries[:3:3], OffsetPosition{50, 600})
		if len(got) != len(want) {
			t.Fatalf("entries after append and close: %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("entries after append and close: %v, want %v", got, want)
			}
		}

		// A file a power loss left empty: the rewrite stores every entry,
		// and the appends after it keep them.
		if err := fsys.Remove(p); err != nil {
			t.Fatal(err)
		}
		x = mustOffset(t, fsys, p, 3, Options{Writable: true, MaxBytes: maxBytes})
		if changed, err := x.Rewrite(s); err != nil || !changed {
			t.Fatalf("Rewrite into an empty file = %v, %v; want a change", changed, err)
		}
		if err := x.Append(50, 600); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if got := decodeOffsetFile(t, readFile(t, fsys, p), 3); len(got) != 4 || got[0] != entries[0] || got[3] != (OffsetPosition{50, 600}) {
			t.Fatalf("entries after rewriting an empty file, appending and closing: %v", got)
		}

		// Fewer, different entries: stored, and the stale ones zeroed.
		crashedOffsetFile(t, fsys, p, 3, maxBytes, entries)
		x = mustOffset(t, fsys, p, 3, Options{Writable: true, MaxBytes: maxBytes})
		defer x.Close()
		s = x.Scratch()
		if err := s.Append(12, 100); err != nil {
			t.Fatal(err)
		}
		changed, err = x.Rewrite(s)
		if err != nil || !changed {
			t.Fatalf("Rewrite of other entries = %v, %v; want a change", changed, err)
		}
		if err := x.Flush(); err != nil {
			t.Fatal(err)
		}
		raw := readFile(t, fsys, p)
		if got := decodeOffsetFile(t, raw[:8], 3); got[0] != (OffsetPosition{12, 100}) {
			t.Fatalf("first entry %v after Rewrite, want {12 100}", got[0])
		}
		if !isZeroEntry(raw[8:24]) {
			t.Fatalf("stale entries after Rewrite: %x", raw[8:24])
		}
	})
}
