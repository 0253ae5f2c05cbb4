package seglogtest

import (
	"bytes"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestBatches: the batches appended come back whole, in order, across
// segments, and from a start retention moved.
func TestBatches(t *testing.T) {
	fs := vfs.NewMem()
	l, err := seglog.Open("/p", seglog.Options{FS: fs, LogConfig: seglog.LogConfig{SegmentBytes: 512}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var want [][]byte
	for i := range 30 {
		bld := record.NewBuilder(record.None)
		for j := range 1 + i%3 {
			if err := bld.Add(record.Record{Offset: int64(j), Value: []byte{byte(i), byte(j)}}); err != nil {
				t.Fatal(err)
			}
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		info, err := l.AppendBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		stored := bytes.Clone(b)
		record.Batch(stored).SetBaseOffset(info.FirstOffset)
		want = append(want, stored)
	}
	if l.NumSegments() < 3 {
		t.Fatalf("%d segments, want several", l.NumSegments())
	}
	check := func(label string, want [][]byte) {
		t.Helper()
		got := Batches(t, l.View())
		if len(got) != len(want) {
			t.Fatalf("%s: %d batches, want %d", label, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: batch %d differs", label, i)
			}
		}
	}
	check("whole", want)
	segs := l.Segments()
	if _, err := l.DeleteBefore(segs[1].BaseOffset); err != nil {
		t.Fatal(err)
	}
	var rest [][]byte
	for _, b := range want {
		if record.Batch(b).BaseOffset() >= segs[1].BaseOffset {
			rest = append(rest, b)
		}
	}
	check("after retention", rest)
}
