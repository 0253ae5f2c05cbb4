package vfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTruncateKeepingModTime: the size changes, the modification time does
// not, through the real and the memory filesystem and an injecting wrapper;
// a plain Truncate does move it (so the test can tell).
func TestTruncateKeepingModTime(t *testing.T) {
	mem := NewMem()
	var now time.Time
	mem.SetClock(func() time.Time { return now })
	for _, c := range []struct {
		name string
		fs   FS
		dir  string
		// age sets the file's modification time into the past.
		age func(t *testing.T, path string, to time.Time)
	}{
		{"os", OS(), t.TempDir(), func(t *testing.T, path string, to time.Time) {
			if err := os.Chtimes(path, to, to); err != nil {
				t.Fatal(err)
			}
		}},
		{"mem", mem, "/d", func(t *testing.T, path string, to time.Time) { now = to }},
		{"inject", Inject(mem, InjectorFunc(func(Op) error { return nil })), "/e", func(t *testing.T, path string, to time.Time) { now = to }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.fs.MkdirAll(c.dir); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(c.dir, "f")
			old := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
			now = old // what the memory filesystem stamps the write with
			f, err := c.fs.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write(make([]byte, 10000)); err != nil {
				t.Fatal(err)
			}
			c.age(t, path, old)
			now = old.Add(time.Hour)
			if err := TruncateKeepingModTime(f, 4000); err != nil {
				t.Fatal(err)
			}
			fi, err := c.fs.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != 4000 || !fi.ModTime().Equal(old) {
				t.Fatalf("after TruncateKeepingModTime: size %d, modified %v; want 4000, %v", fi.Size(), fi.ModTime(), old)
			}
			if err := f.Truncate(3000); err != nil {
				t.Fatal(err)
			}
			if fi, err = c.fs.Stat(path); err != nil {
				t.Fatal(err)
			}
			if fi.Size() != 3000 || fi.ModTime().Equal(old) {
				t.Fatalf("after Truncate: size %d, modified %v; want 3000 and a new time", fi.Size(), fi.ModTime())
			}
		})
	}
}
