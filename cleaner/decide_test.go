package cleaner

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// now is the fake clock every scenario runs at.
var now = time.UnixMilli(1_800_000_000_000)

const hour = int64(time.Hour / time.Millisecond)

// seg is a sealed segment of 100 offsets and 1,000 bytes at base whose
// newest record is age hours old.
func seg(base int64, ageHours int64) Segment {
	return Segment{BaseOffset: base, NextOffset: base + 100, Size: 1000, LargestTimestamp: now.UnixMilli() - ageHours*hour}
}

func active(s Segment) Segment { s.Active = true; return s }

func emptyActive(base int64) Segment {
	return Segment{BaseOffset: base, NextOffset: base, LargestTimestamp: -1, Modified: now, Active: true}
}

// fourSegments are 72, 48, 24 hours old and an empty active segment.
func fourSegments() []Segment {
	return []Segment{seg(0, 72), seg(100, 48), seg(200, 24), emptyActive(300)}
}

func policy(retention time.Duration, bytes int64) Policy {
	p := DefaultPolicy()
	p.Retention, p.RetentionBytes = retention, bytes
	return p
}

func TestDecide(t *testing.T) {
	h := time.Hour
	cases := []struct {
		name      string
		segs      []Segment
		policy    Policy
		start     int64
		upper     int64
		wantN     int
		wantStart int64
		reasons   []Reason
		roll      bool
		pinned    int64 // base of the pinned segment, -1 for none
		clamped   bool
	}{
		{name: "empty log", segs: nil, policy: policy(h, 0), upper: -1, wantStart: 0, pinned: -1},
		{name: "only an empty active segment", segs: []Segment{emptyActive(0)}, policy: policy(0, 0), upper: -1, pinned: -1},
		{name: "nothing expired", segs: fourSegments(), policy: DefaultPolicy(), upper: -1, pinned: -1},
		{name: "time", segs: fourSegments(), policy: policy(36*h, -1), upper: -1,
			wantN: 2, wantStart: 200, reasons: []Reason{ByTime, ByTime}, pinned: -1},
		{name: "time boundary is strict", segs: fourSegments(), policy: policy(48*h, -1), upper: -1,
			wantN: 1, wantStart: 100, reasons: []Reason{ByTime}, pinned: -1},
		{name: "forever", segs: fourSegments(), policy: policy(Forever, -1), upper: -1, pinned: -1},
		{name: "size", segs: fourSegments(), policy: policy(Forever, 1500), upper: -1,
			wantN: 1, wantStart: 100, reasons: []Reason{BySize}, pinned: -1},
		{name: "size keeps at least retention.bytes", segs: fourSegments(), policy: policy(Forever, 1000), upper: -1,
			wantN: 2, wantStart: 200, reasons: []Reason{BySize, BySize}, pinned: -1},
		{name: "size limit smaller than one segment", segs: fourSegments(), policy: policy(Forever, 10), upper: -1,
			wantN: 2, wantStart: 200, reasons: []Reason{BySize, BySize}, pinned: -1},
		{name: "size limit zero never deletes the empty active segment", segs: fourSegments(), policy: policy(Forever, 0), upper: -1,
			wantN: 3, wantStart: 300, reasons: []Reason{BySize, BySize, BySize}, pinned: -1},
		{name: "both: time reaches further", segs: fourSegments(), policy: policy(12*h, 2500), upper: -1,
			wantN: 3, wantStart: 300, reasons: []Reason{ByTime, ByTime, ByTime}, pinned: -1},
		{name: "both: size reaches further", segs: fourSegments(), policy: policy(60*h, 1000), upper: -1,
			wantN: 2, wantStart: 200, reasons: []Reason{BySize, BySize}, pinned: -1},
		// Kafka applies the rules in turn (start offset, size, time), each
		// on what the one before left: a young segment that size or the
		// start removes does not shield the expired ones after it.
		{name: "time goes on after what size removed", segs: []Segment{seg(0, 1), seg(100, 72), seg(200, 72), seg(300, 1), emptyActive(400)},
			policy: policy(48*h, 3000), upper: -1,
			wantN: 3, wantStart: 300, reasons: []Reason{BySize, ByTime, ByTime}, pinned: -1},
		{name: "time goes on after what the start offset removed", segs: []Segment{seg(0, 1), seg(100, 72), seg(200, 1), emptyActive(300)},
			policy: policy(48*h, -1), start: 100, upper: -1,
			wantN: 2, wantStart: 200, reasons: []Reason{ByStartOffset, ByTime}, pinned: -1},
		{name: "size counts only what the start offset left", segs: fourSegments(), policy: policy(Forever, 1500), start: 100, upper: -1,
			wantN: 1, wantStart: 100, reasons: []Reason{ByStartOffset}, pinned: -1},
		{name: "time after size stops at a future timestamp and reports it", segs: []Segment{seg(0, 1), seg(100, 72), seg(200, -5), seg(300, 72), emptyActive(400)},
			policy: policy(48*h, 3000), upper: -1,
			wantN: 2, wantStart: 200, reasons: []Reason{BySize, ByTime}, pinned: 200},
		{name: "start offset", segs: fourSegments(), policy: DefaultPolicy(), start: 200, upper: -1,
			wantN: 2, wantStart: 200, reasons: []Reason{ByStartOffset, ByStartOffset}, pinned: -1},
		{name: "start offset inside a segment", segs: fourSegments(), policy: DefaultPolicy(), start: 150, upper: -1,
			wantN: 1, wantStart: 150, reasons: []Reason{ByStartOffset}, pinned: -1},
		{name: "start offset under compact only", segs: fourSegments(), policy: Policy{CleanupPolicy: Compact, Retention: 0, RetentionBytes: 0, MaxCompactionLag: 1},
			start: 100, upper: -1, wantN: 1, wantStart: 100, reasons: []Reason{ByStartOffset}, pinned: -1},
		{name: "compact,delete applies time", segs: fourSegments(), policy: func() Policy { p := policy(36*h, -1); p.CleanupPolicy = CompactDelete; return p }(),
			upper: -1, wantN: 2, wantStart: 200, reasons: []Reason{ByTime, ByTime}, pinned: -1},
		{name: "start offset past the upper bound is clamped", segs: fourSegments(), policy: DefaultPolicy(), start: 250, upper: 150,
			wantN: 1, wantStart: 150, reasons: []Reason{ByStartOffset}, pinned: -1, clamped: true},
		{name: "one active segment within retention", segs: []Segment{active(seg(0, 1))}, policy: policy(2*h, -1), upper: -1, pinned: -1},
		{name: "active segment breaching is rolled and deleted", segs: []Segment{seg(0, 72), active(seg(100, 48))}, policy: policy(h, -1), upper: -1,
			wantN: 2, wantStart: 200, reasons: []Reason{ByTime, ByTime}, roll: true, pinned: -1},
		{name: "active segment breaching but not all below the high watermark", segs: []Segment{seg(0, 72), active(seg(100, 48))}, policy: policy(h, -1), upper: 199,
			wantN: 1, wantStart: 100, reasons: []Reason{ByTime}, pinned: -1},
		{name: "upper bound stops the prefix", segs: fourSegments(), policy: policy(h, 0), upper: 150,
			wantN: 1, wantStart: 100, reasons: []Reason{BySize}, pinned: -1},
		{name: "upper bound at a boundary", segs: fourSegments(), policy: policy(h, -1), upper: 200,
			wantN: 2, wantStart: 200, reasons: []Reason{ByTime, ByTime}, pinned: -1},
		{name: "future timestamp pins itself and the later segments",
			segs:   []Segment{seg(0, 72), seg(100, -5), seg(200, 48), emptyActive(300)},
			policy: policy(h, -1), upper: -1, wantN: 1, wantStart: 100, reasons: []Reason{ByTime}, pinned: 100},
		{name: "future timestamp in the first segment",
			segs:   []Segment{seg(0, -1), seg(100, 48), emptyActive(200)},
			policy: policy(h, -1), upper: -1, pinned: 0},
		{name: "size still deletes a future-dated segment, then time goes on", segs: []Segment{seg(0, -5), seg(100, 48), emptyActive(200)},
			policy: policy(h, 1000), upper: -1, wantN: 2, wantStart: 200, reasons: []Reason{BySize, ByTime}, pinned: -1},
		{name: "no timestamps: the modification time counts",
			segs:   []Segment{{BaseOffset: 0, NextOffset: 10, Size: 10, LargestTimestamp: -1, Modified: now.Add(-3 * h)}, emptyActive(10)},
			policy: policy(h, -1), upper: -1, wantN: 1, wantStart: 10, reasons: []Reason{ByTime}, pinned: -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Segments: slices.Clone(c.segs), Policy: c.policy, Now: now, StartOffset: c.start, UpperBound: c.upper}
			p := Decide(in)
			if len(p.Delete) != c.wantN || len(p.Reasons) != c.wantN {
				t.Fatalf("deletes %d segments (%d reasons), want %d", len(p.Delete), len(p.Reasons), c.wantN)
			}
			wantStart := c.wantStart
			if c.wantN == 0 && !c.clamped {
				wantStart = c.start
			}
			if p.NewStart != wantStart {
				t.Errorf("new start %d, want %d", p.NewStart, wantStart)
			}
			for i, s := range p.Delete {
				if s != c.segs[i] {
					t.Errorf("deleted %d is %+v, not the prefix's %+v", i, s, c.segs[i])
				}
			}
			if c.reasons != nil && !slices.Equal(p.Reasons, c.reasons) {
				t.Errorf("reasons %v, want %v", p.Reasons, c.reasons)
			}
			var bytes int64
			for _, s := range c.segs[:c.wantN] {
				bytes += s.Size
			}
			if p.Bytes != bytes {
				t.Errorf("bytes %d, want %d", p.Bytes, bytes)
			}
			if p.RollFirst != c.roll {
				t.Errorf("roll first %v, want %v", p.RollFirst, c.roll)
			}
			pinned := int64(-1)
			if p.Pinned != nil {
				pinned = p.Pinned.BaseOffset
			}
			if pinned != c.pinned {
				t.Errorf("pinned %d, want %d", pinned, c.pinned)
			}
			if p.Clamped != c.clamped {
				t.Errorf("clamped %v, want %v", p.Clamped, c.clamped)
			}
			upper := c.upper
			if upper < 0 && len(c.segs) > 0 {
				upper = c.segs[len(c.segs)-1].NextOffset
			}
			if len(c.segs) > 0 && p.NewStart > upper {
				t.Errorf("new start %d past the upper bound %d", p.NewStart, upper)
			}
		})
	}
}

// TestDecideNeverPastUpperBound checks the invariants on many random views.
func TestDecideInvariants(t *testing.T) {
	for i := range 2000 {
		n := i%7 + 1
		segs := make([]Segment, n)
		base := int64(0)
		for j := range segs {
			size := int64((i*31+j*17)%5) * 100
			cnt := size / 10
			segs[j] = Segment{BaseOffset: base, NextOffset: base + cnt, Size: size,
				LargestTimestamp: now.UnixMilli() - int64((i*7+j*13)%11-2)*hour}
			base += cnt
		}
		segs[n-1].Active = true
		upper := int64(i%13*10) - 1
		p := Decide(Input{Segments: segs, Policy: policy(time.Duration(i%6)*time.Hour, int64(i%9)*100-100), Now: now, StartOffset: int64(i % 40), UpperBound: upper})
		if upper < 0 || upper > base {
			upper = base
		}
		label := fmt.Sprintf("case %d: %+v → %+v", i, segs, p)
		if p.NewStart > max(upper, 0) || p.NewStart < min(int64(i%40), upper) {
			t.Fatalf("%s: start %d out of range", label, p.NewStart)
		}
		for k, s := range p.Delete {
			end := s.NextOffset
			if k+1 < n {
				end = segs[k+1].BaseOffset
			}
			if end > upper || end > p.NewStart {
				t.Fatalf("%s: segment %d ends at %d past the bound %d or the new start", label, k, end, upper)
			}
		}
		if last := segs[n-1]; len(p.Delete) == n && last.NextOffset == last.BaseOffset {
			t.Fatalf("%s: deleted the empty last segment", label)
		}
	}
}

// TestQuietUntilIsSound: whenever QuietUntil promises quiet, Decide on the
// same segments deletes nothing at any time before the promise ends.
func TestQuietUntilIsSound(t *testing.T) {
	promised := 0
	for i := range 3000 {
		n := i%5 + 1
		segs := make([]Segment, n)
		base := int64(0)
		for j := range segs {
			cnt := int64((i*31+j*17)%4) * 10
			segs[j] = Segment{BaseOffset: base, NextOffset: base + cnt, Size: cnt * 10,
				LargestTimestamp: now.UnixMilli() - int64((i*7+j*13)%11-2)*hour}
			if (i+j)%13 == 0 {
				segs[j].LargestTimestamp, segs[j].Modified = -1, now.Add(-time.Duration((i+j)%5)*time.Hour)
			}
			base += cnt
		}
		segs[n-1].Active = true
		p := policy(time.Duration(i%7)*time.Hour, -1)
		if i%11 == 0 {
			p.Retention = Forever
		}
		in := Input{Segments: segs, Policy: p, Now: now, StartOffset: 0, UpperBound: int64(i%9*10) - 1}
		until, ok := QuietUntil(in, Decide(in))
		if !ok {
			if Decide(in).Empty() && p.Retention == Forever {
				t.Fatalf("case %d: no promise under retention forever", i)
			}
			continue
		}
		promised++
		for _, at := range []time.Time{now, until.Add(-time.Millisecond), now.Add(until.Sub(now) / 2)} {
			in.Now = at
			if at.Before(until) && !Decide(in).Empty() {
				t.Fatalf("case %d: promised quiet until %v, but at %v Decide deletes %d", i, until, at, len(Decide(in).Delete))
			}
		}
	}
	if promised < 1000 {
		t.Fatalf("only %d promises in 3000 cases: the test checks little", promised)
	}
}
