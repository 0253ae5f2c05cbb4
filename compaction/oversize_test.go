package compaction

import (
	"bytes"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestCleanBatchLargerThanSegment: batches larger than segment.bytes sit
// alone in segments of their own (as Kafka stores them); a round groups
// such a segment by itself, keeps the latest batch of each key whatever
// its size, and the compacted log reads back and reopens clean.
func TestCleanBatchLargerThanSegment(t *testing.T) {
	fsys := vfs.NewMem()
	o := testOptions(fsys)
	o.MaxBatchBytes = 64 << 10
	l, err := seglogOpen(o)
	if err != nil {
		t.Fatal(err)
	}
	big := func(c byte) []byte { return bytes.Repeat([]byte{c}, 10<<10) }
	in := []record.Record{
		{Key: []byte("a"), Value: []byte("a0")},
		{Key: []byte("b"), Value: big('x')},
		{Key: []byte("a"), Value: []byte("a1")},
		{Key: []byte("b"), Value: big('y')},
		{Key: []byte("c"), Value: []byte("c0")},
	}
	for _, r := range in {
		r.Timestamp = 1
		if _, err := l.Append(r); err != nil {
			t.Fatalf("append %d bytes: %v", len(r.Value), err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := Clean(l, NewOffsetMap(55*bucketSlots*slotBytes, 0), 0, l.EndOffset(), Options{SegmentBytes: o.SegmentBytes}); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		var got []int64
		for r, err := range l.Records(0) {
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.Value, in[r.Offset].Value) {
				t.Fatalf("offset %d: %d bytes, not the ones appended", r.Offset, len(r.Value))
			}
			got = append(got, r.Offset)
		}
		if len(got) != 3 || got[0] != 2 || got[1] != 3 || got[2] != 4 {
			t.Fatalf("kept offsets %v, want [2 3 4]", got)
		}
	}
	check()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	o.OnQuarantine = func(q seglog.Quarantine) { t.Errorf("quarantined %+v", q) }
	if l, err = seglogOpen(o); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	check()
}
