package seglog

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/defaults"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// batchOfSize builds a v2 batch at base of exactly size bytes: an empty
// batch for record.HeaderSize, else one record whose value fills the rest.
func batchOfSize(t testing.TB, base int64, size int) []byte {
	t.Helper()
	b, ok := tryBatchOfSize(t, base, size)
	if !ok {
		t.Fatalf("cannot build a batch of %d bytes", size)
	}
	return b
}

// tryBatchOfSize is batchOfSize, reporting false for a size no one-record
// batch has (between the empty batch and the smallest record, or where the
// value's length varint grows by a byte).
func tryBatchOfSize(t testing.TB, base int64, size int) ([]byte, bool) {
	t.Helper()
	build := func(valueLen int) []byte {
		b := record.NewBuilder(record.None)
		b.SetBaseOffset(base)
		if valueLen >= 0 {
			if err := b.Add(record.Record{Offset: base, Timestamp: 1000 + base, Value: bytes.Repeat([]byte{byte('a' + base%26)}, valueLen)}); err != nil {
				t.Fatal(err)
			}
		}
		out, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Clone(out)
	}
	if size == record.HeaderSize {
		return build(-1), true
	}
	v := size - record.HeaderSize
	for range 8 {
		if v < 0 {
			return nil, false
		}
		got := build(v)
		if len(got) == size {
			return got, true
		}
		v -= len(got) - size
	}
	return nil, false
}

// TestRecoveryKeepsBatchesOfEverySize: a stored batch is bounded by the file
// and the segment, never by MaxBatchBytes. A .log holding a small batch, a
// batch of the size under test and another small batch, with no checkpoint
// and no clean marker (an unclean shutdown), is recovered whole with
// MaxBatchBytes below and above the batch's size, and every batch reads
// back.
func TestRecoveryKeepsBatchesOfEverySize(t *testing.T) {
	sizes := []int{record.HeaderSize, 1<<20 - 1, 1<<20 + 1, defaults.MaxBatchBytes, defaults.MaxBatchBytes + 1, 10 << 20, 64 << 20}
	for _, size := range sizes {
		big := batchOfSize(t, 1, size)
		var file []byte
		file = append(file, batchOfSize(t, 0, 100)...)
		file = append(file, big...)
		file = append(file, batchOfSize(t, 2, 100)...)
		for _, limit := range []int{size / 2, size + 1} {
			limit = max(limit, record.HeaderSize)
			t.Run(fmt.Sprintf("size=%d/limit=%d", size, limit), func(t *testing.T) {
				fs := vfs.NewMem()
				if err := fs.MkdirAll("/log"); err != nil {
					t.Fatal(err)
				}
				logPath := "/log/" + segment.FileName(0, segment.LogSuffix)
				if err := vfsWriteFile(fs, logPath, file); err != nil {
					t.Fatal(err)
				}
				l, err := Open("/log", Options{FS: fs, LogConfig: LogConfig{MaxBatchBytes: limit, SegmentBytes: 128 << 20}, Logger: discardLogger()})
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				defer l.Close()
				if got := l.Size(); got != int64(len(file)) {
					t.Fatalf("recovery left %d bytes of %d", got, len(file))
				}
				if l.EndOffset() != 3 {
					t.Fatalf("end offset %d, want 3", l.EndOffset())
				}
				want := []int64{0, 1, 2}
				if size == record.HeaderSize {
					want = []int64{0, 2} // the empty batch holds no record
				}
				var got []int64
				for r, err := range l.Records(0) {
					if err != nil {
						t.Fatalf("read: %v", err)
					}
					if r.Offset == 1 && len(r.Value) != size-record.HeaderSize-recordOverhead(t, big) {
						t.Fatalf("offset 1: %d-byte value", len(r.Value))
					}
					got = append(got, r.Offset)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("read offsets %v, want %v", got, want)
				}
			})
		}
	}
}

// TestRecoveryKeepsEverySmallBatchSize: the sizes between the ones above,
// densely: one .log holds a batch of every size a one-record batch can
// have from record.HeaderSize (the empty batch) to 4 KiB and a bit, one
// per offset, synced with no checkpoint and no clean marker. A writable
// open with MaxBatchBytes below every one of them (the smallest limit) and
// above them all, and a read-only open, keep the whole file and read every
// record back with its value.
func TestRecoveryKeepsEverySmallBatchSize(t *testing.T) {
	var file []byte
	var sizes, valueLens []int
	for size := record.HeaderSize; size <= 4200; size++ {
		b, ok := tryBatchOfSize(t, int64(len(sizes)), size)
		if !ok {
			continue
		}
		file = append(file, b...)
		sizes = append(sizes, size)
		valueLens = append(valueLens, size-record.HeaderSize-recordOverhead(t, b))
	}
	if len(sizes) < 4000 {
		t.Fatalf("only %d sizes could be built", len(sizes))
	}
	logPath := "/log/" + segment.FileName(0, segment.LogSuffix)
	for _, o := range []Options{{LogConfig: LogConfig{MaxBatchBytes: record.HeaderSize}}, {LogConfig: LogConfig{MaxBatchBytes: 8 << 10}}, {ReadOnly: true, LogConfig: LogConfig{MaxBatchBytes: record.HeaderSize}}} {
		t.Run(fmt.Sprintf("limit=%d/readonly=%v", o.MaxBatchBytes, o.ReadOnly), func(t *testing.T) {
			fs := vfs.NewMem()
			if err := fs.MkdirAll("/log"); err != nil {
				t.Fatal(err)
			}
			if err := vfsWriteFile(fs, logPath, file); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if data := vfstest.ReadFile(t, fs, logPath); !bytes.Equal(data, file) {
					t.Fatal("the .log changed")
				}
			}()
			o.FS, o.Logger = fs, discardLogger()
			l, err := Open("/log", o)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer l.Close()
			if l.Size() != int64(len(file)) || l.EndOffset() != int64(len(sizes)) {
				t.Fatalf("open kept %d bytes and %d offsets of %d and %d", l.Size(), l.EndOffset(), len(file), len(sizes))
			}
			next := int64(1) // offset 0 is the empty batch
			for r, err := range l.Records(0) {
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				if r.Offset != next || len(r.Value) != valueLens[r.Offset] || (len(r.Value) > 0 && r.Value[0] != byte('a'+r.Offset%26)) {
					t.Fatalf("record at offset %d (want %d): %d-byte value for a %d-byte batch", r.Offset, next, len(r.Value), sizes[r.Offset])
				}
				next++
			}
			if next != int64(len(sizes)) {
				t.Fatalf("read up to offset %d of %d", next, len(sizes))
			}
		})
	}
}

// recordOverhead is the bytes of a one-record batch's record section that
// are not the value.
func recordOverhead(t testing.TB, batch []byte) int {
	t.Helper()
	n := 0
	for r, err := range record.Batch(batch).Records() {
		if err != nil {
			t.Fatal(err)
		}
		n += len(r.Value)
	}
	return len(batch) - record.HeaderSize - n
}

// vfsWriteFile writes data to a new file at path and syncs it.
func vfsWriteFile(fs vfs.FS, path string, data []byte) error {
	f, err := fs.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TestSmallerMaxBatchBytesKeepsSyncedData: a batch stored and synced under
// a large MaxBatchBytes survives a crash and a reopen with the default
// (smaller) limit, and reads back.
func TestSmallerMaxBatchBytesKeepsSyncedData(t *testing.T) {
	mem := vfs.NewMem()
	l, err := Open("/log", Options{FS: mem, LogConfig: LogConfig{MaxBatchBytes: 3 << 20, SegmentBytes: 8 << 20}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recordsAt(0, 3)...); err != nil {
		t.Fatal(err)
	}
	bigValue := bytes.Repeat([]byte("b"), 2<<20)
	if _, err := l.Append(record.Record{Value: bigValue}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recordsAt(4, 2)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	l.Close()
	for _, fs := range []vfs.FS{crashed, mem} {
		l, err := Open("/log", Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 8 << 20}, Logger: discardLogger()})
		if err != nil {
			t.Fatalf("reopen with the default limit: %v", err)
		}
		if l.EndOffset() != 6 {
			t.Fatalf("end offset %d after reopen, want 6", l.EndOffset())
		}
		n := 0
		for r, err := range l.Records(0) {
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if r.Offset == 3 && !bytes.Equal(r.Value, bigValue) {
				t.Fatalf("the 2 MiB record changed")
			}
			n++
		}
		if n != 6 {
			t.Fatalf("read %d records, want 6", n)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecoveryReadsSyncedBytesOnce: recovery after a crash reads the
// segment holding the recovery point once: one scan both checks the
// synced part and rebuilds the indexes (before, a check pass read the
// synced bytes and recovery read them again).
func TestRecoveryReadsSyncedBytesOnce(t *testing.T) {
	mem := vfs.NewMem()
	l, err := Open("/log", Options{FS: mem, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for l.Size() < 2<<20 {
		if _, err := l.Append(recordsAt(l.EndOffset(), 20)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	active := l.segs.active.LogPath()
	l.Close()
	// Unclean, with the recovery point near the end: nearly every byte is
	// synced and must be checked.
	if err := mem.Remove("/log/" + CleanShutdownFile); err != nil {
		t.Fatal(err)
	}
	size := fileSize(t, mem, active)
	var read atomic.Int64
	inj := vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpRead && op.Path == active {
			read.Add(op.Len)
		}
		return nil
	})
	l, err = Open("/log", Options{FS: vfs.Inject(mem, inj), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.RecoveryPoint() < l.EndOffset()/2 {
		t.Fatalf("recovery point %d of %d: the test needs most bytes synced", l.RecoveryPoint(), l.EndOffset())
	}
	if got := read.Load(); got > size+size/10 {
		t.Fatalf("recovery read %d bytes of a %d-byte segment", got, size)
	}
}

// TestKafkaPartitionKeepsBigBatch (issue 10 case 1, on a Kafka directory): a
// partition directory of a broker's log.dir whose .log holds a 2 MiB batch
// (the topic's max.message.bytes had been raised) between two small ones.
// With the broker's recovery point at 0 (the whole segment is past it,
// after an unclean shutdown), at the end (the segment is checked as synced
// data), and after a clean shutdown with the indexes missing (rebuilt), a
// writable and a read-only open with the default MaxBatchBytes keep the
// whole .log and read the big record back; the log.dir's files are never
// touched.
func TestKafkaPartitionKeepsBigBatch(t *testing.T) {
	bigSize := 2<<20 + 100
	if bigSize <= defaults.MaxBatchBytes {
		t.Fatal("the big batch must exceed the default MaxBatchBytes")
	}
	big := batchOfSize(t, 1, bigSize)
	var file []byte
	file = append(file, batchOfSize(t, 0, 100)...)
	file = append(file, big...)
	file = append(file, batchOfSize(t, 2, 100)...)
	const part = "/kafka/events-0"
	logPath := part + "/" + segment.FileName(0, segment.LogSuffix)
	for _, c := range []struct {
		name          string
		recoveryPoint int64
		clean         bool
	}{
		{"unclean, recovery point 0", 0, false},
		{"unclean, recovery point at the end", 3, false},
		{"clean, indexes missing", 3, true},
	} {
		for _, readOnly := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/readonly=%v", c.name, readOnly), func(t *testing.T) {
				fs := vfs.NewMem()
				if err := fs.MkdirAll(part); err != nil {
					t.Fatal(err)
				}
				if err := fs.MkdirAll("/kafka/other-0"); err != nil {
					t.Fatal(err)
				}
				if err := vfsWriteFile(fs, logPath, file); err != nil {
					t.Fatal(err)
				}
				lines := []layout.CheckpointEntry{{Topic: "events", Partition: 0, Offset: c.recoveryPoint}, {Topic: "other", Partition: 0, Offset: 7}}
				if err := layout.WriteCheckpoint(fs, "/kafka/"+RecoveryPointFile, lines); err != nil {
					t.Fatal(err)
				}
				if err := layout.WriteCheckpoint(fs, "/kafka/"+LogStartOffsetFile, []layout.CheckpointEntry{{Topic: "events", Partition: 0}, {Topic: "other", Partition: 0}}); err != nil {
					t.Fatal(err)
				}
				if c.clean {
					vfstest.WriteFile(t, fs, "/kafka/"+CleanShutdownFile, nil)
				}
				logDir := dirSnapshot(t, fs, "/kafka")
				o := Options{FS: fs, ReadOnly: readOnly, Logger: discardLogger()}
				if !readOnly {
					// Written only as a store writes its partitions: as
					// the log.dir's holder, with its lines.
					o.lockHeld = true
					o.checkpoints = &mapCheckpointer{m: map[string]int64{RecoveryPointFile: c.recoveryPoint, LogStartOffsetFile: 0}, clean: c.clean}
				}
				l, err := Open(part, o)
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				if l.Size() != int64(len(file)) || l.EndOffset() != 3 {
					t.Fatalf("open kept %d bytes and offsets up to %d; the .log holds %d bytes, offsets up to 3", l.Size(), l.EndOffset(), len(file))
				}
				var got []int64
				for r, err := range l.Records(0) {
					if err != nil {
						t.Fatalf("read: %v", err)
					}
					if r.Offset == 1 && len(r.Value) != bigSize-record.HeaderSize-recordOverhead(t, big) {
						t.Fatalf("the big record reads back with a %d-byte value", len(r.Value))
					}
					got = append(got, r.Offset)
				}
				if fmt.Sprint(got) != "[0 1 2]" {
					t.Fatalf("read offsets %v, want [0 1 2]", got)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if data := vfstest.ReadFile(t, fs, logPath); !bytes.Equal(data, file) {
					t.Fatalf("the .log changed: %d bytes, was %d", len(data), len(file))
				}
				after := dirSnapshot(t, fs, "/kafka")
				vfstest.Unchanged(t, "the log.dir", logDir, after)
				if readOnly {
					vfstest.Unchanged(t, "the partition (read-only)", map[string]string{segment.FileName(0, segment.LogSuffix): string(file)}, dirSnapshot(t, fs, part))
				}
			})
		}
	}
}
