package seglog

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestOpenRefusesNotALog: Open creates a log only in an absent or empty
// directory or opens an existing one; a Kafka log.dir or a directory with
// other files is refused with ErrNotALog naming what was found, and not a
// byte is written (no lock file, no checkpoint, no marker, no segment).
func TestOpenRefusesNotALog(t *testing.T) {
	t.Run("Kafka log.dir", func(t *testing.T) {
		fs, _, _ := kafkaLogDir(t, true, 0)
		vfstest.WriteFile(t, fs, "/kafka/meta.properties", []byte("version=1\n"))
		before, part := dirSnapshot(t, fs, "/kafka"), dirSnapshot(t, fs, "/kafka/topic-0")
		_, err := Open("/kafka", Options{FS: fs, Logger: discardLogger()})
		var nl *NotALogError
		if !errors.Is(err, ErrNotALog) || !errors.As(err, &nl) {
			t.Fatalf("open of a log.dir: %v, want ErrNotALog", err)
		}
		if !slices.Contains(nl.Subdirs, "topic-0") || !slices.Contains(nl.Files, "meta.properties") ||
			!strings.Contains(err.Error(), "open one partition directory") {
			t.Fatalf("error does not say what was found and what to do: %v", err)
		}
		if names, _ := fs.List("/kafka"); slices.Contains(names, LockFile) {
			t.Fatal("the refused open took a lock file")
		}
		vfstest.Unchanged(t, "the log.dir", before, dirSnapshot(t, fs, "/kafka"))
		vfstest.Unchanged(t, "its partition", part, dirSnapshot(t, fs, "/kafka/topic-0"))
	})
	t.Run("other files", func(t *testing.T) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/home/me"); err != nil {
			t.Fatal(err)
		}
		vfstest.WriteFile(t, fs, "/home/me/notes.txt", []byte("hello"))
		before := dirSnapshot(t, fs, "/home/me")
		_, err := Open("/home/me", Options{FS: fs, Logger: discardLogger()})
		if !errors.Is(err, ErrNotALog) || !strings.Contains(err.Error(), "notes.txt") {
			t.Fatalf("open of a directory with other files: %v", err)
		}
		names, _ := fs.List("/home/me")
		if !slices.Equal(names, []string{"notes.txt"}) {
			t.Fatalf("refused open left %v", names)
		}
		vfstest.Unchanged(t, "refused open", before, dirSnapshot(t, fs, "/home/me"))
	})
	t.Run("absent, empty and existing logs open", func(t *testing.T) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/empty"); err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{"/absent/log", "/empty"} {
			l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			if _, err := l.Append(recordsAt(0, 2)...); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}
		// A Kafka partition directory's own files are log files.
		vfstest.WriteFile(t, fs, "/empty/"+layout.PartitionMetadataFile, []byte("version: 0\n"))
		vfstest.WriteFile(t, fs, "/empty/"+layout.LeaderEpochFile, []byte("0\n0\n"))
		l, err := Open("/empty", Options{FS: fs, Logger: discardLogger()})
		if err != nil {
			t.Fatalf("existing log with Kafka's partition files: %v", err)
		}
		if l.EndOffset() != 2 {
			t.Fatalf("end %d, want 2", l.EndOffset())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("absent inside a log", func(t *testing.T) {
		// produce LOG/sub would make LOG hold a directory, and so make it
		// a directory Open refuses: creating it is refused instead.
		fs := vfs.NewMem()
		l, err := Open("/log", Options{FS: fs, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(recordsAt(0, 2)...); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		before := dirSnapshot(t, fs, "/log")
		for _, dir := range []string{"/log/sub", "/log/a/b"} {
			_, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
			var nl *NotALogError
			if !errors.Is(err, ErrNotALog) || !errors.As(err, &nl) || nl.InLog != "/log" || !strings.Contains(err.Error(), "inside the log in /log") {
				t.Fatalf("open of %s: %v, want ErrNotALog naming /log", dir, err)
			}
			vfstest.Unchanged(t, "the log", before, dirSnapshot(t, fs, "/log"))
		}
		if l, err = Open("/log", Options{FS: fs, Logger: discardLogger()}); err != nil || l.EndOffset() != 2 {
			t.Fatalf("the log after the refusals: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// A Kafka log.dir holds no segment files, but a new partition
		// directory in it is the store's to create: refused too.
		kfs, _, _ := kafkaLogDir(t, true, 0)
		before = dirSnapshot(t, kfs, "/kafka")
		if _, err = Open("/kafka/topic-7", Options{FS: kfs, Logger: discardLogger()}); !errors.Is(err, ErrInLogDir) {
			t.Fatalf("new partition in a log.dir: %v, want ErrInLogDir", err)
		}
		vfstest.Unchanged(t, "the log.dir", before, dirSnapshot(t, kfs, "/kafka"))
	})
}

// TestOpenIgnoresStrayFile: a log with a file that is not a log's beside
// its segments (notes.txt) is a log, as Kafka's loader takes it: Open,
// read-write and read-only, opens it, reads every record and leaves the
// file alone. A file named like a segment's that is not one (server.log)
// is refused, as Kafka's loader would misread it.
func TestOpenIgnoresStrayFile(t *testing.T) {
	fs := vfs.NewMem()
	l, err := Open("/log", Options{FS: fs, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recordsAt(0, 3)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	vfstest.WriteFile(t, fs, "/log/notes.txt", []byte("hello"))
	for _, ro := range []bool{true, false} {
		l, err := Open("/log", Options{FS: fs, ReadOnly: ro, Logger: discardLogger()})
		if err != nil {
			t.Fatalf("read-only %v: open of a log with a stray file: %v", ro, err)
		}
		if l.EndOffset() != 3 {
			t.Fatalf("read-only %v: end %d, want 3", ro, l.EndOffset())
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := string(vfstest.ReadFile(t, fs, "/log/notes.txt")); got != "hello" {
		t.Fatalf("notes.txt holds %q", got)
	}
	vfstest.WriteFile(t, fs, "/log/server.log", []byte("app"))
	before := dirSnapshot(t, fs, "/log")
	for _, ro := range []bool{true, false} {
		_, err := Open("/log", Options{FS: fs, ReadOnly: ro, Logger: discardLogger()})
		var nl *NotALogError
		if !errors.As(err, &nl) || !slices.Equal(nl.Misnamed, []string{"server.log"}) || !strings.Contains(err.Error(), "server.log") {
			t.Fatalf("read-only %v: open with a misnamed segment file: %v, want a NotALogError naming it", ro, err)
		}
	}
	vfstest.Unchanged(t, "refused opens", before, dirSnapshot(t, fs, "/log"))
}
