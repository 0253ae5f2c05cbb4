package vfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// workload runs a fixed sequence of operations and returns the error of
// each (nil for success), in order.
func workload(fsys FS) []error {
	var errs []error
	note := func(err error) { errs = append(errs, err) }
	note(fsys.MkdirAll("/w"))
	f, err := fsys.Create("/w/a")
	note(err)
	if f != nil {
		_, err = f.Write([]byte("hello"))
		note(err)
		note(f.Sync())
		_, err = f.ReadAt(make([]byte, 5), 0)
		note(err)
		note(f.Close())
	}
	note(fsys.SyncDir("/w"))
	note(fsys.Rename("/w/a", "/w/b"))
	_, err = fsys.Stat("/w/b")
	note(err)
	return errs
}

func TestInjectOnIndexFailsExactlyThatOp(t *testing.T) {
	c := &Counter{}
	for _, err := range workload(Inject(NewMem(), c)) {
		if err != nil {
			t.Fatalf("workload fails without injection: %v", err)
		}
	}
	n := c.Count()
	if n != 9 {
		t.Fatalf("counted %d operations, the workload performs 9", n)
	}
	for i := int64(1); i <= n; i++ {
		inj := OnIndex(i, syscall.ENOSPC)
		errs := workload(Inject(NewMem(), inj))
		// Later operations may fail as a consequence (a failed MkdirAll
		// makes Create fail, a failed Rename makes Stat fail), but the
		// first failure is the injected one and it is the only one.
		injected, first := 0, error(nil)
		for _, err := range errs {
			if err != nil && first == nil {
				first = err
			}
			if errors.Is(err, ErrInjected) {
				injected++
			}
		}
		// Each noted result is one operation, so the i-th result failed.
		if injected != 1 || !errors.Is(errs[i-1], ErrInjected) || !errors.Is(first, ErrInjected) || !errors.Is(first, syscall.ENOSPC) {
			t.Fatalf("op %d: want one injected ENOSPC first, got %v", i, errs)
		}
		if _, ok := inj.Fired(); !ok {
			t.Fatalf("op %d: Fired reports nothing", i)
		}
	}
	inj := OnIndex(n+1, nil)
	for _, err := range workload(Inject(NewMem(), inj)) {
		if err != nil {
			t.Fatalf("index past the end failed an op: %v", err)
		}
	}
	if _, ok := inj.Fired(); ok || inj.Seen() != n {
		t.Fatalf("index past the end: fired, or saw %d ops not %d", inj.Seen(), n)
	}
}

func TestInjectOnIndexOfKind(t *testing.T) {
	m := NewMem()
	inj := OnIndex(2, nil, OpWrite, OpSync)
	fsys := Inject(m, inj)
	if err := fsys.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Create("/d/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("one")); err != nil {
		t.Fatal(err)
	}
	err = f.Sync()
	var pe *os.PathError
	if !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrInjected) || !errors.As(err, &pe) || pe.Path != "/d/a" || pe.Op != "sync" {
		t.Fatalf("second write-or-sync: %v, want injected EIO on /d/a", err)
	}
	op, ok := inj.Fired()
	if !ok || op.Kind != OpSync || op.Path != "/d/a" {
		t.Fatalf("Fired = %+v, %v", op, ok)
	}
	// The failed operation did not happen: nothing was synced.
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if got, _ := contents(t, m.CrashClone(), "/d/a"); got != "" {
		t.Fatalf("failed Sync made %q durable", got)
	}
	if _, err := f.Write([]byte("two")); err != nil {
		t.Fatalf("third op failed: %v", err)
	}
}

func TestInjectIfAndSticky(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	fsys := Inject(m, Sticky(If(func(op Op) bool { return op.Kind == OpRename && op.NewPath == "/d/b" }, nil)))
	f, err := fsys.Create("/d/a")
	if err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename("/d/a", "/d/c"); err != nil {
		t.Fatalf("rename not matched: %v", err)
	}
	err = fsys.Rename("/d/c", "/d/b")
	var le *os.LinkError
	if !errors.Is(err, ErrInjected) || !errors.Is(err, syscall.EIO) || !errors.As(err, &le) || le.New != "/d/b" {
		t.Fatalf("matched rename: %v", err)
	}
	if _, err := m.Stat("/d/c"); err != nil {
		t.Fatalf("failed rename happened anyway: %v", err)
	}
	// Sticky: everything fails from now on, with the same error.
	if _, err := f.Write([]byte("x")); !errors.Is(err, ErrInjected) {
		t.Fatalf("write after sticky failure: %v", err)
	}
	if _, err := fsys.Stat("/d/c"); !errors.Is(err, ErrInjected) || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat after sticky failure: %v", err)
	}
}

func TestInjectMappingOps(t *testing.T) {
	m, _ := newMemDir(t)
	inj := If(Kinds(OpFlush), syscall.EIO)
	f, err := Inject(m, inj).Create("/data/test/a")
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, make([]byte, 16))
	mp, err := f.Map(16, true)
	if err != nil {
		t.Fatal(err)
	}
	mp.Bytes()[0] = 1
	if err := mp.Flush(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Flush: %v", err)
	}
	if err := mp.Unmap(); err != nil {
		t.Fatalf("Unmap: %v", err)
	}
	if k := OpFlush.String(); k != "msync" {
		t.Fatalf("OpFlush.String() = %q", k)
	}
}
