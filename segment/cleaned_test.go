package segment

import (
	"bytes"
	"errors"
	"io/fs"
	"testing"

	"github.com/seglog/seglog/record"
)

// TestCleanedMatchesAppends: a segment written whole by Cleaned has the
// bytes, in its .log and both indexes, of one written by appends and
// sealed by a roll: one index rule for both.
func TestCleanedMatchesAppends(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		const base = 1000
		g := newGen(7, base, 120)
		var batches [][]byte
		for range 60 {
			batches = append(batches, g.batch(t).bytes)
		}
		s := mustCreate(t, e, base, opts)
		w, err := NewCleaned(e.fs, e.dir, base, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range batches {
			if err := s.Append(record.Batch(b)); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
			if err := w.Append(record.Batch(b)); err != nil {
				t.Fatalf("cleaned append %d: %v", i, err)
			}
		}
		if w.Size() != s.Size() || w.NextOffset() != s.NextOffset() || w.BaseOffset() != base {
			t.Fatalf("cleaned: size %d next %d base %d; appended: size %d next %d", w.Size(), w.NextOffset(), w.BaseOffset(), s.Size(), s.NextOffset())
		}
		if err := s.Seal(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if w.Finished() {
			t.Fatal("finished before Finish")
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		if !w.Finished() {
			t.Fatal("not finished after Finish")
		}
		for i, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			if want := FileName(base, suf) + CleanedSuffix; w.Names()[i] != want {
				t.Fatalf("Names()[%d] = %q, want %q", i, w.Names()[i], want)
			}
			got, want := readFile(t, e.fs, e.path(base, suf)+CleanedSuffix), readFile(t, e.fs, e.path(base, suf))
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: cleaned %d bytes differ from appended %d bytes", suf, len(got), len(want))
			}
		}
		if len(readFile(t, e.fs, e.path(base, IndexSuffix))) == 0 {
			t.Fatal("no index entries: the comparison says nothing")
		}
	})
}

// TestCleanedLegacyAndEntries: legacy entries go in at the offsets the
// caller gives, out of order or mislabelled ones are refused without a
// write, Entries yields every entry back, and Abort deletes the files.
func TestCleanedLegacyAndEntries(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: -1, MaxIndexBytes: smallIdx}
		const base = 100
		v0 := legacyEntry(100, 0, 0, []byte("zero"))
		v1 := legacyEntry(102, 1, 5_000_000, []byte("one")) // a wrapper of 101..102
		mb := newGen(5, 103, 20).batch(t)
		// A leftover of an abandoned attempt is replaced.
		writeFile(t, e.fs, e.path(base, LogSuffix)+CleanedSuffix, []byte("leftover"))
		w, err := NewCleaned(e.fs, e.dir, base, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AppendLegacy(v0, 100, 100, -1); err != nil {
			t.Fatal(err)
		}
		for _, bad := range []struct{ first, last int64 }{{101, 101}, {99, 102}, {102, 101}} {
			if err := w.AppendLegacy(v1, bad.first, bad.last, 5_000_000); !errors.Is(err, ErrBadAppend) {
				t.Fatalf("AppendLegacy(%d..%d) of an entry at 102 after 100: %v, want ErrBadAppend", bad.first, bad.last, err)
			}
		}
		if err := w.AppendLegacy(v1, 101, 102, 5_000_000); err != nil {
			t.Fatal(err)
		}
		if err := w.Append(record.Batch(mb.bytes)); err != nil {
			t.Fatal(err)
		}
		if err := w.AppendLegacy(v0, 100, 100, -1); !errors.Is(err, ErrBadAppend) {
			t.Fatalf("a legacy entry below the next offset: %v, want ErrBadAppend", err)
		}
		if w.NextOffset() != mb.last+1 {
			t.Fatalf("NextOffset %d, want %d", w.NextOffset(), mb.last+1)
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		// Opened as the swap opens it, once renamed.
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			if err := e.fs.Rename(e.path(base, suf)+CleanedSuffix, e.path(base, suf)); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Open(e.fs, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.MaxTimestamp() != max(5_000_000, mb.maxTS) || s.NextOffset() != mb.last+1 {
			t.Fatalf("MaxTimestamp %d NextOffset %d", s.MaxTimestamp(), s.NextOffset())
		}
		want := [][]byte{v0, v1, mb.bytes}
		var buf []byte
		n := 0
		for ent, err := range s.Entries(&buf) {
			if err != nil {
				t.Fatal(err)
			}
			if n >= len(want) || !bytes.Equal(ent, want[n]) {
				t.Fatalf("entry %d differs", n)
			}
			n++
		}
		if n != len(want) {
			t.Fatalf("%d entries, want %d", n, len(want))
		}

		w, err = NewCleaned(e.fs, e.dir, mb.last+1, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(record.Batch(newGen(6, mb.last+1, 20).batch(t).bytes)); err != nil {
			t.Fatal(err)
		}
		w.Abort()
		for _, n := range w.Names() {
			if _, err := e.fs.Stat(e.dir + "/" + n); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%s after Abort: %v", n, err)
			}
		}
		if err := w.Append(record.Batch(mb.bytes)); !errors.Is(err, ErrClosed) {
			t.Fatalf("Append after Abort: %v, want ErrClosed", err)
		}
	})
}
