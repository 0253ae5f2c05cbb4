package fscktest

import (
	"path/filepath"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// fakeT records failures instead of failing the real test.
type fakeT struct {
	testing.TB
	errors int
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.errors++ }
func (f *fakeT) Fatalf(string, ...any) { f.errors++ }

func TestCheckClean(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := seglog.Open("/log", seglog.Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := l.Append(record.Record{Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{TB: t}
	CheckClean(ft, fsys, "/log")
	if ft.errors != 0 {
		t.Fatalf("clean log reported %d problems", ft.errors)
	}
	// A leftover file is a problem CheckClean must report.
	f, err := fsys.Create(filepath.Join("/log", "00000000000000000000.log.deleted"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	CheckClean(ft, fsys, "/log")
	if ft.errors != 1 {
		t.Fatalf("leftover file: %d failures reported, want 1", ft.errors)
	}
}
