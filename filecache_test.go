package seglog

import (
	"bytes"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// TestSealedDescriptorsBounded: a consumer reading a log of 40 sealed
// segments from its start, through Records and through Read slices, leaves
// at most MaxOpenSegmentFiles sealed .log descriptors open (plus the
// bounded index mappings' and the active segment's), and reads every
// record right although the descriptors are closed and reopened under it.
// Without the bound it leaves one per segment.
func TestSealedDescriptorsBounded(t *testing.T) {
	dir := t.TempDir()
	bases := writeSegments(t, vfs.Default, dir, 40)
	for _, tc := range []struct {
		name     string
		maxFiles int
		atMost   int // descriptors left open after the reads, at most
		atLeast  int
	}{
		// 4 .log, up to 2 × 4 index mappings, the active segment's
		// three files and the lock.
		{"bound 4", 4, 4 + 8 + 4, 0},
		{"default", 0, 1 << 20, len(bases) - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := openFds(t)
			l, err := Open(dir, Options{MaxOpenSegmentFiles: tc.maxFiles, MaxMappedIndexes: 4, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			want := l.StartOffset()
			for r, err := range l.Records(want) {
				if err != nil {
					t.Fatalf("at %d: %v", want, err)
				}
				exp := recordsAt(r.Offset, 1)[0]
				if r.Offset != want || !bytes.Equal(r.Value, exp.Value) || !bytes.Equal(r.Key, exp.Key) {
					t.Fatalf("record %d (want offset %d): wrong bytes", r.Offset, want)
				}
				want++
			}
			if want != l.EndOffset() {
				t.Fatalf("Records ended at %d, log end %d", want, l.EndOffset())
			}
			// Every segment once more through Read, whose slices pin their
			// file: bytes equal to the file's at the slice's position.
			for _, b := range bases {
				s, err := l.Read(b, 1, ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if _, err := s.WriteTo(&got); err != nil {
					t.Fatal(err)
				}
				file := readFileAt(t, s.File(), s.Position(), int(s.Len()))
				if !bytes.Equal(got.Bytes(), file) {
					t.Fatalf("segment %d: slice bytes differ from the file's", b)
				}
				s.Close()
			}
			opened := openFds(t) - before
			if opened > tc.atMost || opened < tc.atLeast {
				t.Fatalf("%d descriptors open after reading %d segments; want [%d, %d]", opened, len(bases), tc.atLeast, tc.atMost)
			}
		})
	}
}

// readFileAt reads n bytes of the file at path from pos, outside the Log.
func readFileAt(t *testing.T, path string, pos int64, n int) []byte {
	t.Helper()
	f, err := vfs.Default.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, n)
	if _, err := f.ReadAt(p, pos); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSlicePinsItsFile: a slice keeps its segment's descriptor open while
// every other segment is read through a bound of one open file, and while
// retention removes its segment; it sends the same bytes before and after,
// and the removed segment's files are unlinked once it is closed.
func TestSlicePinsItsFile(t *testing.T) {
	dir := t.TempDir()
	bases := writeSegments(t, vfs.Default, dir, 12)
	l, err := Open(dir, Options{MaxOpenSegmentFiles: 1, MaxMappedIndexes: 1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := l.Read(bases[0], 1<<20, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var first bytes.Buffer
	if _, err := s.WriteTo(&first); err != nil {
		t.Fatal(err)
	}
	readAll := func() {
		t.Helper()
		n := 0
		for _, err := range l.Records(l.StartOffset()) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if int64(n) != l.EndOffset()-l.StartOffset() {
			t.Fatalf("read %d records of [%d, %d)", n, l.StartOffset(), l.EndOffset())
		}
	}
	readAll()
	if _, err := l.DeleteBefore(bases[2]); err != nil {
		t.Fatal(err)
	}
	readAll()
	for range 2 {
		var again bytes.Buffer
		if _, err := s.WriteTo(&again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), first.Bytes()) {
			t.Fatal("a pinned slice sent other bytes after its segment's neighbours were read and it was removed")
		}
		readAll()
	}
	deleted := s.File()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.Default.Stat(deleted); err == nil {
		t.Fatalf("%s still exists after its last slice closed", deleted)
	}
}

// TestReadOnlyKeepsItsDescriptors: a read-only Log never closes a .log it
// read, whatever MaxOpenSegmentFiles says: the writer beside it may replace
// a segment file under the same name (compaction's swap), and a reopen by
// name would read the new file at the old one's positions.
func TestReadOnlyKeepsItsDescriptors(t *testing.T) {
	dir := t.TempDir()
	bases := writeSegments(t, vfs.Default, dir, 12)
	before := openFds(t)
	l, err := Open(dir, Options{ReadOnly: true, MaxOpenSegmentFiles: 1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := int64(0)
	for _, err := range l.Records(l.StartOffset()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != l.EndOffset()-l.StartOffset() {
		t.Fatalf("read %d records of [%d, %d)", n, l.StartOffset(), l.EndOffset())
	}
	if opened := openFds(t) - before; opened < len(bases)-1 {
		t.Fatalf("%d descriptors open after reading %d segments read-only: some were closed", opened, len(bases))
	}
}
