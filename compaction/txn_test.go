package compaction

import (
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// markerCounts counts the marker records of each type in l's sealed
// segments.
func markerCounts(t *testing.T, l *seglog.Log) map[record.ControlType]int {
	t.Helper()
	run := logView(l).AcquireSealed(0, l.EndOffset())
	defer run.Release()
	out := map[record.ControlType]int{}
	for i := range run.Len() {
		for b, err := range run.Batches(i) {
			if err != nil {
				t.Fatal(err)
			}
			if !b.IsControl() {
				continue
			}
			for r, err := range b.Records() {
				if err != nil {
					t.Fatal(err)
				}
				_, typ, err := record.ParseControlKey(r.Key)
				if err != nil {
					t.Fatal(err)
				}
				out[typ]++
			}
		}
	}
	return out
}

// TestTransactions compacts the zstd corpus's broker log, which holds
// committed and aborted transactions, split into segments after every
// marker: aborted data goes at once, latest committed values per key
// stay, markers get a horizon when their transaction's data is gone and
// leave once it has passed.
func TestTransactions(t *testing.T) {
	batches := corpusBatches(t, "zstd.broker-log")
	fsys := vfs.NewMem()
	writeSegments(t, fsys, batches, func(i int) bool { return i > 0 && batches[i-1].IsControl() })
	corpus := corpusRecords(t, "zstd")

	// The model, from the broker log's data records and the corpus's
	// aborted flags, in order.
	m := model{}
	aborted := map[int64]bool{}
	i := 0
	for _, b := range batches {
		if b.IsControl() {
			continue
		}
		for r, err := range b.Records() {
			if err != nil {
				t.Fatal(err)
			}
			c := corpus[i]
			i++
			m[r.Offset] = record.Record{Offset: r.Offset, Key: c.bytes(c.Key), Value: c.bytes(c.Value)}
			aborted[r.Offset] = c.Aborted
		}
	}
	if i != len(corpus) || len(aborted) == 0 {
		t.Fatalf("broker log holds %d data records, corpus %d", i, len(corpus))
	}
	l := openTestLog(t, fsys)
	before := markerCounts(t, l)
	if before[record.ControlAbort] == 0 || before[record.ControlCommit] == 0 {
		t.Fatalf("corpus markers %v", before)
	}
	now := time.UnixMilli(1_800_000_000_000)
	o := Options{DeleteRetention: time.Hour, Now: func() time.Time { return now }}
	res, err := Clean(l, NewOffsetMap(1<<16, 0), 0, l.EndOffset(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.AbortedRemoved == 0 || res.End <= 0 {
		t.Fatalf("first clean: %+v", res)
	}
	// Expected: aborted data below the checkpoint gone, then as the model.
	want := model{}
	for off, r := range m {
		if off >= res.End || !aborted[off] {
			want[off] = r
		}
	}
	if err := testutil.CompareRecords(testutil.ReadRecords(t, l, l.StartOffset()), want.expect(0, res.End, l.EndOffset())); err != nil {
		t.Fatal(err)
	}
	first := markerCounts(t, l)
	if first[record.ControlAbort] != before[record.ControlAbort] {
		t.Fatalf("abort markers went before their horizon: %v, were %v", first, before)
	}

	// Past the horizon: every abort marker below the checkpoint goes (a
	// header may stay, without its record).
	now = now.Add(time.Hour)
	o.Force = true
	res2, err := Clean(l, NewOffsetMap(1<<16, 0), res.End, l.EndOffset(), o)
	if err != nil {
		t.Fatal(err)
	}
	after := markerCounts(t, l)
	if after[record.ControlAbort] != 0 || res2.MarkersRemoved < int64(before[record.ControlAbort]) {
		t.Fatalf("after the horizon: markers %v (were %v), %+v", after, before, res2)
	}
	if after[record.ControlCommit] > before[record.ControlCommit] {
		t.Fatalf("commit markers %v, were %v", after, before)
	}
	// Tombstones below the checkpoint got their horizon in the first
	// clean and are gone too.
	var noTombs []record.Record
	for _, r := range want.expect(0, res.End, l.EndOffset()) {
		if r.Offset >= res.End || r.Value != nil {
			noTombs = append(noTombs, r)
		}
	}
	if err := testutil.CompareRecords(testutil.ReadRecords(t, l, l.StartOffset()), noTombs); err != nil {
		t.Fatalf("after the horizon: %v", err)
	}
	if res2.TombstonesRemoved == 0 {
		t.Fatalf("no tombstone removed: %+v", res2)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fscktest.CheckClean(t, fsys, "/log")
}
