package index

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// lazyFiles makes n files of 4 KiB each (file i holds byte i+1 throughout)
// and wraps each in a LazyFile under c, evictable when evictable is set.
func lazyFiles(t *testing.T, fsys vfs.FS, dir string, c *Cache, n int, evictable bool) []*LazyFile {
	t.Helper()
	out := make([]*LazyFile, n)
	for i := range out {
		p := path.Join(dir, fmt.Sprintf("%d.log", i))
		f, err := fsys.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(bytes.Repeat([]byte{byte(i + 1)}, 4096)); err != nil {
			t.Fatal(err)
		}
		out[i] = NewLazyFile(c, fsys, p, false, f)
		if err := out[i].SetEvictable(evictable); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { out[i].Close() })
	}
	return out
}

func openCount(files []*LazyFile) int {
	n := 0
	for _, f := range files {
		if f.IsOpen() {
			n++
		}
	}
	return n
}

// readCheck reads 100 bytes of file i at off and checks they are file i's.
func readCheck(t *testing.T, lf *LazyFile, i int, off int64) {
	t.Helper()
	p := make([]byte, 100)
	if _, err := lf.ReadAt(p, off); err != nil {
		t.Fatalf("file %d: %v", i, err)
	}
	if !bytes.Equal(p, bytes.Repeat([]byte{byte(i + 1)}, 100)) {
		t.Fatalf("file %d: read another file's bytes: %v", i, p[:8])
	}
}

// TestLazyFileBound: reading every file of a set larger than the Cache
// leaves at most the bound open, every read returns the file's own bytes
// (a closed file reopens by its path), and the least recently used go
// first.
func TestLazyFileBound(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		c := NewCache(3)
		files := lazyFiles(t, fsys, dir, c, 10, true)
		if got := openCount(files); got != 3 {
			t.Fatalf("%d open after making them evictable, want 3", got)
		}
		for round := range 3 {
			for i, lf := range files {
				readCheck(t, lf, i, int64(round*100))
				if got := openCount(files); got > 3 {
					t.Fatalf("round %d file %d: %d open, bound 3", round, i, got)
				}
			}
		}
		// The three read last are the open ones.
		for i, lf := range files {
			if want := i >= 7; lf.IsOpen() != want {
				t.Fatalf("file %d open = %v after reading 0..9, want %v", i, lf.IsOpen(), want)
			}
		}
		if st := c.Stats(); st.Evictions == 0 || st.Mapped != 3 {
			t.Fatalf("stats %+v: want evictions and 3 open", st)
		}
	})
}

// TestLazyFileNotEvictableNorPinned: a file that is not evictable, or is
// pinned, is never closed however many others are opened, and a pinned
// file's descriptor stays the same until released.
func TestLazyFileNotEvictableNorPinned(t *testing.T) {
	dir := t.TempDir()
	c := NewCache(1)
	held := lazyFiles(t, vfs.Default, dir, c, 2, false)
	pinDir := path.Join(dir, "p")
	if err := vfs.Default.MkdirAll(pinDir); err != nil {
		t.Fatal(err)
	}
	files := lazyFiles(t, vfs.Default, pinDir, c, 5, true)
	f0, release, err := files[0].Pin()
	if err != nil {
		t.Fatal(err)
	}
	fd0, err := f0.Fd()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for i := 1; i < len(files); i++ {
			readCheck(t, files[i], i, int64(round))
		}
	}
	if !files[0].IsOpen() {
		t.Fatal("a pinned file was closed")
	}
	for i, h := range held {
		if !h.IsOpen() {
			t.Fatalf("a file that is not evictable (%d) was closed", i)
		}
	}
	if fd, err := files[0].Fd(); err != nil || fd != fd0 {
		t.Fatalf("pinned descriptor changed: %d, %v (was %d)", fd, err, fd0)
	}
	release()
	release() // twice is harmless
	for i := 1; i < len(files); i++ {
		readCheck(t, files[i], i, 0)
	}
	if files[0].IsOpen() {
		t.Fatal("a released pin kept its file open past the bound")
	}
	// Turning evictability off reopens a closed file and keeps it open.
	if err := files[0].SetEvictable(false); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(files); i++ {
		readCheck(t, files[i], i, 0)
	}
	if !files[0].IsOpen() {
		t.Fatal("SetEvictable(false) did not reopen the file, or it was closed again")
	}
	readCheck(t, files[0], 0, 10)
}

// TestLazyFileReopenFails: a file that vanished while closed reports the
// reopen's error naming it; after Close every use fails with os.ErrClosed.
func TestLazyFileReopenFails(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		c := NewCache(1)
		files := lazyFiles(t, fsys, dir, c, 2, true)
		if files[0].IsOpen() {
			t.Fatal("file 0 should have been closed for file 1")
		}
		if err := fsys.Remove(files[0].Name()); err != nil {
			t.Fatal(err)
		}
		_, err := files[0].ReadAt(make([]byte, 1), 0)
		if !errors.Is(err, os.ErrNotExist) || !bytes.Contains([]byte(err.Error()), []byte(files[0].Name())) {
			t.Fatalf("reopen of a removed file: %v", err)
		}
		if err := files[1].Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := files[1].Size(); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("Size after Close: %v, want os.ErrClosed", err)
		}
		if _, _, err := files[1].Pin(); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("Pin after Close: %v, want os.ErrClosed", err)
		}
	})
}

// TestLazyFileConcurrent: readers of many files under a tiny Cache, with
// pins taken and released and sends through the pinned descriptor, always
// get their own file's bytes (run with -race).
func TestLazyFileConcurrent(t *testing.T) {
	c := NewCache(2)
	files := lazyFiles(t, vfs.Default, t.TempDir(), c, 8, true)
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := make([]byte, 64)
			for n := range 300 {
				i := (g + n) % len(files)
				var err error
				if n%7 == 0 {
					var f vfs.File
					var release func()
					if f, release, err = files[i].Pin(); err == nil {
						_, err = f.ReadAt(p, int64(n))
						release()
					}
				} else {
					_, err = files[i].ReadAt(p, int64(n))
				}
				if err != nil {
					errc <- fmt.Errorf("file %d: %w", i, err)
					return
				}
				if !bytes.Equal(p, bytes.Repeat([]byte{byte(i + 1)}, len(p))) {
					errc <- fmt.Errorf("file %d: read another file's bytes", i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if got := openCount(files); got > 2 {
		t.Fatalf("%d open when idle, bound 2", got)
	}
}

// TestLazyFileExcessSettlesWhenReleased: files a pass could not close
// because they were pinned are closed when the pins go, without waiting for
// another file to be opened (CI saw 8 files open under a bound of 2 once
// the readers of TestLazyFileConcurrent had stopped).
func TestLazyFileExcessSettlesWhenReleased(t *testing.T) {
	c := NewCache(1)
	files := lazyFiles(t, vfs.Default, t.TempDir(), c, 4, true)
	var releases []func()
	for i, lf := range files {
		_, release, err := lf.Pin()
		if err != nil {
			t.Fatalf("pin %d: %v", i, err)
		}
		releases = append(releases, release)
	}
	if got := openCount(files); got != len(files) {
		t.Fatalf("%d open while all %d are pinned", got, len(files))
	}
	for _, release := range releases {
		release()
	}
	if got := openCount(files); got > 1 {
		t.Fatalf("%d open once every pin was released, bound 1", got)
	}
	readCheck(t, files[0], 0, 0)
	if got := openCount(files); got > 1 {
		t.Fatalf("%d open after a read, bound 1", got)
	}
}
