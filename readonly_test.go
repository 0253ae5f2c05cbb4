package seglog

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// roOptions are the options the read-only tests open with.
func roOptions(fsys vfs.FS) Options {
	return Options{FS: fsys, ReadOnly: true, LogConfig: LogConfig{MaxIndexBytes: 4 << 10}}
}

// writeLog appends n records in batches of per to a log in dir with small
// segments, so the log has several, and leaves it open.
func writeLog(t *testing.T, fsys vfs.FS, dir string, n, per int) *Log {
	t.Helper()
	l, err := Open(dir, Options{FS: fsys, LogConfig: LogConfig{SegmentBytes: 4 << 10, IndexIntervalBytes: 256, MaxIndexBytes: 4 << 10}})
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
		// Input a writable log would refuse for what it is: the read-only
		// refusal comes first.
		"Append-none":      func() error { _, err := l.Append(); return err },
		"AppendBatch-junk": func() error { _, err := l.AppendBatch([]byte("junk")); return err },
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

// TestReadOnlyStaleView: a writer truncating the log under a read-only view
// (within the last segment, then with more appends over the cut, and below
// it, removing segments) makes the view's refresh, and a Follow at its
// end, fail with ErrStaleView rather than wait forever or read on into
// bytes that are not the view's batches.
func TestReadOnlyStaleView(t *testing.T) {
	for _, c := range []struct {
		name     string
		truncate int64 // relative to the end
		appendN  int
	}{{"within-last", -3, 0}, {"rewritten", -3, 20}, {"segments-removed", -150, 0}} {
		t.Run(c.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			w := writeLog(t, fsys, "/log", 200, 5)
			defer w.Close()
			l, err := Open("/log", roOptions(fsys))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := w.TruncateTo(w.EndOffset() + c.truncate); err != nil {
				t.Fatal(err)
			}
			cut := w.EndOffset()
			for off := cut; off < cut+int64(c.appendN); off += 5 {
				// Other records than the ones removed: the same ones would
				// make the same bytes, and the view would still be right.
				if _, err := w.Append(recordsAt(off+1000, 5)...); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Refresh(); !errors.Is(err, ErrStaleView) {
				t.Fatalf("Refresh = %v, want ErrStaleView", err)
			}
			var last error
			for _, err := range l.Follow(canceledContext(), l.EndOffset()) {
				last = err
			}
			if !errors.Is(last, ErrStaleView) {
				t.Fatalf("Follow ended with %v, want ErrStaleView", last)
			}
		})
	}
}

// TestReadOnlyValidate: a read-only log has nothing to sync.
func TestReadOnlyValidate(t *testing.T) {
	for _, o := range []Options{{ReadOnly: true, LogConfig: LogConfig{Sync: SyncAlways}}, {ReadOnly: true, LogConfig: LogConfig{Sync: SyncPeriodic, SyncInterval: time.Second}}} {
		o.FS = vfs.NewMem()
		if _, err := Open("/x", o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: Open = %v, want ErrInvalidOptions", o, err)
		}
	}
}

// TestReadOnlySegments: a view reports the writer's segments, its last one
// active, before and after the writer rolls.
func TestReadOnlySegments(t *testing.T) {
	fsys := vfs.NewMem()
	w := writeLog(t, fsys, "/log", 100, 5)
	defer w.Close()
	l, err := Open("/log", roOptions(fsys))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for round := 0; round < 2; round++ {
		want, got := w.Segments(), l.Segments()
		if len(got) != len(want) || len(want) < 3 {
			t.Fatalf("round %d: view has %d segments, writer %d", round, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.BaseOffset != w.BaseOffset || g.NextOffset != w.NextOffset || g.Size != w.Size || g.Active != w.Active || g.LargestTimestamp != w.LargestTimestamp {
				t.Fatalf("round %d: segment %d: view %+v, writer %+v", round, i, g, w)
			}
		}
		for off := w.EndOffset(); off < 200; off += 5 {
			if _, err := w.Append(recordsAt(off, 5)...); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Refresh(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadOnlyViewMatchesRecovery: after a crash that tore a segment
// above the recovery point with later segments behind it, a read-only open
// fails with a *CorruptionError naming the torn segment and the byte where
// its valid batches end, and changes nothing: the view cannot serve the
// later segments as part of the log (recovery will set them aside), and
// ending there without a word would hide them. A writable open afterwards
// cuts the log at that byte and keeps the later segments in quarantine
// files.
func TestReadOnlyViewMatchesRecovery(t *testing.T) {
	fsys := vfs.NewMem()
	w := writeLog(t, fsys, "/log", 300, 5)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bases := segmentBases(t, fsys, "/log")
	if len(bases) < 5 {
		t.Fatalf("want several segments, got %v", bases)
	}
	if err := fsys.Remove("/log/" + CleanShutdownFile); err != nil {
		t.Fatal(err)
	}
	if err := writeOffsetCheckpoint(fsys, "/log", RecoveryPointFile, bases[1]); err != nil {
		t.Fatal(err)
	}
	torn := "/log/" + segment.FileName(bases[2], segment.LogSuffix)
	fi, err := fsys.Stat(torn)
	if err != nil {
		t.Fatal(err)
	}
	truncateFile(t, fsys, torn, fi.Size()-7)

	before := dirSnapshot(t, fsys, "/log")
	_, err = Open("/log", roOptions(fsys))
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.File != torn || ce.Pos <= 0 || ce.Pos >= fi.Size()-7 || !strings.Contains(err.Error(), "quarantine") {
		t.Fatalf("read-only open: %v; want a *CorruptionError in %s", err, torn)
	}
	vfstest.Unchanged(t, "refused read-only open", before, dirSnapshot(t, fsys, "/log"))

	w, err = Open("/log", Options{FS: fsys, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	end := w.EndOffset()
	if end <= bases[2] || end >= bases[3] || w.NumSegments() != 3 {
		t.Fatalf("recovered log ends at %d with %d segments; want inside segment %d, the later ones set aside", end, w.NumSegments(), bases[2])
	}
	checkRecords(t, w, 0, end)
	if q := quarantineFiles(t, fsys, "/log"); len(q) != len(bases)-3 {
		t.Fatalf("quarantine files %v, want one per later segment", q)
	}
}

// TestViewIndexSizedByItsBound: a view rebuilds the index of the segment a
// writer is still appending to (on disk at the writer's preallocated
// size) in memory at the view's own MaxIndexBytes, not at the size of the
// file on disk: a store's restart after a crash opens fifty such views,
// and sizing each by the writer's 10 MiB made it take a second.
func TestViewIndexSizedByItsBound(t *testing.T) {
	fsys := vfs.NewMem()
	w, err := Open("/log", Options{FS: fsys, LogConfig: LogConfig{MaxIndexBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append(recordsAt(0, 10)...); err != nil {
		t.Fatal(err)
	}
	idx := "/log/" + segment.FileName(0, segment.IndexSuffix)
	if fi, err := fsys.Stat(idx); err != nil || fi.Size() != 1<<20 {
		t.Fatalf("the writer's index: %v, %v; want it preallocated to 1 MiB", fi, err)
	}
	v, err := Open("/log", roOptions(fsys))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	checkRecords(t, v, 0, 10)
	for _, name := range []string{idx, "/log/" + segment.FileName(0, segment.TimeIndexSuffix)} {
		fi, err := v.fs.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if max := int64(roOptions(fsys).MaxIndexBytes); fi.Size() > max {
			t.Errorf("the view's %s is %d bytes, more than its MaxIndexBytes %d", name, fi.Size(), max)
		}
	}
}
