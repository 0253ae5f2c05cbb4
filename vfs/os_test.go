package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOSWritePositionIgnoresPositionalIO(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	f, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mustWrite(t, f, []byte("hello"))
	// WriteAt far ahead and ReadAt must not move the append position.
	if _, err := f.WriteAt([]byte("Z"), 9); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := f.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte("ab"))
	got := readWhole(t, f)
	want := []byte("helloab\x00\x00Z")
	if !bytes.Equal(got, want) {
		t.Fatalf("contents %q, want %q", got, want)
	}
}

func TestOSOpenReadWriteAppendsAtEnd(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte("abc"))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = Default.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mustWrite(t, f, []byte("de"))
	if got := readWhole(t, f); string(got) != "abcde" {
		t.Fatalf("contents %q, want abcde", got)
	}
}

func TestOSTruncateMovesWritePosition(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mustWrite(t, f, []byte("abcdef"))
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, []byte("X"))
	if got := readWhole(t, f); string(got) != "abX" {
		t.Fatalf("contents %q, want abX", got)
	}
}

func TestOSPreallocateExtendsSize(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Preallocate(0, 1<<16); err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); size != 1<<16 {
		t.Fatalf("size after preallocate %d, want %d", size, 1<<16)
	}
	fi, err := Default.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 1<<16 {
		t.Fatalf("Stat size %d, want %d", fi.Size(), 1<<16)
	}
}

func TestOSMapSharesWithFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	f, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mustWrite(t, f, make([]byte, 8192))
	m, err := f.Map(8192, true)
	if err != nil {
		t.Fatal(err)
	}
	copy(m.Bytes()[4000:], "mapped")
	if err := m.Flush(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := f.ReadAt(buf, 4000); err != nil {
		t.Fatal(err)
	}
	if string(buf) != "mapped" {
		t.Fatalf("ReadAt after mapped store %q, want mapped", buf)
	}
	if _, err := f.WriteAt([]byte("viaPwrite"), 100); err != nil {
		t.Fatal(err)
	}
	if got := string(m.Bytes()[100:109]); got != "viaPwrite" {
		t.Fatalf("mapping after WriteAt %q, want viaPwrite", got)
	}
	if err := m.Unmap(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Map(8193, false); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("Map beyond size: err %v, want ErrInvalid", err)
	}
}

func TestOSLockConflictsInProcess(t *testing.T) {
	name := filepath.Join(t.TempDir(), "LOCK")
	l1, err := Default.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Default.Lock(name)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: err %v, want ErrLocked", err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != name {
		t.Fatalf("second Lock error %v does not carry the path", err)
	}
	if err := l1.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := Default.Lock(name)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	l2.Close()
}

func TestOSFdAndErrorsCarryPath(t *testing.T) {
	name := filepath.Join(t.TempDir(), "missing")
	_, err := Default.Open(name)
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != name || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open missing: %v", err)
	}
	f, err := Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Fd(); err != nil {
		t.Fatalf("Fd: %v", err)
	}
}

func mustWrite(t *testing.T, f File, p []byte) {
	t.Helper()
	n, err := f.Write(p)
	if err != nil || n != len(p) {
		t.Fatalf("Write(%q) = %d, %v", p, n, err)
	}
}

func readWhole(t *testing.T, f File) []byte {
	t.Helper()
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, size)
	if n, err := f.ReadAt(buf, 0); n != len(buf) {
		t.Fatalf("ReadAt whole file: %d, %v", n, err)
	}
	return buf
}

// TestOSOpenRefusesNonRegular: a FIFO (directly or through a symlink) and
// a device are refused with ErrNotRegular, at once: opening a FIFO
// read-only would block until a writer came.
func TestOSOpenRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "00000000000000000000.log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, name := range []string{fifo, link, "/dev/null"} {
			for _, open := range []func(string) (File, error){Default.Open, Default.OpenReadWrite} {
				f, err := open(name)
				if err == nil {
					f.Close()
				}
				if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), name) {
					t.Errorf("open %s: %v; want ErrNotRegular naming it", name, err)
				}
			}
		}
		if _, err := ReadFileLimit(Default, fifo, 10); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFileLimit of a FIFO: %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("opening a FIFO blocked")
	}
}
