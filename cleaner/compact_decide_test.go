package cleaner

import (
	"testing"
	"time"
)

func TestDecideCompaction(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	seg := func(base, next, size, ts int64) Segment {
		return Segment{BaseOffset: base, NextOffset: next, Size: size, LargestTimestamp: ts}
	}
	segs := []Segment{
		seg(0, 100, 1000, 1_000_000), seg(100, 200, 1000, 2_000_000),
		seg(200, 300, 1000, 9_990_000), seg(300, 400, 1000, 9_999_000),
		{BaseOffset: 400, NextOffset: 450, Size: 500, LargestTimestamp: 9_999_999, Active: true},
	}
	pol := DefaultPolicy()
	pol.CleanupPolicy = Compact
	cases := []struct {
		name      string
		mod       func(*CompactionInput)
		dirty, un int64
		ratio     float64
		clean     bool
	}{
		{"no checkpoint: everything sealed is dirty", func(*CompactionInput) {}, 0, 400, 1, true},
		{"checkpoint halves it", func(in *CompactionInput) { in.Checkpoint = 200 }, 200, 400, 0.5, false},
		{"ratio above the minimum", func(in *CompactionInput) { in.Checkpoint = 100 }, 100, 400, 0.75, true},
		{"checkpoint past the end resets", func(in *CompactionInput) { in.Checkpoint = 999 }, 0, 400, 1, true},
		{"checkpoint below the start resets", func(in *CompactionInput) { in.StartOffset, in.Checkpoint = 100, 50 }, 100, 400, 0.75, true},
		{"upper bound rounds down to a segment", func(in *CompactionInput) { in.UpperBound = 250 }, 0, 200, 1, true},
		{"min lag holds back young segments", func(in *CompactionInput) { in.Policy.MinCompactionLag = time.Minute }, 0, 200, 1, true},
		{"all at the checkpoint: nothing to clean", func(in *CompactionInput) { in.Checkpoint = 400 }, 400, 400, 0, false},
		{"max lag exceeded below the ratio", func(in *CompactionInput) {
			in.Checkpoint = 200
			in.Policy.MaxCompactionLag = time.Second
		}, 200, 400, 0.5, true},
		{"max lag not exceeded", func(in *CompactionInput) {
			in.Checkpoint = 200
			in.Policy.MaxCompactionLag = time.Hour
		}, 200, 400, 0.5, false},
		{"forced", func(in *CompactionInput) { in.Checkpoint, in.Force = 400, true }, 400, 400, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := CompactionInput{Segments: segs, Policy: pol, Now: now, StartOffset: 0, EndOffset: 450, Checkpoint: -1, UpperBound: -1}
			c.mod(&in)
			p := DecideCompaction(in)
			if p.FirstDirty != c.dirty || p.FirstUncleanable != c.un || p.Ratio != c.ratio || p.Clean != c.clean {
				t.Fatalf("got dirty %d uncleanable %d ratio %v clean %v; want %d %d %v %v (%+v)",
					p.FirstDirty, p.FirstUncleanable, p.Ratio, p.Clean, c.dirty, c.un, c.ratio, c.clean, p)
			}
		})
	}
}
