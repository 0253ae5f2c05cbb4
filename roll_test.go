package seglog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

func TestRoll(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		l, err := Open(dir, Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		// Empty active segment: nothing to roll.
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		if n := l.NumSegments(); n != 1 {
			t.Fatalf("roll of an empty log made %d segments", n)
		}
		if _, err := l.Append(recordsAt(0, 5)...); err != nil {
			t.Fatal(err)
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		if n := l.NumSegments(); n != 2 {
			t.Fatalf("after roll: %d segments, want 2 (%s)", n, l.debugSegments())
		}
		// The new active segment is empty and based at the end: a second
		// roll changes nothing.
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		if n := l.NumSegments(); n != 2 {
			t.Fatalf("second roll: %d segments, want 2", n)
		}
		if _, err := fs.Stat(dir + "/" + segment.FileName(5, segment.LogSuffix)); err != nil {
			t.Fatalf("new active segment at 5: %v", err)
		}
		if _, err := l.Append(recordsAt(5, 3)...); err != nil {
			t.Fatal(err)
		}
		n := 0
		for r, err := range l.Records(0) {
			if err != nil {
				t.Fatal(err)
			}
			if r.Offset != int64(n) {
				t.Fatalf("record %d has offset %d", n, r.Offset)
			}
			n++
		}
		if n != 8 {
			t.Fatalf("read %d records across the roll, want 8", n)
		}
	})
}

func TestRollSyncAlwaysAndClosed(t *testing.T) {
	fs := vfs.NewMem()
	l, err := Open("/log", Options{FS: fs, LogConfig: LogConfig{Sync: SyncAlways}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recordsAt(0, 4)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if l.RecoveryPoint() < 4 {
		t.Fatalf("recovery point %d after a SyncAlways roll at 4", l.RecoveryPoint())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Roll after Close = %v, want ErrClosed", err)
	}
	// A crash right after must keep every record: the roll synced them.
	l, err = Open("/log", Options{FS: fs.CrashClone()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.EndOffset() != 4 || l.NumSegments() != 2 {
		t.Fatalf("reopened: end %d, %d segments", l.EndOffset(), l.NumSegments())
	}
}

// deletedFiles lists the *.deleted files in dir.
func deletedFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, segment.DeletedSuffix) {
			out = append(out, n)
		}
	}
	return out
}

func TestFileDeleteDelay(t *testing.T) {
	fs := vfs.NewMem()
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	// SyncAlways syncs a segment as it rolls, in this goroutine: no
	// background flush then holds a segment while the test counts files.
	l, err := Open("/log", Options{FS: fs, Clock: clock, LogConfig: LogConfig{Sync: SyncAlways}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.SetFileDeleteDelay(time.Minute)
	for i := range 3 {
		if _, err := l.Append(record.Record{Value: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	sl, err := l.Read(1, 1<<20, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, sl.Len())
	if _, err := sl.ReadAt(want, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := l.DeleteBefore(2); err != nil || n != 2 {
		t.Fatalf("DeleteBefore(2) = %d, %v", n, err)
	}
	if got := deletedFiles(t, fs, "/log"); len(got) != 6 {
		t.Fatalf("renamed at once: %v, want 2 segments × 3 files", got)
	}
	if n := l.ExpireDeleted(); n != 0 {
		t.Fatalf("ExpireDeleted before the delay dropped %d holds", n)
	}
	clock.Advance(time.Minute)
	if n := l.ExpireDeleted(); n != 2 {
		t.Fatalf("ExpireDeleted after the delay dropped %d holds, want 2", n)
	}
	// Segment 0 is gone; segment 1 waits for the reader.
	if got := deletedFiles(t, fs, "/log"); len(got) != 3 || !strings.HasPrefix(got[0], segment.FileName(1, "")) {
		t.Fatalf("after the delay, with a reader on segment 1: %v", got)
	}
	got := make([]byte, sl.Len())
	if _, err := sl.ReadAt(got, 0); err != nil || string(got) != string(want) {
		t.Fatalf("reader after the delay: %v, bytes equal %v", err, string(got) == string(want))
	}
	sl.Close()
	if got := deletedFiles(t, fs, "/log"); len(got) != 0 {
		t.Fatalf("after the reader let go: %v", got)
	}

	// Without a reader and before the delay, Close ends the wait.
	if _, err := l.DeleteBefore(3); err != nil {
		t.Fatal(err)
	}
	if got := deletedFiles(t, fs, "/log"); len(got) != 3 {
		t.Fatalf("second deletion: %v", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := deletedFiles(t, fs, "/log"); len(got) != 0 {
		t.Fatalf("after Close: %v", got)
	}
}

func TestFileDeleteDelayZeroUnlinksAtOnce(t *testing.T) {
	fs := vfs.NewMem()
	l, err := Open("/log", Options{FS: fs, LogConfig: LogConfig{Sync: SyncAlways}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(recordsAt(0, 2)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteBefore(2); err != nil {
		t.Fatal(err)
	}
	if got := deletedFiles(t, fs, "/log"); len(got) != 0 {
		t.Fatalf("no delay, no reader: %v left", got)
	}
}
