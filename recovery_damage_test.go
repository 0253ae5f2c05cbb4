package seglog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// dirSnapshot is every file of dir with its contents. The lock file counts
// too: a refused Open that created one removes it again.
func dirSnapshot(t *testing.T, fs vfs.FS, dir string) map[string]string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		if fi, err := fs.Stat(filepath.Join(dir, n)); err == nil && fi.IsDir() {
			out[n+"/"] = ""
			continue
		}
		out[n] = string(vfstest.ReadFile(t, fs, filepath.Join(dir, n)))
	}
	return out
}

// TestDamageBelowRecoveryPointChangesNothing: damage in synced data makes
// Open fail with a *CorruptionError naming the file and position, and
// nothing on disk changes: no truncation, no index rebuild, no checkpoint,
// no leftover or orphan deleted (the check comes before every change).
func TestDamageBelowRecoveryPointChangesNothing(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		dir = filepath.Join(dir, "log")
		bases := writeSegments(t, fs, dir, 4)
		l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 4 << 10}, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		active := l.segs.active.LogPath()
		if _, err := l.Append(recordsAt(l.EndOffset(), 2)...); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(recordsAt(l.EndOffset(), 2)...); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// Leftovers Open would otherwise clean up, and a sealed segment
		// without indexes (rebuilt, wholly synced, so checked too).
		vfstest.WriteFile(t, fs, filepath.Join(dir, RecoveryPointFile+".tmp"), []byte("junk"))
		vfstest.WriteFile(t, fs, filepath.Join(dir, segment.FileName(bases[1], segment.LogSuffix+segment.DeletedSuffix)), []byte("old"))
		vfstest.WriteFile(t, fs, filepath.Join(dir, segment.FileName(1<<40, segment.IndexSuffix)), nil)
		if err := fs.Remove(filepath.Join(dir, segment.FileName(bases[1], segment.IndexSuffix))); err != nil {
			t.Fatal(err)
		}
		if err := fs.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
			t.Fatal(err)
		}

		t.Run("in the segment holding the recovery point", func(t *testing.T) {
			flipBytes(t, fs, active, record.HeaderSize+5)
			defer flipBytes(t, fs, active, record.HeaderSize+5)
			before := dirSnapshot(t, fs, dir)
			l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
			if err == nil {
				l.Close()
			}
			wantCorruption(t, err, active, 0)
			if !errors.Is(err, ErrCorrupt) || strings.Count(err.Error(), "corrupt") != 1 {
				t.Fatalf("error %q: want ErrCorrupt, saying corrupt once", err)
			}
			vfstest.Unchanged(t, "refused open", before, dirSnapshot(t, fs, dir))
		})
		t.Run("in a sealed segment whose indexes are rebuilt", func(t *testing.T) {
			path := filepath.Join(dir, segment.FileName(bases[1], segment.LogSuffix))
			flipBytes(t, fs, path, record.HeaderSize+5)
			defer flipBytes(t, fs, path, record.HeaderSize+5)
			before := dirSnapshot(t, fs, dir)
			l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
			if err == nil {
				l.Close()
			}
			wantCorruption(t, err, path, 0)
			vfstest.Unchanged(t, "refused open", before, dirSnapshot(t, fs, dir))
		})
		t.Run("undamaged, it opens and cleans up", func(t *testing.T) {
			l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			end := l.EndOffset()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			checkContiguous(t, fs, dir, end)
			names, _ := fs.List(dir)
			for _, n := range names {
				if strings.HasSuffix(n, ".tmp") || strings.HasSuffix(n, segment.DeletedSuffix) || n == segment.FileName(1<<40, segment.IndexSuffix) {
					t.Fatalf("leftover %s kept", n)
				}
			}
		})
	})
}

// legacyEntry encodes a v1 message (magic 1) holding value at offset.
func legacyEntry(offset int64, value []byte) []byte {
	body := []byte{1, 0}                             // magic, attributes
	body = binary.BigEndian.AppendUint64(body, 1000) // timestamp
	body = binary.BigEndian.AppendUint32(body, 0xffffffff)
	body = binary.BigEndian.AppendUint32(body, uint32(len(value)))
	body = append(body, value...)
	out := binary.BigEndian.AppendUint64(nil, uint64(offset))
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(body)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
	return append(out, body...)
}

// TestLegacyDamageBelowRecoveryPoint: a v0/v1 entry with a bad CRC below
// the recovery point is corruption, reported and kept; above it, the tail
// from it on is cut.
func TestLegacyDamageBelowRecoveryPoint(t *testing.T) {
	for _, rp := range []int64{3, 0} {
		fs := vfs.NewMem()
		dir := "/log"
		if err := fs.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		var file []byte
		file = append(file, legacyEntry(0, []byte("legacy-zero"))...)
		legacyAt := int64(len(file))
		file = append(file, legacyEntry(1, []byte("legacy-one"))...)
		file = append(file, batchOfSize(t, 2, 120)...)
		file[legacyAt+record.LogOverhead+10] ^= 0xff // inside the CRC'd bytes
		path := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
		vfstest.WriteFile(t, fs, path, file)
		if rp > 0 {
			if err := layout.WriteCheckpoint(fs, filepath.Join(dir, RecoveryPointFile), []layout.CheckpointEntry{{Topic: "log", Offset: rp}}); err != nil {
				t.Fatal(err)
			}
		}
		before := dirSnapshot(t, fs, dir)
		l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
		if rp > 0 {
			wantCorruption(t, err, path, legacyAt)
			vfstest.Unchanged(t, "legacy damage below the recovery point", before, dirSnapshot(t, fs, dir))
			continue
		}
		if err != nil {
			t.Fatalf("legacy damage above the recovery point: %v", err)
		}
		if l.EndOffset() != 1 || fileSize(t, fs, path) != legacyAt {
			t.Fatalf("end %d, %d bytes kept; want 1 and %d", l.EndOffset(), fileSize(t, fs, path), legacyAt)
		}
		l.Close()
	}
}

// kafkaLogDir makes a Kafka log.dir /kafka holding partition topic-0 (a
// seglog-written log with several segments, its own checkpoints removed)
// and the broker's checkpoints with lines for other partitions too.
func kafkaLogDir(t *testing.T, clean bool, start int64) (fs *vfs.MemFS, part string, end int64) {
	t.Helper()
	fs = vfs.NewMem()
	part = "/kafka/topic-0"
	writeSegments(t, fs, part, 3)
	l, err := Open(part, Options{FS: fs, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	end = l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{RecoveryPointFile, LogStartOffsetFile, CleanShutdownFile} {
		if err := fs.Remove(filepath.Join(part, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := fs.MkdirAll("/kafka/other-1"); err != nil {
		t.Fatal(err)
	}
	lines := func(mine int64) []layout.CheckpointEntry {
		return []layout.CheckpointEntry{{Topic: "other", Partition: 1, Offset: 77}, {Topic: "topic", Partition: 0, Offset: mine}, {Topic: "topic", Partition: 1, Offset: 5}}
	}
	if err := layout.WriteCheckpoint(fs, "/kafka/"+RecoveryPointFile, lines(end)); err != nil {
		t.Fatal(err)
	}
	if err := layout.WriteCheckpoint(fs, "/kafka/"+LogStartOffsetFile, lines(start)); err != nil {
		t.Fatal(err)
	}
	if clean {
		vfstest.WriteFile(t, fs, "/kafka/"+CleanShutdownFile, nil)
	}
	return fs, part, end
}

// TestKafkaLogDircheckpoints: a partition directory inside a Kafka log.dir
// is read with its recovery point, log start and clean marker from the
// log.dir's files (its own line only; files of its own, left by an older
// seglog that opened it alone, are ignored), and damage below the
// broker's recovery point is reported, not cut. A writable Open of it is
// refused before anything changes, naming the log.dir's holder: only the
// holder of the log.dir's lock writes its partitions.
func TestKafkaLogDirCheckpoints(t *testing.T) {
	t.Run("clean: trusted, damage reported when read", func(t *testing.T) {
		fs, part, end := kafkaLogDir(t, true, 0)
		first := filepath.Join(part, segment.FileName(0, segment.LogSuffix))
		flipBytes(t, fs, first, 200)
		before := dirSnapshot(t, fs, "/kafka")
		l, err := Open(part, Options{FS: fs, ReadOnly: true, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if l.EndOffset() != end {
			t.Fatalf("end %d, want %d", l.EndOffset(), end)
		}
		var readErr error
		for _, err := range l.Records(0) {
			if err != nil {
				readErr = err
				break
			}
		}
		var ce *CorruptionError
		if !errors.As(readErr, &ce) || ce.File != first {
			t.Fatalf("reading the damage: %v", readErr)
		}
		l.Close()
		vfstest.Unchanged(t, "the log.dir", before, dirSnapshot(t, fs, "/kafka"))
	})
	t.Run("unclean: damage below the broker's recovery point refused", func(t *testing.T) {
		fs, part, _ := kafkaLogDir(t, false, 0)
		names, _ := fs.List(part)
		var last string
		for _, n := range names {
			if _, suffix, ok := segment.ParseFileName(n); ok && suffix == segment.LogSuffix {
				last = n
			}
		}
		path := filepath.Join(part, last)
		flipBytes(t, fs, path, record.HeaderSize+5)
		before := dirSnapshot(t, fs, "/kafka")
		_, err := Open(part, Options{FS: fs, ReadOnly: true, Logger: discardLogger()})
		wantCorruption(t, err, path, 0)
		vfstest.Unchanged(t, "the log.dir", before, dirSnapshot(t, fs, "/kafka"))
	})
	t.Run("log start from the log.dir, own files ignored", func(t *testing.T) {
		fs, part, end := kafkaLogDir(t, false, 9)
		// What an older seglog left when it opened the partition alone.
		if err := layout.WriteCheckpoint(fs, filepath.Join(part, LogStartOffsetFile), []layout.CheckpointEntry{{Topic: "topic", Partition: 0, Offset: 0}}); err != nil {
			t.Fatal(err)
		}
		if err := layout.WriteCheckpoint(fs, filepath.Join(part, RecoveryPointFile), []layout.CheckpointEntry{{Topic: "topic", Partition: 0, Offset: 0}}); err != nil {
			t.Fatal(err)
		}
		vfstest.WriteFile(t, fs, filepath.Join(part, CleanShutdownFile), nil)
		l, err := Open(part, Options{FS: fs, ReadOnly: true, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if l.StartOffset() != 9 || l.EndOffset() != end {
			t.Fatalf("start %d end %d, want 9 %d", l.StartOffset(), l.EndOffset(), end)
		}
		l.Close()
	})
	t.Run("writable open refused, naming the holder", func(t *testing.T) {
		fs, part, _ := kafkaLogDir(t, true, 0)
		before := dirSnapshot(t, fs, "/kafka")
		_, err := Open(part, Options{FS: fs, Logger: discardLogger()})
		var ie *InLogDirError
		if !errors.Is(err, ErrInLogDir) || !errors.As(err, &ie) || ie.LogDir != "/kafka" || ie.Topic != "topic" || ie.Partition != 0 || ie.HolderKnown {
			t.Fatalf("writable open of a partition of a log.dir: %v, want an *InLogDirError naming no holder", err)
		}
		vfstest.Unchanged(t, "the log.dir", before, dirSnapshot(t, fs, "/kafka"))
		lk, err := fs.Lock("/kafka/" + LockFile)
		if err != nil {
			t.Fatal(err)
		}
		defer lk.Close()
		h := layout.Holder{Command: "seglog serve", PID: 4242, Listener: "127.0.0.1:9092"}
		if err := lk.SetOwner(h.Format()); err != nil {
			t.Fatal(err)
		}
		before = dirSnapshot(t, fs, "/kafka")
		_, err = Open(part, Options{FS: fs, lockHeld: true, Logger: discardLogger()})
		if !errors.As(err, &ie) || !ie.HolderKnown || ie.Holder != h || !strings.Contains(err.Error(), "held by `seglog serve` (pid 4242, listening on 127.0.0.1:9092)") {
			t.Fatalf("writable open beside a server: %v, want it named", err)
		}
		vfstest.Unchanged(t, "the log.dir", before, dirSnapshot(t, fs, "/kafka"))
	})
}

// TestTornTailPastRecoveryPointCut: bytes past the recovery point that do
// not form a batch are a torn write: cut, and logged.
func TestTornTailPastRecoveryPointCut(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/log"
	l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recordsAt(0, 5)...); err != nil {
		t.Fatal(err)
	}
	active := l.segs.active.LogPath()
	l.Close()
	size := fileSize(t, fs, active)
	f, err := fs.OpenReadWrite(active)
	if err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte{0x42}, 100)
	if _, err := f.WriteAt(batchOfSize(t, 5, 200)[:150], size); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(garbage, size+150); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	l, err = Open(dir, Options{FS: fs, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.EndOffset() != 5 || fileSize(t, fs, active) != size {
		t.Fatalf("end %d, %d bytes; want 5 and %d", l.EndOffset(), fileSize(t, fs, active), size)
	}
	if !strings.Contains(logged.String(), "truncated") {
		t.Fatalf("the cut was not logged: %q", logged.String())
	}
}

// batchOf builds a v2 batch of n records at base.
func batchOf(t testing.TB, base int64, n int) []byte {
	t.Helper()
	b := record.NewBuilder(record.None)
	b.SetBaseOffset(base)
	for i := range n {
		off := base + int64(i)
		if err := b.Add(record.Record{Offset: off, Timestamp: 1000 + off, Value: crashValue(off, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

// TestBatchesPastNextSegmentBase: a segment whose batches reach the next
// segment's base offset overlaps it. Above the recovery point the
// overlapping batches are cut like a torn tail (they were never
// acknowledged); below it the overlap is corruption and nothing changes.
func TestBatchesPastNextSegmentBase(t *testing.T) {
	setup := func(batches [][]byte, rp int64) (vfs.FS, string) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/log"); err != nil {
			t.Fatal(err)
		}
		vfstest.WriteFile(t, fs, "/log/"+segment.FileName(0, segment.LogSuffix), bytes.Join(batches, nil))
		vfstest.WriteFile(t, fs, "/log/"+segment.FileName(5, segment.LogSuffix), nil)
		if err := layout.WriteCheckpoint(fs, "/log/"+RecoveryPointFile, []layout.CheckpointEntry{{Topic: "log", Offset: rp}}); err != nil {
			t.Fatal(err)
		}
		return fs, "/log/" + segment.FileName(0, segment.LogSuffix)
	}
	t.Run("above the recovery point: cut", func(t *testing.T) {
		var batches [][]byte
		for off := range int64(8) {
			batches = append(batches, batchOf(t, off, 1))
		}
		fs, _ := setup(batches, 2)
		l, err := Open("/log", Options{FS: fs, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		// Cut at the first batch reaching 5; the later segment goes too,
		// as after any truncation (Kafka's rule).
		if l.EndOffset() != 5 || l.NumSegments() != 1 {
			t.Fatalf("end %d, %d segments; want 5 and 1 %s", l.EndOffset(), l.NumSegments(), l.debugSegments())
		}
	})
	t.Run("below the recovery point: refused", func(t *testing.T) {
		fs, path := setup([][]byte{batchOf(t, 0, 2), batchOf(t, 2, 6)}, 3)
		before := dirSnapshot(t, fs, "/log")
		_, err := Open("/log", Options{FS: fs, Logger: discardLogger()})
		wantCorruption(t, err, path, int64(len(batchOf(t, 0, 2))))
		if !errors.Is(err, segment.ErrOffsetOrder) {
			t.Fatalf("%v: want ErrOffsetOrder", err)
		}
		vfstest.Unchanged(t, "refused open", before, dirSnapshot(t, fs, "/log"))
	})
}

// TestIndexDamageIsErrCorrupt: damage in an index file (a sealed segment's
// .log cut under its offset index) is ErrCorrupt too, like batch damage.
func TestIndexDamageIsErrCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	bases := writeSegments(t, fs, "/log", 3)
	path := "/log/" + segment.FileName(bases[0], segment.LogSuffix)
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	if err := f.Truncate(size / 4); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := Open("/log", Options{FS: fs, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var readErr error
	for _, err := range l.Records(0) {
		if err != nil {
			readErr = err
			break
		}
	}
	if !errors.Is(readErr, ErrCorrupt) {
		t.Fatalf("iterating into the cut: %v, want ErrCorrupt", readErr)
	}
	// A lookup near the segment's end meets an index entry pointing past
	// the .log: index damage.
	sl, err := l.Read(bases[1]-1, 1<<20, ReadOptions{})
	if err == nil {
		sl.Close()
	}
	var ie *index.Error
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ie) {
		t.Fatalf("lookup over a damaged index: %v, want an index error matching ErrCorrupt", err)
	}
}
