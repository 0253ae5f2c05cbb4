package seglog

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// leaderBatch builds a batch as a leader stores it: base offset base,
// epoch, and records at the given offsets (a compacted batch skips some).
func leaderBatch(t *testing.T, base int64, epoch int32, offs ...int64) []byte {
	t.Helper()
	bld := record.NewBuilder(record.None)
	bld.SetBaseOffset(base)
	for _, o := range offs {
		if err := bld.Add(record.Record{Offset: o, Timestamp: 1_700_000_000_000 + o, Key: []byte("k"), Value: []byte{byte(o)}}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Clone(b)
	record.Batch(out).SetPartitionLeaderEpoch(epoch)
	return out
}

// allBatches reads every batch of l from its start.
func allBatches(t *testing.T, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	for off := l.StartOffset(); off < l.EndOffset(); {
		sl, err := l.Read(off, math.MaxInt32, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, sl.Len())
		if _, err := sl.ReadAt(data, 0); err != nil {
			t.Fatal(err)
		}
		sl.Close()
		if len(data) == 0 {
			t.Fatalf("nothing read at %d, the log ends at %d", off, l.EndOffset())
		}
		for len(data) > 0 {
			b := record.Batch(data)
			out = append(out, data[:b.Size()])
			off = b.NextOffset()
			data = data[b.Size():]
		}
	}
	return out
}

// TestAppendAsFollower: a leader's batches, with compaction's gaps between
// them and inside them, are stored byte for byte at their offsets, across
// segments; the log reads them back, recovers them after a reopen (a
// power loss too), and fsck finds the directory clean. An overlap is an
// *OverlapError and stores nothing.
func TestAppendAsFollower(t *testing.T) {
	mem := vfs.NewMem()
	opts := Options{FS: mem, LogConfig: LogConfig{Sync: SyncAlways, SegmentBytes: 400}}
	l, err := Open("/p", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	if _, err := l.Append(record.Record{Value: []byte("own")}, record.Record{Value: []byte("own")}); err != nil {
		t.Fatal(err)
	}
	want := allBatches(t, l)
	leader := [][]byte{
		leaderBatch(t, 2, 1, 2, 3),        // contiguous with the log
		leaderBatch(t, 7, 1, 7, 9, 12),    // a gap before, holes inside
		leaderBatch(t, 13, 4, 13),         // contiguous again
		leaderBatch(t, 40, 4, 45),         // a gap, one record of six offsets
		leaderBatch(t, 46, 5, 46, 47, 48), // and on
	}
	// Several calls, so some land in segments rolled on the way.
	for _, part := range [][][]byte{leader[:2], leader[2:3], leader[3:]} {
		infos, err := l.AppendAsFollower(part)
		if err != nil {
			t.Fatal(err)
		}
		for i, info := range infos {
			b := record.Batch(part[i])
			if info.FirstOffset != b.BaseOffset() || info.LastOffset != b.LastOffset() {
				t.Fatalf("batch at %d stored at [%d, %d]", b.BaseOffset(), info.FirstOffset, info.LastOffset)
			}
		}
	}
	want = append(want, leader...)
	check := func(label string, l *Log) {
		t.Helper()
		if l.EndOffset() != 49 {
			t.Fatalf("%s: the log ends at %d, want 49", label, l.EndOffset())
		}
		got := allBatches(t, l)
		if len(got) != len(want) {
			t.Fatalf("%s: %d batches, want %d", label, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: batch %d differs", label, i)
			}
		}
		// Reading from inside a gap starts at the batch after it.
		sl, err := l.Read(30, 1, ReadOptions{})
		if err != nil {
			t.Fatalf("%s: reading in a gap: %v", label, err)
		}
		if sl.FirstOffset() != 40 {
			t.Fatalf("%s: a read at 30 starts at %d, want 40", label, sl.FirstOffset())
		}
		sl.Close()
	}
	check("appended", l)

	for _, tc := range []struct {
		name    string
		batches [][]byte
		at      int64
	}{
		{"below the end", [][]byte{leaderBatch(t, 48, 5, 48)}, 48},
		{"inside the call", [][]byte{leaderBatch(t, 60, 5, 60, 61), leaderBatch(t, 61, 5, 61)}, 61},
	} {
		_, err := l.AppendAsFollower(tc.batches)
		var oe *OverlapError
		if !errors.Is(err, ErrOverlap) || !errors.As(err, &oe) || oe.BaseOffset != tc.at {
			t.Fatalf("%s: %v, want an overlap at %d", tc.name, err, tc.at)
		}
	}
	bad := leaderBatch(t, 60, 5, 60)
	bad[len(bad)-1] ^= 0xff
	if _, err := l.AppendAsFollower([][]byte{bad}); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("a damaged batch: %v, want ErrCorruptBatch", err)
	}
	check("after the refusals", l)

	crashed := mem.CrashClone()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for name, fsys := range map[string]vfs.FS{"reopened": mem, "after a power loss": crashed} {
		o := opts
		o.FS = fsys
		if l, err = Open("/p", o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		check(name, l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		rep, err := fsck.Check(fsys, "/p", fsck.Options{})
		if err != nil {
			t.Fatalf("%s: fsck: %v", name, err)
		}
		if !rep.Clean() {
			t.Fatalf("%s: fsck: %+v", name, rep)
		}
	}
	l, err = Open("/p", opts)
	if err != nil {
		t.Fatal(err)
	}
	// Appends after the copied batches go on at the end.
	info, err := l.AppendEpochBatch(6, leaderBatch(t, 0, 0, 0))
	if err != nil || info.FirstOffset != 49 {
		t.Fatalf("an append after the copy: at %d, %v; want 49", info.FirstOffset, err)
	}
}
