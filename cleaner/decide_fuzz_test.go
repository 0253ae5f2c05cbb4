package cleaner

import (
	"testing"
	"time"
)

// kafkaPlan is what Kafka's UnifiedLog.deleteOldSegments deletes from the
// same view, transcribed rule by rule from §8 of the reference (and
// deletableSegments) without Decide's structure, so the two are compared.
type kafkaPlan struct {
	deleted  int
	newStart int64
	reasons  []Reason
	pinned   int // index of the segment whose future timestamp stopped the time rule, or -1
}

// kafkaDeleteOldSegments applies the three rules as Kafka calls them, each
// a fresh deletableSegments walk over what the one before left. The one
// difference from Kafka is seglog's, documented in docs/retention.md: a
// start offset at the log end takes the non-empty active segment too
// (Kafka keeps it, unreadable, until a later roll).
func kafkaDeleteOldSegments(in Input) kafkaPlan {
	segs := in.Segments
	plan := kafkaPlan{newStart: in.StartOffset, pinned: -1}
	if len(segs) == 0 {
		return plan
	}
	leo := segs[len(segs)-1].NextOffset
	hw := in.UpperBound
	if hw < 0 || hw > leo {
		hw = leo
	}
	// Kafka answers a DeleteRecords past the high watermark with
	// OFFSET_OUT_OF_RANGE; the cleaner's request is clamped to it.
	plan.newStart = min(plan.newStart, hw)
	upperBoundOffset := func(i int) int64 {
		if i+1 < len(segs) {
			return segs[i+1].BaseOffset
		}
		return leo
	}
	first := 0
	// deletableSegments(predicate), then the deletion: the start moves to
	// the base of the segment after the last one deleted.
	deleteOld := func(reason Reason, predicate func(i int) bool) (stoppedAt int) {
		for i := first; i < len(segs); i++ {
			isLastSegmentAndEmpty := i == len(segs)-1 && segs[i].Size == 0
			if !(hw >= upperBoundOffset(i) && predicate(i) && !isLastSegmentAndEmpty) {
				return i
			}
			plan.reasons = append(plan.reasons, reason)
			first = i + 1
			plan.newStart = max(plan.newStart, upperBoundOffset(i))
		}
		return len(segs)
	}
	// deleteLogStartOffsetBreachedSegments: nextSegmentOpt.exists(_.baseOffset
	// <= logStartOffset), and for the last segment (seglog) its end.
	deleteOld(ByStartOffset, func(i int) bool { return upperBoundOffset(i) <= plan.newStart })
	if in.Policy.CleanupPolicy != Compact {
		// deleteRetentionSizeBreachedSegments.
		if rb := in.Policy.RetentionBytes; rb >= 0 {
			var size int64
			for _, s := range segs[first:] {
				size += s.Size
			}
			if size >= rb {
				diff := size - rb
				deleteOld(BySize, func(i int) bool {
					if diff-segs[i].Size >= 0 {
						diff -= segs[i].Size
						return true
					}
					return false
				})
			}
		}
		// deleteRetentionMsBreachedSegments: startMs - largestTimestamp >
		// retentionMs, the largest timestamp falling back to the file's
		// modification time (unknown: not old).
		if rm := in.Policy.Retention; rm >= 0 {
			nowMs := in.Now.UnixMilli()
			largest := func(i int) int64 {
				switch {
				case segs[i].LargestTimestamp >= 0:
					return segs[i].LargestTimestamp
				case segs[i].Modified.IsZero():
					return nowMs
				}
				return segs[i].Modified.UnixMilli()
			}
			at := deleteOld(ByTime, func(i int) bool { return nowMs-largest(i) > rm.Milliseconds() })
			if at < len(segs) && largest(at) > nowMs && hw >= upperBoundOffset(at) && !(at == len(segs)-1 && segs[at].Size == 0) {
				plan.pinned = at
			}
		}
	}
	plan.deleted = first
	return plan
}

// FuzzDecide compares Decide with the transcription of Kafka's rules on
// arbitrary segment views, policies, start offsets and upper bounds, and
// checks the plan's own bookkeeping.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{3, 200, 10, 5, 100, 30, 0, 0, 0}, int64(36*hour), int64(-1), int64(0), int64(-1), uint8(0))
	f.Add([]byte{3, 10, 72, 3, 10, 250, 3, 10, 1, 0, 0, 0}, int64(hour), int64(25), int64(0), int64(-1), uint8(2))
	f.Add([]byte{9, 9, 9, 9, 9, 9}, int64(-1), int64(0), int64(20), int64(15), uint8(1))
	f.Add([]byte{1, 1, 255, 4, 2, 100}, int64(0), int64(-1), int64(5), int64(-1), uint8(0))
	f.Fuzz(func(t *testing.T, view []byte, retentionMs, retentionBytes, start, upper int64, cleanup uint8) {
		// Three bytes a segment: its offsets (0-15), its size in tens of
		// bytes per offset (an empty segment has size 0) and the age of
		// its newest record in hours (128 and up: in the future; 255: no
		// timestamp, aged by a modification time, itself unknown when
		// the count is odd).
		var segs []Segment
		base := int64(0)
		for i := 0; i+2 < len(view) && len(segs) < 12; i += 3 {
			n := int64(view[i] % 16)
			s := Segment{BaseOffset: base, NextOffset: base + n, Size: n * 10 * int64(view[i+1]%8+1)}
			switch age := int64(view[i+2]); {
			case age == 255:
				s.LargestTimestamp = -1
				if n%2 == 0 {
					s.Modified = now.Add(-time.Duration(view[i+1]) * time.Hour)
				}
			case age >= 128:
				s.LargestTimestamp = now.UnixMilli() + (age-127)*hour
			default:
				s.LargestTimestamp = now.UnixMilli() - age*hour
			}
			// Compaction leaves gaps: a segment may end before the next
			// one's base.
			base += n + int64(view[i+1]/128)
			segs = append(segs, s)
		}
		if len(segs) > 0 {
			segs[len(segs)-1].Active = true
		}
		p := DefaultPolicy()
		p.CleanupPolicy = CleanupPolicy(cleanup % 3)
		p.Retention = time.Duration(max(retentionMs%(1000*hour), -1)) * time.Millisecond
		p.RetentionBytes = max(retentionBytes%2000, -1)
		in := Input{Segments: segs, Policy: p, Now: now, StartOffset: max(start%200, 0), UpperBound: upper % 200}
		got, want := Decide(in), kafkaDeleteOldSegments(in)

		if len(got.Delete) != want.deleted || got.NewStart != want.newStart {
			t.Fatalf("%+v\nDecide deletes %d segments, start %d; Kafka %d, start %d", in, len(got.Delete), got.NewStart, want.deleted, want.newStart)
		}
		for i, r := range got.Reasons {
			if r != want.reasons[i] {
				t.Fatalf("%+v\nsegment %d deleted by %v, Kafka by %v", in, i, r, want.reasons[i])
			}
		}
		switch {
		case want.pinned < 0 && got.Pinned != nil:
			t.Fatalf("%+v\npinned by %d, Kafka by none", in, got.Pinned.BaseOffset)
		case want.pinned >= 0 && (got.Pinned == nil || got.Pinned.BaseOffset != segs[want.pinned].BaseOffset):
			t.Fatalf("%+v\npinned by %v, Kafka by segment %d", in, got.Pinned, segs[want.pinned].BaseOffset)
		}
		var bytes int64
		for i, s := range got.Delete {
			if s != segs[i] {
				t.Fatalf("%+v\ndeletes %+v as segment %d, not a prefix", in, s, i)
			}
			bytes += s.Size
		}
		if got.Bytes != bytes || len(got.Reasons) != len(got.Delete) {
			t.Fatalf("%+v\nplan %+v: bytes or reasons do not match its segments", in, got)
		}
		if rolls := len(got.Delete) > 0 && got.Delete[len(got.Delete)-1].Active; got.RollFirst != rolls {
			t.Fatalf("%+v\nRollFirst %v, the active segment deleted: %v", in, got.RollFirst, rolls)
		}
		if len(segs) > 0 {
			hw := segs[len(segs)-1].NextOffset
			if in.UpperBound >= 0 && in.UpperBound < hw {
				hw = in.UpperBound
			}
			if got.Clamped != (in.StartOffset > hw) {
				t.Fatalf("%+v\nClamped %v with the start %d and the bound %d", in, got.Clamped, in.StartOffset, hw)
			}
		}
	})
}
