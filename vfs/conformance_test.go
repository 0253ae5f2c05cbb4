package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"testing"
)

// fsCase names a filesystem under test and a fresh directory in it.
type fsCase struct {
	name string
	new  func(t *testing.T) (FS, string)
}

// fsCases are the filesystems the conformance checks run against: they must
// behave alike, or tests written against MemFS would prove nothing about the
// real disk.
var fsCases = []fsCase{
	{"os", func(t *testing.T) (FS, string) { return Default, t.TempDir() }},
	{"mem", func(t *testing.T) (FS, string) { return newMemDir(t) }},
	{"inject(mem)", func(t *testing.T) (FS, string) {
		m, dir := newMemDir(t)
		return Inject(m, &Counter{}), dir
	}},
	{"inject(os)", func(t *testing.T) (FS, string) { return Inject(Default, &Counter{}), t.TempDir() }},
}

func newMemDir(t *testing.T) (*MemFS, string) {
	m := NewMem()
	dir := "/data/test"
	if err := m.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// conformance lists behavioural checks every FS must pass.
var conformance = []struct {
	name string
	fn   func(t *testing.T, fsys FS, dir string)
}{
	{"AppendPosition", testAppendPosition},
	{"OpenModes", testOpenModes},
	{"ReadPastEnd", testReadPastEnd},
	{"TruncateAndPreallocate", testTruncateAndPreallocate},
	{"Reserve", testReserve},
	{"Map", testMap},
	{"Lock", testLock},
	{"Namespace", testNamespace},
	{"Rename", testRename},
	{"Closed", testClosed},
	{"ConcurrentReaders", testConcurrentReaders},
}

func TestConformance(t *testing.T) {
	for _, c := range fsCases {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range conformance {
				t.Run(tc.name, func(t *testing.T) {
					fsys, dir := c.new(t)
					tc.fn(t, fsys, dir)
				})
			}
		})
	}
}

func create(t *testing.T, fsys FS, name string, data string) File {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	mustWrite(t, f, []byte(data))
	return f
}

func testAppendPosition(t *testing.T, fsys FS, dir string) {
	f := create(t, fsys, path.Join(dir, "a"), "hello")
	if _, err := f.WriteAt([]byte("Z"), 9); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := f.ReadAt(buf, 1); err != nil || string(buf) != "ell" {
		t.Fatalf("ReadAt = %q, %v", buf, err)
	}
	mustWrite(t, f, []byte("ab"))
	if got, want := readWhole(t, f), []byte("helloab\x00\x00Z"); !bytes.Equal(got, want) {
		t.Fatalf("contents %q, want %q", got, want)
	}
	// The write position does not follow WriteAt past it.
	mustWrite(t, f, []byte("c"))
	if got, want := readWhole(t, f), []byte("helloabc\x00Z"); !bytes.Equal(got, want) {
		t.Fatalf("contents %q, want %q", got, want)
	}
	if _, err := f.WriteAt(nil, 100); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != 10 {
		t.Fatalf("empty WriteAt past the end changed the size to %d", size)
	}
	if f.Name() != path.Join(dir, "a") {
		t.Fatalf("Name %q", f.Name())
	}
}

func testOpenModes(t *testing.T, fsys FS, dir string) {
	name := path.Join(dir, "a")
	f := create(t, fsys, name, "abc")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	rw, err := fsys.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	mustWrite(t, rw, []byte("de"))
	if got := readWhole(t, rw); string(got) != "abcde" {
		t.Fatalf("after reopen and append: %q", got)
	}

	ro, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := readWhole(t, ro); string(got) != "abcde" {
		t.Fatalf("read-only view: %q", got)
	}
	if _, err := ro.Write([]byte("x")); err == nil {
		t.Fatal("Write on a read-only file succeeded")
	}
	if _, err := ro.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("WriteAt on a read-only file succeeded")
	}
	if _, err := ro.Map(2, true); err == nil {
		t.Fatal("writable Map of a read-only file succeeded")
	}
	if err := ro.Sync(); err != nil {
		t.Fatalf("Sync of a read-only file: %v", err)
	}

	// Create truncates.
	f2 := create(t, fsys, name, "")
	if size, err := f2.Size(); err != nil || size != 0 {
		t.Fatalf("size after Create over existing = %d, %v", size, err)
	}

	_, err = fsys.Create(path.Join(dir, "nodir", "x"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Create in a missing directory: %v", err)
	}
	if _, err := fsys.Open(dir); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
	missing := path.Join(dir, "missing")
	_, err = fsys.Open(missing)
	var pe *os.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != missing {
		t.Fatalf("Open missing: %v", err)
	}
	if _, err := fsys.OpenReadWrite(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenReadWrite missing: %v", err)
	}
}

func testReadPastEnd(t *testing.T, fsys FS, dir string) {
	f := create(t, fsys, path.Join(dir, "a"), "abcdef")
	buf := make([]byte, 4)
	n, err := f.ReadAt(buf, 4)
	if n != 2 || err != io.EOF || string(buf[:n]) != "ef" {
		t.Fatalf("ReadAt across end = %d %q, %v; want 2 \"ef\", EOF", n, buf[:n], err)
	}
	n, err = f.ReadAt(buf, 6)
	if n != 0 || err != io.EOF {
		t.Fatalf("ReadAt at end = %d, %v; want 0, EOF", n, err)
	}
	if _, err := f.ReadAt(buf, -1); err == nil {
		t.Fatal("ReadAt at negative offset succeeded")
	}
}

func testTruncateAndPreallocate(t *testing.T, fsys FS, dir string) {
	name := path.Join(dir, "a")
	f := create(t, fsys, name, "abcdef")
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte("X"))
	if err := f.Truncate(6); err != nil {
		t.Fatal(err)
	}
	if got, want := readWhole(t, f), []byte("abX\x00\x00\x00"); !bytes.Equal(got, want) {
		t.Fatalf("after shrink, write, grow: %q, want %q", got, want)
	}
	if err := f.Preallocate(4, 100); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != 104 {
		t.Fatalf("size after Preallocate(4, 100) = %d, want 104", size)
	}
	// Preallocating inside the file neither shrinks it nor changes bytes.
	if err := f.Preallocate(0, 10); err != nil {
		t.Fatal(err)
	}
	got := readWhole(t, f)
	if len(got) != 104 || !bytes.Equal(got[:3], []byte("abX")) || bytes.ContainsFunc(got[3:], func(r rune) bool { return r != 0 }) {
		t.Fatalf("after Preallocate inside: len %d, %q", len(got), got[:8])
	}
	fi, err := fsys.Stat(name)
	if err != nil || fi.Size() != 104 || fi.IsDir() || fi.Name() != "a" {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	// The append position stays where Write left it.
	mustWrite(t, f, []byte("Y"))
	if got := readWhole(t, f); got[3] != 'Y' {
		t.Fatalf("append after preallocate landed elsewhere: %q", got[:8])
	}
	if err := f.Truncate(-1); err == nil {
		t.Fatal("Truncate(-1) succeeded")
	}
	if err := f.Preallocate(0, 0); err == nil {
		t.Fatal("Preallocate of zero length succeeded")
	}
}

// testReserve: reserving space past the end changes neither the size nor
// what reads and appends see, and a Truncate to the size keeps the bytes.
func testReserve(t *testing.T, fsys FS, dir string) {
	name := path.Join(dir, "a")
	f := create(t, fsys, name, "abc")
	if err := f.Reserve(3, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Reserve(0, 2); err != nil { // inside the file: no change either
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != 3 {
		t.Fatalf("size after Reserve = %d, want 3", size)
	}
	if fi, err := fsys.Stat(name); err != nil || fi.Size() != 3 {
		t.Fatalf("Stat after Reserve = %v, %v", fi, err)
	}
	mustWrite(t, f, []byte("de"))
	if got := readWhole(t, f); string(got) != "abcde" {
		t.Fatalf("after Reserve and append: %q", got)
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	if got := readWhole(t, f); string(got) != "abcde" {
		t.Fatalf("after Truncate to the size: %q", got)
	}
	if err := f.Reserve(-1, 10); err == nil {
		t.Fatal("Reserve at a negative offset succeeded")
	}
	if err := f.Reserve(0, 0); err == nil {
		t.Fatal("Reserve of zero length succeeded")
	}
}

func testMap(t *testing.T, fsys FS, dir string) {
	f := create(t, fsys, path.Join(dir, "a"), "")
	if err := f.Preallocate(0, 8192); err != nil {
		t.Fatal(err)
	}
	m, err := f.Map(8192, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Bytes()) != 8192 {
		t.Fatalf("mapping length %d", len(m.Bytes()))
	}
	copy(m.Bytes()[5000:], "stored")
	buf := make([]byte, 6)
	if _, err := f.ReadAt(buf, 5000); err != nil || string(buf) != "stored" {
		t.Fatalf("ReadAt of mapped store = %q, %v", buf, err)
	}
	if _, err := f.WriteAt([]byte("pwrite"), 10); err != nil {
		t.Fatal(err)
	}
	if got := string(m.Bytes()[10:16]); got != "pwrite" {
		t.Fatalf("mapping after WriteAt: %q", got)
	}
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	// A read-only mapping of a second handle sees the same bytes.
	ro, err := fsys.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rm, err := ro.Map(6000, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(rm.Bytes()[5000:5006]); got != "stored" {
		t.Fatalf("second mapping: %q", got)
	}
	if err := rm.Unmap(); err != nil {
		t.Fatal(err)
	}
	if err := m.Unmap(); err != nil {
		t.Fatal(err)
	}
	if err := m.Unmap(); err == nil {
		t.Fatal("second Unmap succeeded")
	}
	if err := m.Flush(); err == nil {
		t.Fatal("Flush after Unmap succeeded")
	}
	if _, err := f.Map(8193, false); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("Map past the end: %v", err)
	}
	if _, err := f.Map(-1, false); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("Map of negative length: %v", err)
	}
	empty, err := f.Map(0, false)
	if err != nil || len(empty.Bytes()) != 0 {
		t.Fatalf("empty Map = %v, %v", empty, err)
	}
	if err := empty.Unmap(); err != nil {
		t.Fatal(err)
	}
}

func testLock(t *testing.T, fsys FS, dir string) {
	name := path.Join(dir, "LOCK")
	l1, err := fsys.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(name); err != nil {
		t.Fatalf("Lock did not create its file: %v", err)
	}
	_, err = fsys.Lock(name)
	var pe *os.PathError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &pe) || pe.Path != name {
		t.Fatalf("second Lock: %v, want ErrLocked with path", err)
	}
	var held *HeldError
	if !errors.As(err, &held) || len(held.Owner) != 0 {
		t.Fatalf("second Lock before SetOwner: %v, want a *HeldError naming nobody", err)
	}
	// The holder says who it is; whoever is turned away is told.
	if err := l1.SetOwner([]byte("a much longer owner, written first")); err != nil {
		t.Fatal(err)
	}
	if err := l1.SetOwner([]byte("owner 2")); err != nil {
		t.Fatal(err)
	}
	_, err = fsys.Lock(name)
	if !errors.As(err, &held) || string(held.Owner) != "owner 2" || !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock of an owned lock: %v, want a *HeldError with owner %q", err, "owner 2")
	}
	other, err := fsys.Lock(path.Join(dir, "OTHER"))
	if err != nil {
		t.Fatalf("Lock of another file: %v", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l1.Close(); err != nil {
		t.Fatal(err)
	}
	// A released lock names nobody.
	if fi, err := fsys.Stat(name); err != nil || fi.Size() != 0 {
		t.Fatalf("lock file after Close: %v, %v; want it empty", fi, err)
	}
	l2, err := fsys.Lock(name)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
}

func testNamespace(t *testing.T, fsys FS, dir string) {
	for _, n := range []string{"c", "a", "b"} {
		if err := create(t, fsys, path.Join(dir, n), n).Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := fsys.MkdirAll(path.Join(dir, "sub", "deep")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.MkdirAll(path.Join(dir, "sub")); err != nil {
		t.Fatalf("MkdirAll of an existing directory: %v", err)
	}
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(names); got != "[a b c sub]" {
		t.Fatalf("List = %s", got)
	}
	if _, err := fsys.List(path.Join(dir, "a")); err == nil {
		t.Fatal("List of a file succeeded")
	}
	if _, err := fsys.List(path.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List of missing: %v", err)
	}
	if err := fsys.MkdirAll(path.Join(dir, "a", "x")); err == nil {
		t.Fatal("MkdirAll below a file succeeded")
	}
	fi, err := fsys.Stat(path.Join(dir, "sub"))
	if err != nil || !fi.IsDir() {
		t.Fatalf("Stat of directory = %v, %v", fi, err)
	}
	if err := fsys.Remove(path.Join(dir, "sub")); err == nil {
		t.Fatal("Remove of a non-empty directory succeeded")
	}
	if err := fsys.Remove(path.Join(dir, "sub", "deep")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(path.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(path.Join(dir, "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat after Remove: %v", err)
	}
	if err := fsys.Remove(path.Join(dir, "b")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Remove: %v", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(path.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir of missing: %v", err)
	}
}

func testRename(t *testing.T, fsys FS, dir string) {
	a, b := path.Join(dir, "a"), path.Join(dir, "b")
	fa := create(t, fsys, a, "new")
	if err := create(t, fsys, b, "old contents").Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(a); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old name after Rename: %v", err)
	}
	f, err := fsys.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := readWhole(t, f); string(got) != "new" {
		t.Fatalf("renamed file holds %q", got)
	}
	// An open file follows its inode.
	mustWrite(t, fa, []byte("er"))
	if got := readWhole(t, f); string(got) != "newer" {
		t.Fatalf("write through the old handle: %q", got)
	}
	if err := fsys.Rename(path.Join(dir, "missing"), a); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Rename of missing: %v", err)
	}
	if err := fsys.MkdirAll(path.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(b, path.Join(dir, "d")); err == nil {
		t.Fatal("Rename of a file over a directory succeeded")
	}
	if err := fsys.Rename(b, path.Join(dir, "d", "b")); err != nil {
		t.Fatalf("Rename into a subdirectory: %v", err)
	}
	if err := fsys.Rename(path.Join(dir, "d"), path.Join(dir, "e")); err != nil {
		t.Fatalf("Rename of a directory: %v", err)
	}
	if _, err := fsys.Stat(path.Join(dir, "e", "b")); err != nil {
		t.Fatalf("file in renamed directory: %v", err)
	}
}

func testClosed(t *testing.T, fsys FS, dir string) {
	f := create(t, fsys, path.Join(dir, "a"), "x")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := f.Write([]byte("y")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("ReadAt after Close: %v", err)
	}
}

// testConcurrentReaders runs one appender against readers, for the race
// detector: readers must always see a prefix of what was appended.
func testConcurrentReaders(t *testing.T, fsys FS, dir string) {
	w := create(t, fsys, path.Join(dir, "a"), "")
	const chunks = 200
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4)
	var wg sync.WaitGroup
	var stop atomic.Bool // the writer failed: readers must not wait for it
	errc := make(chan error, 4)
	for range 3 {
		r, err := fsys.Open(w.Name())
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		wg.Go(func() {
			buf := make([]byte, len(chunk))
			for i := 0; i < chunks; {
				n, err := r.ReadAt(buf, int64(i*len(chunk)))
				if err == io.EOF && n < len(buf) {
					if stop.Load() {
						return
					}
					continue // not yet written
				}
				if err != nil {
					errc <- err
					return
				}
				if !bytes.Equal(buf, chunk) {
					errc <- fmt.Errorf("chunk %d = %q", i, buf)
					return
				}
				i++
			}
		})
	}
	other := create(t, fsys, path.Join(dir, "b"), "")
	wg.Go(func() {
		for range chunks {
			if _, err := other.Write(chunk); err != nil {
				errc <- err
				return
			}
		}
	})
	for range chunks {
		if _, err := w.Write(chunk); err != nil {
			t.Error(err)
			break
		}
		if err := w.Sync(); err != nil {
			t.Error(err)
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}
