package fscktest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
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
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	CheckClean(ft, fsys, "/log")
	if ft.errors != 1 {
		t.Fatalf("leftover file: %d failures reported, want 1", ft.errors)
	}
}

// TestSnapshotDiff checks that a snapshot diff names every kind of change
// and nothing when nothing changed.
func TestSnapshotDiff(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d/sub"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		f, err := fsys.Create(filepath.Join("/d", n))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	before := TakeSnapshot(t, fsys, "/d")
	if d := before.Diff(TakeSnapshot(t, fsys, "/d")); len(d) != 0 {
		t.Fatalf("unchanged directory: %v", d)
	}
	if err := fsys.Remove("/d/a"); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenReadWrite("/d/b")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = fsys.OpenReadWrite("/d/c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 7); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f, err = fsys.Create("/d/new")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(before.Diff(TakeSnapshot(t, fsys, "/d")), "\n")
	want := "/d/a: removed (10 bytes)\n/d/b: size 10 -> 4\n/d/c: contents differ from byte 7\n/d/new: added (0 bytes)"
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
}

// TestCheckQuarantinedSecondOfSameName checks that a segment set aside a
// second time from the same byte is compared with the new quarantine file
// (the "-1" alternative), not with the one an earlier recovery left: the
// fuzzer's log reuses base offsets after truncations and power losses.
func TestCheckQuarantinedSecondOfSameName(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		t.Helper()
		f, err := fsys.Create(filepath.Join("/d", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	const seg = "00000000000000000021.log"
	write(seg, []byte("second segment 21"))
	write(layout.QuarantineName(21, 0, 0), []byte("first segment 21"))
	before := TakeSnapshot(t, fsys, "/d")
	// Recovery sets the whole segment aside under the next free name.
	if err := fsys.Rename(filepath.Join("/d", seg), filepath.Join("/d", layout.QuarantineName(21, 0, 1))); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{TB: t}
	CheckQuarantined(ft, fsys, "/d", before, nil)
	if ft.errors != 0 {
		t.Fatalf("a second quarantine of the same name: %d failures, want 0", ft.errors)
	}
	// A quarantine that does not hold the bytes is still caught.
	write(layout.QuarantineName(21, 0, 1), []byte("other bytes"))
	CheckQuarantined(ft, fsys, "/d", before, nil)
	if ft.errors != 1 {
		t.Fatalf("a wrong second quarantine: %d failures, want 1", ft.errors)
	}
}
