package vfs

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteBackOS: the real file starts the writeback of a written range
// and refuses a range it could not name; what it wrote reads back the same.
func TestWriteBackOS(t *testing.T) {
	f, err := Default.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 1<<16)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(WriteBacker); !ok {
		t.Fatal("the real file has no WriteBack")
	}
	if err := WriteBack(f, 0, int64(len(data))); err != nil {
		t.Fatalf("WriteBack: %v", err)
	}
	if err := WriteBack(f, -1, 10); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("WriteBack at -1: %v, want EINVAL", err)
	}
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, 0); err != nil || string(got) != string(data) {
		t.Fatalf("read back after WriteBack: %v, equal %v", err, string(got) == string(data))
	}
}

// TestWriteBackMemKeepsCrashModel: on the memory filesystem WriteBack does
// nothing, so a crash after it still loses what was not synced.
func TestWriteBackMemKeepsCrashModel(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	f, err := m.Create("/d/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("synced")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(" and not")); err != nil {
		t.Fatal(err)
	}
	if err := WriteBack(f, 0, 14); err != nil {
		t.Fatalf("WriteBack on the memory fs: %v", err)
	}
	c := m.CrashClone()
	b, err := ReadFileLimit(c, "/d/f", 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "synced" {
		t.Fatalf("after a crash the file holds %q, want only what was synced", b)
	}
}

// TestWriteBackInjected: Inject reports WriteBack as OpWriteBack with its
// range, can fail it, and passes it on otherwise.
func TestWriteBackInjected(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	var seen []Op
	fsys := Inject(m, InjectorFunc(func(op Op) error {
		if op.Kind == OpWriteBack {
			seen = append(seen, op)
			if op.Off == 100 {
				return syscall.EIO
			}
		}
		return nil
	}))
	f, err := fsys.Create("/d/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteBack(f, 0, 100); err != nil {
		t.Fatalf("WriteBack: %v", err)
	}
	if err := WriteBack(f, 100, 50); !errors.Is(err, ErrInjected) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("injected WriteBack: %v, want ErrInjected and EIO", err)
	}
	if len(seen) != 2 || seen[0].Path != "/d/f" || seen[0].Len != 100 || seen[1].Off != 100 || seen[1].Len != 50 {
		t.Fatalf("injector saw %+v", seen)
	}
	if OpWriteBack.String() != "writeback" {
		t.Fatalf("OpWriteBack is named %q", OpWriteBack.String())
	}
}
