package seglog_test

import (
	"errors"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/compaction"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// TestReplaceAfterTruncationIsSegmentsChanged is TestConcurrencySoak's
// finding: a compaction that read a run while a truncation cut its last
// segment builds cleaned segments ending short of the run; ReplaceSegments
// compared their coverage before noticing the truncation and failed with
// a caller's-mistake error that the cleaner reported as a failed round,
// instead of ErrSegmentsChanged, which it retries.
func TestReplaceAfterTruncationIsSegmentsChanged(t *testing.T) {
	l, err := seglog.Open("/s", campaignOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for l.NumSegments() < 4 {
		if _, err := l.Append(record.Record{Key: []byte("k"), Value: campaignValue(l.EndOffset(), "k")}); err != nil {
			t.Fatal(err)
		}
	}
	v := seglog.CompactionView(l)
	run := v.AcquireSealed(0, l.EndOffset())
	defer run.Release()
	if run.Len() < 2 {
		t.Fatalf("run of %d segments", run.Len())
	}
	last := run.Info(run.Len() - 1)
	if err := l.TruncateTo(last.BaseOffset + 1); err != nil {
		t.Fatal(err)
	}
	w, err := v.NewCleaned(run.Info(0).BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	for i := range run.Len() {
		for b, err := range run.Batches(i) {
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Append(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := v.ReplaceSegments(run, []*segment.Cleaned{w}); !errors.Is(err, seglog.ErrSegmentsChanged) {
		t.Fatalf("the swap after a truncation overtook the rewrite: %v, want ErrSegmentsChanged", err)
	}
}

// TestCompactionOvertakenByTruncation is TestConcurrencySoak's other
// finding (seed 2, scale 3): a truncation that cuts a segment while
// compaction reads it makes compaction.Clean fail with ErrLegacy ("segment
// holds legacy v0/v1 entries"), as if the log held data it cannot
// compact, instead of reporting ErrSegmentsChanged (or skipping the
// group) as it does when the truncation comes between the read and the
// swap. Nothing is lost: the swap never happens. Known bug in compaction
// (owned elsewhere this session).
func TestCompactionOvertakenByTruncation(t *testing.T) {
	l, err := seglog.Open("/s", campaignOptions(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for l.NumSegments() < 4 {
		if _, err := l.Append(record.Record{Key: []byte("k"), Value: campaignValue(l.EndOffset(), "k")}); err != nil {
			t.Fatal(err)
		}
	}
	truncated := false
	o := compaction.Options{Force: true, SegmentBytes: 1024, Throttle: func(int64) error {
		if !truncated {
			truncated = true
			return l.TruncateTo(1)
		}
		return nil
	}}
	_, err = compaction.Clean(l, compaction.NewOffsetMap(1<<16, 0.9), 0, l.EndOffset(), o)
	if !truncated {
		t.Fatal("compaction read nothing")
	}
	if err != nil && !errors.Is(err, seglog.ErrSegmentsChanged) {
		t.Fatalf("compaction overtaken by a truncation: %v, want nil or ErrSegmentsChanged", err)
	}
}
