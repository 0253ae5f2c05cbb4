package seglog

import (
	"errors"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestAppendEpoch: each batch carries the epoch it was appended with, and
// timestamps are stored as given (0 stays 0).
func TestAppendEpoch(t *testing.T) {
	l, err := Open("/p", Options{FS: vfs.NewMem(), LogConfig: LogConfig{Sync: SyncAlways}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i, ep := range []int32{3, 3, 9} {
		info, err := l.AppendEpoch(ep, record.Record{Timestamp: int64(i), Value: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		sl, err := l.Read(info.FirstOffset, 1, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, sl.Len())
		if _, err := sl.ReadAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		sl.Close()
		b := record.Batch(buf)
		if b.PartitionLeaderEpoch() != ep || b.MaxTimestamp() != int64(i) || b.BaseOffset() != int64(i) {
			t.Fatalf("batch %d: epoch %d, max timestamp %d, base %d", i, b.PartitionLeaderEpoch(), b.MaxTimestamp(), b.BaseOffset())
		}
	}
	if _, err := l.AppendEpoch(-1, record.Record{}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("negative epoch: %v", err)
	}
}

// TestRestartAt: the log restarts empty at an offset past its end, inside
// it and below its start, durably: a power loss right after brings back
// the restarted log, and appends continue from the offset.
func TestRestartAt(t *testing.T) {
	fs := vfs.NewMem()
	l, err := Open("/p", Options{FS: fs, LogConfig: LogConfig{Sync: SyncAlways, SegmentBytes: 200}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	for range 10 {
		if _, err := l.Append(record.Record{Value: make([]byte, 50)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.DeleteBefore(3); err != nil {
		t.Fatal(err)
	}
	for _, at := range []int64{1000, 1005, 500, 0} {
		if err := l.RestartAt(at); err != nil {
			t.Fatal(err)
		}
		if l.StartOffset() != at || l.EndOffset() != at {
			t.Fatalf("after RestartAt(%d): [%d, %d)", at, l.StartOffset(), l.EndOffset())
		}
		crashed, err := Open("/p", Options{FS: fs.CrashClone()})
		if err != nil {
			t.Fatal(err)
		}
		if crashed.StartOffset() != at || crashed.EndOffset() != at {
			t.Fatalf("RestartAt(%d), power loss: [%d, %d)", at, crashed.StartOffset(), crashed.EndOffset())
		}
		crashed.Close()
		info, err := l.Append(record.Record{Value: []byte("x")}, record.Record{Value: []byte("y")})
		if err != nil || info.FirstOffset != at {
			t.Fatalf("append after RestartAt(%d): %+v, %v", at, info, err)
		}
		n := 0
		for r, err := range l.Records(at) {
			if err != nil {
				t.Fatal(err)
			}
			if r.Offset != at+int64(n) {
				t.Fatalf("record at %d, want %d", r.Offset, at+int64(n))
			}
			n++
		}
		if n != 2 {
			t.Fatalf("%d records after RestartAt(%d) and an append of 2", n, at)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if l, err = Open("/p", Options{FS: fs, LogConfig: LogConfig{Sync: SyncAlways, SegmentBytes: 200}}); err != nil {
			t.Fatal(err)
		}
		if l.StartOffset() != at || l.EndOffset() != at+2 {
			t.Fatalf("RestartAt(%d), reopened: [%d, %d)", at, l.StartOffset(), l.EndOffset())
		}
	}
	if err := l.RestartAt(-1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("RestartAt(-1): %v", err)
	}
}

// TestRestartAtPastUnsynced: RestartAt past the end of a log holding
// appends not yet synced syncs them and restarts (it deadlocked, taking the
// flush lock it held), and a power loss right after finds the log
// restarted.
func TestRestartAtPastUnsynced(t *testing.T) {
	fs := vfs.NewMem()
	l, err := Open("/p", Options{FS: fs, LogConfig: LogConfig{Sync: SyncNone}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 5 {
		if _, err := l.Append(record.Record{Value: []byte("unsynced")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.RestartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 100 || l.EndOffset() != 100 {
		t.Fatalf("after RestartAt(100): [%d, %d)", l.StartOffset(), l.EndOffset())
	}
	crashed, err := Open("/p", Options{FS: fs.CrashClone()})
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	if crashed.StartOffset() != 100 || crashed.EndOffset() != 100 {
		t.Fatalf("RestartAt(100), power loss: [%d, %d)", crashed.StartOffset(), crashed.EndOffset())
	}
}

// TestAppendEpochBatch: a checked batch is stored with the next offset and
// the epoch stamped and its other bytes unchanged, control batches
// included, so two logs fed the same batches hold the same bytes; a bad
// batch is a *BatchError and leaves the log as it was.
func TestAppendEpochBatch(t *testing.T) {
	build := func(control bool, ts int64, vals ...string) []byte {
		bld := record.NewBuilder(record.None)
		bld.SetControl(control)
		for i, v := range vals {
			if err := bld.Add(record.Record{Offset: int64(i), Timestamp: ts, Value: []byte(v)}); err != nil {
				t.Fatal(err)
			}
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		b.SetBaseOffset(77) // ignored
		return append([]byte(nil), b...)
	}
	fs := vfs.NewMem()
	l, err := Open("/p", Options{FS: fs, LogConfig: LogConfig{Sync: SyncAlways, TimestampType: record.LogAppendTime}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	in := [][]byte{build(false, 5, "a", "b"), build(true, 6, "c"), build(false, 7, "d")}
	var want []byte
	for i, b := range in {
		orig := append([]byte(nil), b...)
		info, err := l.AppendEpochBatch(int32(i+1), b)
		if err != nil {
			t.Fatal(err)
		}
		sl, err := l.Read(info.FirstOffset, 1, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, sl.Len())
		if _, err := sl.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		sl.Close()
		gb := record.Batch(got)
		if gb.BaseOffset() != info.FirstOffset || gb.PartitionLeaderEpoch() != int32(i+1) || gb.Validate() != nil {
			t.Fatalf("batch %d: base %d (want %d), epoch %d", i, gb.BaseOffset(), info.FirstOffset, gb.PartitionLeaderEpoch())
		}
		// Only the two stamped fields differ from what was given, even
		// under LogAppendTime: replicas never restamp the time.
		record.Batch(orig).AssignOffsets(gb.BaseOffset(), gb.PartitionLeaderEpoch())
		if string(orig) != string(got) {
			t.Fatalf("batch %d changed beyond offset and epoch", i)
		}
		want = append(want, got...)
	}
	if l.EndOffset() != 4 {
		t.Fatalf("end %d, want 4", l.EndOffset())
	}
	if file, err := vfs.ReadFileLimit(fs, "/p/00000000000000000000.log", 1<<20); err != nil || string(file) != string(want) {
		t.Fatalf("the .log holds %d bytes (%v), not the %d stamped batches'", len(file), err, len(want))
	}
	bad := build(false, 1, "x")
	bad[len(bad)-1] ^= 1 // a record byte: the CRC no longer matches
	var be *BatchError
	if _, err := l.AppendEpochBatch(1, bad); !errors.As(err, &be) || !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("bad CRC: %v", err)
	}
	empty := build(false, 1)
	if _, err := l.AppendEpochBatch(1, empty); !errors.As(err, &be) {
		t.Fatalf("no records: %v", err)
	}
	if _, err := l.AppendEpochBatch(-1, build(false, 1, "x")); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("negative epoch: %v", err)
	}
	if _, err := l.AppendEpochBatch(1, make([]byte, 10<<20)); !errors.As(err, &be) {
		t.Fatalf("10 MiB of zeros: %v", err)
	}
	if l.EndOffset() != 4 {
		t.Fatalf("a refused batch moved the end to %d", l.EndOffset())
	}
}

// TestAppendEpochBatches: batches of several epochs stored in one call
// take consecutive offsets across segment rolls and are all on disk when
// it returns (a power loss right after keeps every one); a bad batch
// among them stores none.
func TestAppendEpochBatches(t *testing.T) {
	fs := vfs.NewMem()
	l, err := Open("/p", Options{FS: fs, LogConfig: LogConfig{Sync: SyncAlways, SegmentBytes: 300}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var batches [][]byte
	var epochs []int32
	for i := range 12 {
		bld := record.NewBuilder(record.None)
		bld.SetControl(i%4 == 3)
		for k := range i%3 + 1 {
			if err := bld.Add(record.Record{Offset: int64(k), Value: make([]byte, 40)}); err != nil {
				t.Fatal(err)
			}
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, append([]byte(nil), b...))
		epochs = append(epochs, int32(1+i/5))
	}
	bad := append([][]byte(nil), batches...)
	bad[7] = append([]byte(nil), bad[7]...)
	bad[7][len(bad[7])-1] ^= 1
	if _, err := l.AppendEpochBatches(epochs, bad); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("a bad batch among good ones: %v", err)
	}
	if _, err := l.AppendEpochBatches(epochs[:3], batches); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("fewer epochs than batches: %v", err)
	}
	if l.EndOffset() != 0 {
		t.Fatalf("refused calls moved the end to %d", l.EndOffset())
	}
	infos, err := l.AppendEpochBatches(epochs, batches)
	if err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() < 3 {
		t.Fatalf("%d segments: the call was meant to roll", l.NumSegments())
	}
	crashed, err := Open("/p", Options{FS: fs.CrashClone(), LogConfig: LogConfig{Sync: SyncAlways, SegmentBytes: 300}})
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	next := int64(0)
	for i, info := range infos {
		if info.FirstOffset != next {
			t.Fatalf("batch %d at %d, want %d", i, info.FirstOffset, next)
		}
		next = info.LastOffset + 1
		sl, err := crashed.Read(info.FirstOffset, 1, ReadOptions{})
		if err != nil {
			t.Fatalf("batch %d after a power loss: %v", i, err)
		}
		got := make([]byte, sl.Len())
		if _, err := sl.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		sl.Close()
		if string(got) != string(batches[i]) || record.Batch(got).PartitionLeaderEpoch() != epochs[i] {
			t.Fatalf("batch %d after a power loss differs from the one stored", i)
		}
	}
	if crashed.EndOffset() != next {
		t.Fatalf("end %d after a power loss, want %d", crashed.EndOffset(), next)
	}
}
