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

// horizons returns the delete horizon of every sealed batch (-1: none).
func horizons(t *testing.T, l *seglog.Log) []int64 {
	t.Helper()
	run := logView(l).AcquireSealed(0, l.EndOffset())
	defer run.Release()
	var out []int64
	for i := range run.Len() {
		for b, err := range run.Batches(i) {
			if err != nil {
				t.Fatal(err)
			}
			h := int64(-1)
			if b.HasDeleteHorizon() {
				h = b.BaseTimestamp()
			}
			out = append(out, h)
		}
	}
	return out
}

// TestTombstoneHorizon: on a fake clock, the first clean keeps the
// tombstones and sets their batch's horizon; a clean before the horizon
// keeps them; one at the horizon drops them. Records' offsets and the
// other keys stay.
func TestTombstoneHorizon(t *testing.T) {
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys)
	defer fscktest.CheckCleanAtEnd(t, fsys, "/log")
	defer l.Close()
	ts := int64(1_700_000_000_000)
	batches := [][]record.Record{
		{{Key: []byte("a"), Value: []byte("a1"), Timestamp: ts}, {Key: []byte("b"), Value: []byte("b1"), Timestamp: ts}},
		{{Key: []byte("a"), Value: nil, Timestamp: ts + 1}, {Key: []byte("c"), Value: []byte("c1"), Timestamp: ts + 1}},
		{{Key: []byte("d"), Value: []byte("d1"), Timestamp: ts + 2}},
	}
	for _, b := range batches {
		if _, err := l.Append(b...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(ts + 10_000)
	o := Options{DeleteRetention: time.Hour, Now: func() time.Time { return now }}
	om := NewOffsetMap(1<<12, 0)

	res, err := Clean(l, om, 0, l.EndOffset(), o)
	if err != nil {
		t.Fatal(err)
	}
	keys := func() []string {
		var out []string
		for _, r := range testutil.ReadRecords(t, l, l.StartOffset()) {
			v := "<nil>"
			if r.Value != nil {
				v = string(r.Value)
			}
			out = append(out, string(r.Key)+"="+v)
		}
		return out
	}
	if got := keys(); len(got) != 4 || got[0] != "b=b1" || got[1] != "a=<nil>" {
		t.Fatalf("after the first clean: %v, want b=b1 a=<nil> c=c1 d=d1", got)
	}
	if res.HorizonsSet != 1 || res.TombstonesRemoved != 0 {
		t.Fatalf("first clean: %+v", res)
	}
	wantHorizon := now.UnixMilli() + time.Hour.Milliseconds()
	if h := horizons(t, l); len(h) != 3 || h[1] != wantHorizon || h[0] != -1 || h[2] != -1 {
		t.Fatalf("horizons %v, want [-1 %d -1]", h, wantHorizon)
	}

	// Before the horizon: a forced clean keeps the tombstone and its horizon.
	now = now.Add(59 * time.Minute)
	o.Force = true
	waitRetired(t, fsys, "/log")
	if res, err = Clean(l, om, res.End, l.EndOffset(), o); err != nil {
		t.Fatal(err)
	}
	if got := keys(); len(got) != 4 || res.TombstonesRemoved != 0 {
		t.Fatalf("before the horizon: %v, %+v", got, res)
	}
	if h := horizons(t, l); h[1] != wantHorizon {
		t.Fatalf("horizon changed to %d", h[1])
	}

	// At the horizon the tombstone goes; its batch had another record.
	now = time.UnixMilli(wantHorizon)
	waitRetired(t, fsys, "/log")
	if res, err = Clean(l, om, res.End, l.EndOffset(), o); err != nil {
		t.Fatal(err)
	}
	got := keys()
	if len(got) != 3 || got[0] != "b=b1" || got[1] != "c=c1" || got[2] != "d=d1" || res.TombstonesRemoved != 1 {
		t.Fatalf("after the horizon: %v, %+v", got, res)
	}
	var offs []int64
	for _, r := range testutil.ReadRecords(t, l, l.StartOffset()) {
		offs = append(offs, r.Offset)
	}
	if offs[0] != 1 || offs[1] != 3 || offs[2] != 4 {
		t.Fatalf("offsets %v, want [1 3 4]", offs)
	}
}
