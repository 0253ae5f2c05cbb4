package seglog

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestUnservedTail: a read-only view says what it does not serve at the end
// of its last segment: a torn tail (no valid batch in it), damage followed
// by valid batches (which a writable open keeps in a quarantine file), or
// nothing. It writes nothing to find out.
func TestUnservedTail(t *testing.T) {
	setup := func(t *testing.T) (*vfs.MemFS, string, []byte) {
		fsys := vfs.NewMem()
		w := writeLog(t, fsys, "/log", 60, 5)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Remove("/log/" + CleanShutdownFile); err != nil {
			t.Fatal(err)
		}
		if err := writeOffsetCheckpoint(fsys, "/log", RecoveryPointFile, 0); err != nil {
			t.Fatal(err)
		}
		bases := segmentBases(t, fsys, "/log")
		last := "/log/" + segment.FileName(bases[len(bases)-1], segment.LogSuffix)
		return fsys, last, vfstest.ReadFile(t, fsys, last)
	}
	open := func(t *testing.T, fsys vfs.FS) (*Log, UnservedTail, bool) {
		t.Helper()
		before := dirSnapshot(t, fsys, "/log")
		l, err := Open("/log", roOptions(fsys))
		if err != nil {
			t.Fatal(err)
		}
		u, ok, err := l.UnservedTail()
		if err != nil {
			t.Fatal(err)
		}
		vfstest.Unchanged(t, "read-only view", before, dirSnapshot(t, fsys, "/log"))
		return l, u, ok
	}
	t.Run("whole", func(t *testing.T) {
		fsys, _, _ := setup(t)
		l, _, ok := open(t, fsys)
		defer l.Close()
		if ok || l.EndOffset() != 60 {
			t.Fatalf("end %d, unserved %v", l.EndOffset(), ok)
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		fsys, last, data := setup(t)
		truncateFile(t, fsys, last, int64(len(data))-3)
		l, u, ok := open(t, fsys)
		defer l.Close()
		if !ok || u.File != last || u.HoldsValid() || u.Pos+u.Bytes != int64(len(data))-3 || u.Reason == nil || !errors.Is(u.Reason, segment.ErrTornTail) {
			t.Fatalf("unserved %+v, %v", u, ok)
		}
		if l.EndOffset() != 55 {
			t.Fatalf("end %d, want 55", l.EndOffset())
		}
	})
	t.Run("damage followed by valid batches", func(t *testing.T) {
		fsys, last, data := setup(t)
		second := int64(binary.BigEndian.Uint32(data[8:])) + record.LogOverhead
		flipBytes(t, fsys, last, second-4) // the first batch's records
		l, u, ok := open(t, fsys)
		defer l.Close()
		if !ok || u.File != last || u.Pos != 0 || u.Bytes != int64(len(data)) || !u.HoldsValid() || u.Batches == 0 || u.LastOffset != 59 {
			t.Fatalf("unserved %+v, %v", u, ok)
		}
		if errors.Is(u.Reason, segment.ErrTornTail) || !errors.Is(u.Reason, ErrCorrupt) {
			t.Fatalf("reason %v", u.Reason)
		}
	})
	t.Run("random bytes", func(t *testing.T) {
		// Issue 26 item 6: a .log of random bytes printed nothing and
		// said nothing.
		fsys := vfs.NewMem()
		if err := fsys.MkdirAll("/log"); err != nil {
			t.Fatal(err)
		}
		junk := make([]byte, 10_000)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range junk {
			junk[i] = byte(r.Uint32())
		}
		vfstest.WriteFile(t, fsys, "/log/"+segment.FileName(0, segment.LogSuffix), junk)
		l, u, ok := open(t, fsys)
		defer l.Close()
		if !ok || u.Pos != 0 || u.Bytes != int64(len(junk)) || u.HoldsValid() || l.EndOffset() != 0 {
			t.Fatalf("unserved %+v, %v; end %d", u, ok, l.EndOffset())
		}
	})
	t.Run("damage after a clean close is an error", func(t *testing.T) {
		fsys, last, data := setup(t)
		vfstest.WriteFile(t, fsys, "/log/"+CleanShutdownFile, nil)
		truncateFile(t, fsys, last, int64(len(data))-3)
		_, err := Open("/log", roOptions(fsys))
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.File != last {
			t.Fatalf("read-only open: %v, want a *CorruptionError in %s", err, last)
		}
	})
	t.Run("writable log", func(t *testing.T) {
		fsys, _, _ := setup(t)
		l, err := Open("/log", Options{FS: fsys, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, ok, err := l.UnservedTail(); ok || err != nil {
			t.Fatalf("writable: %v, %v", ok, err)
		}
	})
}
