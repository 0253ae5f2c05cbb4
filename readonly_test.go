package seglog

import (
	"bytes"
	"errors"
	"io/fs"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// roOptions are the options the read-only tests open with.
func roOptions(fsys vfs.FS) Options {
	return Options{FS: fsys, ReadOnly: true, MaxIndexBytes: 4 << 10}
}

// writeLog appends n records in batches of per to a log in dir with small
// segments, so the log has several, and leaves it open.
func writeLog(t *testing.T, fsys vfs.FS, dir string, n, per int) *Log {
	t.Helper()
	l, err := Open(dir, Options{FS: fsys, SegmentBytes: 4 << 10, IndexIntervalBytes: 256, MaxIndexBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < int64(n); off += int64(per) {
		if _, err := l.Append(recordsAt(off, per)...); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// checkRecords reads every record of l from start and compares it with
// recordsAt.
func checkRecords(t *testing.T, l *Log, start, end int64) {
	t.Helper()
	if l.StartOffset() != start || l.EndOffset() != end {
		t.Fatalf("view [%d, %d), want [%d, %d)", l.StartOffset(), l.EndOffset(), start, end)
	}
	want := start
	for r, err := range l.Records(start) {
		if err != nil {
			t.Fatalf("at %d: %v", want, err)
		}
		if r.Offset != want || !bytes.Equal(r.Value, recordsAt(want, 1)[0].Value) {
			t.Fatalf("record %d: offset %d value %q", want, r.Offset, r.Value)
		}
		want++
	}
	if want != end {
		t.Fatalf("read up to %d, want %d", want, end)
	}
}

func TestReadOnlyMutationsRefused(t *testing.T) {
	fsys := vfs.NewMem()
	w := writeLog(t, fsys, "/log", 50, 5)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := Open("/log", roOptions(fsys))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	before := l.EndOffset()
	calls := map[string]func() error{
		"Append": func() error { _, err := l.Append(record.Record{Value: []byte("x")}); return err },
		"AppendBatch": func() error {
			_, err := l.AppendBatch(producerBatch(t, record.None, []record.Record{{Value: []byte("x")}}))
			return err
		},
		"TruncateTo":   func() error { return l.TruncateTo(10) },
		"DeleteBefore": func() error { _, err := l.DeleteBefore(20); return err },
		"Sync":         l.Sync,
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s = %v, want ErrReadOnly", name, err)
		}
	}
	checkRecords(t, l, 0, before)
}

func TestReadOnlyMissingDir(t *testing.T) {
	for _, fsys := range []vfs.FS{vfs.NewMem(), vfs.Default} {
		dir := t.TempDir() + "/absent"
		if _, err := Open(dir, roOptions(fsys)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Open of a missing dir = %v, want fs.ErrNotExist", err)
		}
		if _, err := fsys.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the read-only open created %s (%v)", dir, err)
		}
	}
}

func TestReadOnlyBesideWriterInProcess(t *testing.T) {
	damagedFilesystems(t, func(t *testing.T, fsys vfs.FS, dir string) {
		w := writeLog(t, fsys, dir, 200, 7)
		defer w.Close()
		if _, err := Open(dir, Options{FS: fsys}); !errors.Is(err, ErrLocked) {
			t.Fatalf("second writable open = %v, want ErrLocked", err)
		}
		l, err := Open(dir, roOptions(fsys))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		checkRecords(t, l, 0, w.EndOffset())
		// More appends, across rolls: Records asked at the end refreshes.
		for off := w.EndOffset(); off < 400; off += 7 {
			if _, err := w.Append(recordsAt(off, 7)...); err != nil {
				t.Fatal(err)
			}
		}
		for range l.Records(l.EndOffset()) {
		}
		checkRecords(t, l, 0, w.EndOffset())
	})
}
