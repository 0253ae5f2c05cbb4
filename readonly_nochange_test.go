package seglog

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// fileState is what a read-only open must leave as it found it.
type fileState struct {
	size  int64
	mode  fs.FileMode
	mtime time.Time
	sum   [32]byte
}

// snapshotDir records every entry of dir (and dir itself, as ".") with its
// size, mode, modification time and contents.
func snapshotDir(t *testing.T, fsys vfs.FS, dir string) map[string]fileState {
	t.Helper()
	snap := map[string]fileState{}
	fi, err := fsys.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap["."] = fileState{mode: fi.Mode(), mtime: fi.ModTime()}
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := fsys.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		snap[n] = fileState{size: fi.Size(), mode: fi.Mode(), mtime: fi.ModTime(), sum: sha256.Sum256(vfstest.ReadFile(t, fsys, p))}
	}
	return snap
}

// awaitMtimeTick waits until a file written now gets a modification time
// after every one in snap, so that a write the code under test should not
// make shows in the mtimes even where they are coarse: a sleep could end
// within the same tick.
func awaitMtimeTick(t *testing.T, fsys vfs.FS, snap map[string]fileState) {
	t.Helper()
	var latest time.Time
	for _, s := range snap {
		if s.mtime.After(latest) {
			latest = s.mtime
		}
	}
	probe := filepath.Join(t.TempDir(), "mtime-probe")
	testutil.WaitFor(t, "a write gets a later modification time than the snapshot's", func() bool {
		vfstest.WriteFile(t, fsys, probe, nil)
		fi, err := fsys.Stat(probe)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime().After(latest)
	})
}

// sameDirState fails the test for every difference between two snapshots.
func sameDirState(t *testing.T, before, after map[string]fileState) {
	t.Helper()
	for n, b := range before {
		a, ok := after[n]
		switch {
		case !ok:
			t.Errorf("%s: removed", n)
		case a.size != b.size || a.sum != b.sum:
			t.Errorf("%s: contents changed (size %d -> %d)", n, b.size, a.size)
		case a.mode != b.mode:
			t.Errorf("%s: mode changed %v -> %v", n, b.mode, a.mode)
		case !a.mtime.Equal(b.mtime):
			t.Errorf("%s: modification time changed %v -> %v", n, b.mtime, a.mtime)
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			t.Errorf("%s: created", n)
		}
	}
}

// appendBytes appends data to the file name.
func appendBytes(t *testing.T, fsys vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

// truncateFile cuts or grows (with zeros) the file name to size.
func truncateFile(t *testing.T, fsys vfs.FS, name string, size int64) {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// segmentBases lists the base offsets of dir's .log files.
func segmentBases(t *testing.T, fsys vfs.FS, dir string) []int64 {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, n := range names {
		if b, suffix, ok := segment.ParseFileName(n); ok && suffix == segment.LogSuffix {
			bases = append(bases, b)
		}
	}
	return bases
}

// TestReadOnlyChangesNothing opens directories in the states a reader
// meets read-only, reads every record, closes, and checks that not one byte,
// mode, modification time or directory entry changed: a clean log, an
// unclean one with a torn tail, indexes missing, short, or preallocated and
// zero-filled as a live writer leaves them, every kind of leftover, and
// damage below the recovery point (which must be reported, not cut).
func TestReadOnlyChangesNothing(t *testing.T) {
	const n = 300
	type tc struct {
		name string
		// spoil turns a cleanly closed log of n records into the state
		// under test.
		spoil func(t *testing.T, fsys vfs.FS, dir string, bases []int64)
		// corrupt says the open must fail with a *CorruptionError.
		corrupt bool
	}
	unclean := func(t *testing.T, fsys vfs.FS, dir string) {
		if err := fsys.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
			t.Fatal(err)
		}
	}
	seg := func(dir string, base int64, suffix string) string {
		return filepath.Join(dir, segment.FileName(base, suffix))
	}
	cases := []tc{
		{name: "clean", spoil: func(*testing.T, vfs.FS, string, []int64) {}},
		{name: "torn-tail", spoil: func(t *testing.T, fsys vfs.FS, dir string, bases []int64) {
			unclean(t, fsys, dir)
			last := seg(dir, bases[len(bases)-1], segment.LogSuffix)
			// The first 100 bytes of a real batch: a write cut short.
			appendBytes(t, fsys, last, producerBatch(t, 0, recordsAt(n, 3))[:100])
		}},
		{name: "indexes-missing-short-stale", spoil: func(t *testing.T, fsys vfs.FS, dir string, bases []int64) {
			unclean(t, fsys, dir)
			if err := fsys.Remove(seg(dir, bases[0], segment.IndexSuffix)); err != nil {
				t.Fatal(err)
			}
			if err := fsys.Remove(seg(dir, bases[1], segment.TimeIndexSuffix)); err != nil {
				t.Fatal(err)
			}
			appendBytes(t, fsys, seg(dir, bases[2], segment.IndexSuffix), []byte{1, 2, 3})
			// A live writer's active segment: indexes preallocated with
			// zeros past their entries.
			last := bases[len(bases)-1]
			truncateFile(t, fsys, seg(dir, last, segment.IndexSuffix), 64<<10)
			truncateFile(t, fsys, seg(dir, last, segment.TimeIndexSuffix), 64<<10)
		}},
		{name: "leftovers", spoil: func(t *testing.T, fsys vfs.FS, dir string, bases []int64) {
			unclean(t, fsys, dir)
			log0 := vfstest.ReadFile(t, fsys, seg(dir, bases[0], segment.LogSuffix))
			vfstest.WriteFile(t, fsys, seg(dir, 1_000_000, segment.LogSuffix+segment.DeletedSuffix), log0)
			vfstest.WriteFile(t, fsys, seg(dir, bases[1], segment.LogSuffix+segment.CleanedSuffix), log0)
			// At or above the lowest .cleaned: an unfinished compaction's
			// swap, which Kafka deletes (and the view ignores).
			vfstest.WriteFile(t, fsys, seg(dir, bases[1], segment.LogSuffix+segment.SwapSuffix), log0)
			vfstest.WriteFile(t, fsys, filepath.Join(dir, RecoveryPointFile+".tmp"), []byte("garbage"))
			vfstest.WriteFile(t, fsys, seg(dir, 2_000_000, segment.IndexSuffix), make([]byte, 16))
		}},
		{name: "damage-below-recovery-point", corrupt: true, spoil: func(t *testing.T, fsys vfs.FS, dir string, bases []int64) {
			// In the last segment, which holds the recovery point: an
			// open scans it (the ones before are trusted, as by a writable
			// open after a crash).
			unclean(t, fsys, dir)
			p := seg(dir, bases[len(bases)-1], segment.LogSuffix)
			b := vfstest.ReadFile(t, fsys, p)
			b[len(b)/3] ^= 0xff
			vfstest.WriteFile(t, fsys, p, b)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys, dir := vfs.Default, t.TempDir()
			w := writeLog(t, fsys, dir, n, 6)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			bases := segmentBases(t, fsys, dir)
			if len(bases) < 4 {
				t.Fatalf("want several segments, got %v", bases)
			}
			c.spoil(t, fsys, dir, bases)
			before := snapshotDir(t, fsys, dir)
			awaitMtimeTick(t, fsys, before)

			l, err := Open(dir, roOptions(fsys))
			if c.corrupt {
				var ce *CorruptionError
				if !errors.As(err, &ce) || ce.File != seg(dir, bases[len(bases)-1], segment.LogSuffix) {
					t.Fatalf("Open = %v, want a *CorruptionError in the damaged segment", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				checkRecords(t, l, 0, n)
				for range l.Follow(canceledContext(), n) {
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			sameDirState(t, before, snapshotDir(t, fsys, dir))

			// A writable open after all this still sees the same log: the
			// view was the one recovery ends up with.
			if c.corrupt {
				return
			}
			w, err = Open(dir, Options{FS: fsys, LogConfig: LogConfig{SegmentBytes: 4 << 10, MaxIndexBytes: 4 << 10}, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			checkRecords(t, w, 0, n)
		})
	}
}
