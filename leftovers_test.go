package seglog

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// writeSegments makes a closed log in dir with at least n segments and
// returns their base offsets.
func writeSegments(t *testing.T, fs vfs.FS, dir string, n int) []int64 {
	t.Helper()
	l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 4 << 10, IndexIntervalBytes: 256, MaxIndexBytes: 1200}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for l.NumSegments() < n {
		if _, err := l.Append(recordsAt(l.EndOffset(), 4)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.List(dir)
	var bases []int64
	for _, name := range names {
		if b, suffix, ok := segment.ParseFileName(name); ok && suffix == segment.LogSuffix {
			bases = append(bases, b)
		}
	}
	return bases
}

func copyFile(t *testing.T, fs vfs.FS, from, to string) {
	t.Helper()
	src, err := fs.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	size, _ := src.Size()
	buf := make([]byte, size)
	if n, err := src.ReadAt(buf, 0); n != len(buf) {
		t.Fatalf("ReadAt: %d of %d bytes: %v", n, len(buf), err)
	}
	dst, err := fs.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Write(buf); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLeftoversResolved: files a crash left in the middle of a deletion or
// a compaction swap are resolved on open as Kafka's loader does.
func TestLeftoversResolved(t *testing.T) {
	fs := vfs.NewMem()
	t.Run("deleted, tmp and orphan files are removed", func(t *testing.T) {
		dir := "/a"
		bases := writeSegments(t, fs, dir, 3)
		copyFile(t, fs, filepath.Join(dir, segment.FileName(bases[0], segment.LogSuffix)), filepath.Join(dir, segment.FileName(bases[0], ".log.deleted")))
		copyFile(t, fs, filepath.Join(dir, segment.FileName(bases[1], segment.IndexSuffix)), filepath.Join(dir, segment.FileName(999999, segment.IndexSuffix)))
		copyFile(t, fs, filepath.Join(dir, RecoveryPointFile), filepath.Join(dir, RecoveryPointFile+".tmp"))
		l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		names, _ := fs.List(dir)
		for _, bad := range []string{segment.FileName(bases[0], ".log.deleted"), segment.FileName(999999, segment.IndexSuffix), RecoveryPointFile + ".tmp"} {
			if slices.Contains(names, bad) {
				t.Errorf("%s survived open", bad)
			}
		}
	})
	t.Run("an unfinished compaction is rolled back", func(t *testing.T) {
		dir := "/b"
		bases := writeSegments(t, fs, dir, 3)
		// A .cleaned output and a .swap at or above it: step 2 of the swap
		// never completed, so both go and the originals stay.
		copyFile(t, fs, filepath.Join(dir, segment.FileName(bases[1], segment.LogSuffix)), filepath.Join(dir, segment.FileName(bases[1], ".log.cleaned")))
		copyFile(t, fs, filepath.Join(dir, segment.FileName(bases[1], segment.LogSuffix)), filepath.Join(dir, segment.FileName(bases[1], ".log.swap")))
		l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		end := l.EndOffset()
		l.Close()
		names, _ := fs.List(dir)
		for _, n := range names {
			if filepath.Ext(n) == ".cleaned" || filepath.Ext(n) == ".swap" {
				t.Errorf("%s survived open", n)
			}
		}
		if !slices.Contains(names, segment.FileName(bases[1], segment.LogSuffix)) {
			t.Errorf("the original segment %d was deleted", bases[1])
		}
		checkContiguous(t, fs, dir, end)
	})
	t.Run("a finished compaction's swap is completed", func(t *testing.T) {
		dir := "/c"
		bases := writeSegments(t, fs, dir, 4)
		// Pretend segments 0 and 1 were compacted into one .swap at base 0
		// holding segment 0's and 1's batches: the old files in the range
		// must go and the swap takes the name.
		merged := filepath.Join(dir, segment.FileName(bases[0], ".log.swap"))
		copyFile(t, fs, filepath.Join(dir, segment.FileName(bases[0], segment.LogSuffix)), merged)
		appendFile(t, fs, filepath.Join(dir, segment.FileName(bases[1], segment.LogSuffix)), merged)
		l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		end := l.EndOffset()
		l.Close()
		names, _ := fs.List(dir)
		if slices.Contains(names, segment.FileName(bases[1], segment.LogSuffix)) {
			t.Errorf("segment %d, covered by the swap, survived", bases[1])
		}
		if slices.Contains(names, segment.FileName(bases[0], ".log.swap")) {
			t.Errorf("the .swap file was not renamed")
		}
		checkContiguous(t, fs, dir, end)
	})
}

func appendFile(t *testing.T, fs vfs.FS, from, to string) {
	t.Helper()
	src, err := fs.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := src.Size()
	buf := make([]byte, size)
	if n, err := src.ReadAt(buf, 0); n != len(buf) {
		t.Fatalf("ReadAt: %d of %d bytes: %v", n, len(buf), err)
	}
	src.Close()
	dst, err := fs.OpenReadWrite(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Write(buf); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func checkContiguous(t *testing.T, fs vfs.FS, dir string, end int64) {
	t.Helper()
	l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	next := l.StartOffset()
	for r, err := range l.Records(next) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != next || !sameBytes(r.Value, crashValue(r.Offset, len(r.Value))) {
			t.Fatalf("offset %d: wrong record", next)
		}
		next++
	}
	if next != end {
		t.Fatalf("read to %d, end %d", next, end)
	}
}

// TestLazyIndexMapping: opening a log with many sealed segments maps none
// of their indexes; reading all of them keeps at most MaxMappedIndexes
// mapped, evicting the least recently used.
func TestLazyIndexMapping(t *testing.T) {
	fs := vfs.NewMem()
	bases := writeSegments(t, fs, "/lazy", 60)
	l, err := Open("/lazy", Options{FS: fs, MaxMappedIndexes: 8, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if st := l.cache.Stats(); st.Mapped != 0 || st.Maps != 0 {
		t.Fatalf("open of %d segments mapped indexes: %+v", len(bases), st)
	}
	// One read per segment, each from inside it, so every offset index is
	// consulted.
	for _, b := range bases[:len(bases)-1] {
		s, err := l.Read(b+5, 1, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if st := l.cache.Stats(); st.Mapped > 8 {
			t.Fatalf("%d sealed indexes mapped, bound 8", st.Mapped)
		}
	}
	if st := l.cache.Stats(); st.Maps < uint64(len(bases))-2 || st.Evictions == 0 {
		t.Fatalf("reading %d segments: %+v; want a mapping per segment and evictions", len(bases), st)
	}
}

// TestOpenHoldsNoSealedDescriptors: opening a log of many segments, and
// asking its size, opens none of the sealed segments' files.
func TestOpenHoldsNoSealedDescriptors(t *testing.T) {
	dir := t.TempDir()
	bases := writeSegments(t, vfs.Default, dir, 40)
	before := openFds(t)
	l, err := Open(dir, Options{LogConfig: LogConfig{MaxIndexBytes: 4096}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Size() == 0 {
		t.Fatal("empty log")
	}
	// The active segment's three files and the lock are all that may be
	// open; 40 segments' worth would be 40 or more.
	if opened := openFds(t) - before; opened > 6 {
		t.Fatalf("%d descriptors opened for a log of %d segments", opened, len(bases))
	}
}
