package compaction

import (
	"slices"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestTransactionalDataMapped: committed transactional data, mapped after
// the pass that finds its marker, supersedes older records of its keys;
// aborted data supersedes nothing; and a non-transactional record after a
// committed one stays the latest.
func TestTransactionalDataMapped(t *testing.T) {
	var batches []record.Batch
	next := int64(0)
	bld := record.NewBuilder(record.None)
	add := func(b record.Batch, err error) {
		if err != nil {
			t.Fatal(err)
		}
		b = slices.Clone(b)
		b.SetBaseOffset(next)
		next = b.NextOffset()
		batches = append(batches, b)
	}
	batch := func(pid int64, recs ...string) (record.Batch, error) {
		bld.Reset()
		bld.SetControl(false)
		bld.SetTransactional(pid >= 0)
		bld.SetProducer(pid, 0, 0)
		for i := 0; i < len(recs); i += 2 {
			if err := bld.AddRecord(int32(i/2), 0, []byte(recs[i]), []byte(recs[i+1]), nil); err != nil {
				return nil, err
			}
		}
		return bld.Build()
	}
	add(batch(-1, "a", "a0"))                                                        // 0: superseded by the committed a1
	add(batch(-1, "b", "b0"))                                                        // 1: kept, the aborted b1 does not count
	add(batch(-1, "c", "c0"))                                                        // 2: superseded by the committed c1
	add(batch(7, "a", "a1", "c", "c1"))                                              // 3, 4: committed
	add(batch(8, "b", "b1"))                                                         // 5: aborted
	add(record.BuildMarker(bld, record.Marker{Type: record.ControlCommit}, 7, 0, 1)) // 6
	add(record.BuildMarker(bld, record.Marker{Type: record.ControlAbort}, 8, 0, 1))  // 7
	add(batch(-1, "c", "c2"))                                                        // 8: the latest c
	add(batch(-1, "z", "z0"))                                                        // 9: in the active segment
	fsys := vfs.NewMem()
	writeSegments(t, fsys, batches, func(i int) bool { return i == len(batches)-1 })
	l := openTestLog(t, fsys)
	defer l.Close()
	if _, err := Clean(l, NewOffsetMap(1<<12, 0), 0, l.EndOffset(), Options{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range testutil.ReadRecords(t, l, l.StartOffset()) {
		got = append(got, string(r.Value))
	}
	want := []string{"b0", "a1", "c2", "z0"}
	if len(got) != len(want) {
		t.Fatalf("values %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("values %q, want %q", got, want)
		}
	}
}
