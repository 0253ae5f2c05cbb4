package index

import (
	"bytes"
	"path"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// logFile makes a file of n bytes whose byte i is byte(i*7) and opens it
// read-write.
func logFile(t *testing.T, fsys vfs.FS, dir string, n int) (vfs.File, []byte) {
	t.Helper()
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f, err := fsys.Create(path.Join(dir, "x.log"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// TestLogMapReads: reads come from the mapping once it exists, return the
// file's bytes, stop at the readable size, and a file that grew by less
// than remapStep is not remapped (the caller preads the new bytes).
func TestLogMapReads(t *testing.T) {
	f, data := logFile(t, vfs.Default, t.TempDir(), 10000)
	lm := NewLogMap(NewCache(4))
	defer lm.Close()
	p := make([]byte, 61)
	if lm.ReadAt(f, p, 9950, 10000) {
		t.Fatal("read past the readable size succeeded")
	}
	if !lm.ReadAt(f, p, 100, 10000) || !bytes.Equal(p, data[100:161]) {
		t.Fatalf("read at 100 = %v", p[:8])
	}
	if got := lm.Mapped(); got != 10000 {
		t.Fatalf("mapped %d bytes, want 10000", got)
	}
	more := bytes.Repeat([]byte{0xAB}, 5000)
	if _, err := f.Write(more); err != nil {
		t.Fatal(err)
	}
	if lm.ReadAt(f, p, 10500, 15000) {
		t.Fatal("a read 5,000 bytes past a mapping remapped it; growth below remapStep must use pread")
	}
	if !lm.ReadAt(f, p, 9900, 15000) || !bytes.Equal(p, data[9900:9961]) {
		t.Fatal("read inside the old mapping failed after the file grew")
	}
	if err := lm.Unmap(); err != nil {
		t.Fatal(err)
	}
	if !lm.ReadAt(f, p, 10500, 15000) || !bytes.Equal(p, more[:61]) {
		t.Fatal("read after Unmap did not map the grown file")
	}
	lm.Close()
	if lm.ReadAt(f, p, 100, 15000) {
		t.Fatal("read after Close succeeded")
	}
}

// TestLogMapNotForMemFiles: a file without an OS descriptor is never
// mapped, because the in-memory FS refuses to grow a mapped file and the
// segment must keep appending to it.
func TestLogMapNotForMemFiles(t *testing.T) {
	m := vfs.NewMem()
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	f, _ := logFile(t, m, "/d", 4096)
	lm := NewLogMap(nil)
	defer lm.Close()
	if lm.ReadAt(f, make([]byte, 8), 0, 4096) || lm.Mapped() != 0 {
		t.Fatal("an in-memory file was mapped")
	}
	if _, err := f.Write(make([]byte, 4<<20)); err != nil {
		t.Fatalf("the file cannot grow after a LogMap read: %v", err)
	}
}

// TestLogMapRemapsAfterStep: a file that grew by remapStep is remapped on
// the first read past the mapping.
func TestLogMapRemapsAfterStep(t *testing.T) {
	f, _ := logFile(t, vfs.Default, t.TempDir(), 4096)
	lm := NewLogMap(nil)
	defer lm.Close()
	p := make([]byte, 8)
	if !lm.ReadAt(f, p, 0, 4096) {
		t.Fatal("first read failed")
	}
	if _, err := f.Write(make([]byte, remapStep)); err != nil {
		t.Fatal(err)
	}
	size := int64(4096 + remapStep)
	if !lm.ReadAt(f, p, size-8, size) || lm.Mapped() != size {
		t.Fatalf("not remapped after growing by remapStep: mapped %d", lm.Mapped())
	}
}

// TestLogMapCacheBound: a Cache of one evicts the older LogMap when a second
// maps, and the evicted one maps again on its next read.
func TestLogMapCacheBound(t *testing.T) {
	f, data := logFile(t, vfs.Default, t.TempDir(), 5000)
	c := NewCache(1)
	a, b := NewLogMap(c), NewLogMap(c)
	defer a.Close()
	defer b.Close()
	p := make([]byte, 10)
	if !a.ReadAt(f, p, 0, 5000) || !b.ReadAt(f, p, 10, 5000) {
		t.Fatal("reads failed")
	}
	if a.Mapped() != 0 || b.Mapped() != 5000 {
		t.Fatalf("mapped a=%d b=%d, want the older one evicted", a.Mapped(), b.Mapped())
	}
	if st := c.Stats(); st.Mapped != 1 || st.Evictions != 1 {
		t.Fatalf("stats %+v", st)
	}
	if !a.ReadAt(f, p, 20, 5000) || !bytes.Equal(p, data[20:30]) {
		t.Fatal("evicted LogMap did not map again")
	}
}

// TestLogMapFaultIsNotACrash: a page cut off under the mapping by a truncate
// from elsewhere (another process, a tool) raises SIGBUS on load; ReadAt
// must report false rather than crash the process.
func TestLogMapFaultIsNotACrash(t *testing.T) {
	dir := t.TempDir()
	f, _ := logFile(t, vfs.Default, dir, 64<<10)
	lm := NewLogMap(nil)
	defer lm.Close()
	p := make([]byte, 61)
	if !lm.ReadAt(f, p, 0, 64<<10) {
		t.Fatal("first read failed")
	}
	if err := f.Truncate(4096); err != nil {
		t.Fatal(err)
	}
	if lm.ReadAt(f, p, 32<<10, 64<<10) {
		t.Fatal("read of a truncated page succeeded")
	}
	if !lm.ReadAt(f, p, 0, 4096) {
		t.Fatal("read of a page still in the file failed")
	}
}
