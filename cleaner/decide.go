package cleaner

import "time"

// Reason says which rule deleted a segment: the first, in Kafka's order of
// start offset, size, time, whose walk reached it.
type Reason uint8

const (
	// ByStartOffset: every record of the segment is below the log start
	// offset (DeleteRecords, or an earlier DeleteBefore).
	ByStartOffset Reason = iota + 1
	// ByTime: the segment's largest timestamp is older than retention.ms.
	ByTime
	// BySize: the log holds at least retention.bytes without it.
	BySize
)

// String names the rule.
func (r Reason) String() string {
	switch r {
	case ByStartOffset:
		return "log-start-offset"
	case ByTime:
		return "retention.ms"
	case BySize:
		return "retention.bytes"
	}
	return "none"
}

// Input is everything Decide looks at. Decide reads nothing else, so a
// table of Inputs pins retention's behaviour exactly.
type Input struct {
	// Segments is the log's view, oldest first, the active one last.
	Segments []Segment
	Policy   Policy
	Now      time.Time
	// StartOffset is the log's start offset, raised to a pending
	// DeleteRecords request if there is one.
	StartOffset int64
	// UpperBound is the offset nothing at or above which may be deleted
	// (a high watermark); a segment goes only if all of it is below. A
	// negative UpperBound means the log end.
	UpperBound int64
}

// Plan is Decide's answer: what a pass deletes and why it stops.
type Plan struct {
	// NewStart is the start offset after the pass; equal to the input's
	// start when nothing moves.
	NewStart int64
	// Delete is the prefix of segments that goes, Reasons one per entry.
	Delete  []Segment
	Reasons []Reason
	// Bytes is the total size of Delete.
	Bytes int64
	// RollFirst says the active segment is in Delete: roll it first, so
	// appends continue in a fresh segment.
	RollFirst bool
	// Pinned is the first segment that the time rule kept only because
	// its largest timestamp is in the future; it keeps itself and every
	// later segment, as in Kafka. Nil if none.
	Pinned *Segment
	// Clamped reports that the start offset asked for (DeleteRecords) was
	// past the upper bound and was lowered to it.
	Clamped bool
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Delete) == 0 }

// Decide applies Kafka's deleteOldSegments to a segment view: the start
// offset rule always, then the size and time rules unless the policy is
// compact-only, each from where the one before stopped. Only a prefix of whole segments is ever chosen; a segment
// goes only if all its offsets are below the upper bound; an empty last
// segment never goes. The new start is the offset after the last deleted
// segment, or the asked-for start if higher (a DeleteRecords inside a
// segment), never past the upper bound.
func Decide(in Input) Plan {
	segs := in.Segments
	plan := Plan{NewStart: in.StartOffset}
	if len(segs) == 0 {
		return plan
	}
	last := segs[len(segs)-1]
	upper := in.UpperBound
	if upper < 0 || upper > last.NextOffset {
		upper = last.NextOffset
	}
	if plan.NewStart > upper {
		plan.NewStart, plan.Clamped = upper, true
	}
	// end(i) is the offset after segment i: the next segment's base, as
	// Kafka uses, so gaps left by compaction count with the segment.
	end := func(i int) int64 {
		if i+1 < len(segs) {
			return segs[i+1].BaseOffset
		}
		return segs[i].NextOffset
	}
	deletable := func(i int) bool {
		s := segs[i]
		if end(i) > upper {
			return false
		}
		return !(i == len(segs)-1 && s.NextOffset == s.BaseOffset)
	}

	// The rules apply in Kafka's order (§8: start offset, size, time),
	// each going on from the segment the one before stopped at, as
	// deleteOldSegments calls them in turn on what is left: a segment the
	// time rule keeps does not keep an older one that the size or start
	// rule removes, nor stop the time rule after it.
	n, reasons, pinned := 0, make([]Reason, len(segs)), -1
	for i := range segs {
		if !deletable(i) || end(i) > plan.NewStart {
			break
		}
		reasons[i] = ByStartOffset
		n = i + 1
	}
	if in.Policy.deletes() && in.Policy.RetentionBytes >= 0 {
		var total int64
		for _, s := range segs[n:] {
			total += s.Size
		}
		diff := total - in.Policy.RetentionBytes
		for i := n; i < len(segs); i++ {
			if !deletable(i) || diff-segs[i].Size < 0 {
				break
			}
			diff -= segs[i].Size
			reasons[i] = BySize
			n = i + 1
		}
	}
	if in.Policy.deletes() && in.Policy.Retention >= 0 {
		now := in.Now.UnixMilli()
		limit := in.Policy.Retention.Milliseconds()
		for i := n; i < len(segs); i++ {
			ts := segs[i].LargestTimestamp
			if ts < 0 {
				ts = segs[i].Modified.UnixMilli()
				if segs[i].Modified.IsZero() {
					// Unknown (the Log's Stat failed): not old.
					ts = now
				}
			}
			if !deletable(i) || now-ts <= limit {
				if ts > now && deletable(i) {
					pinned = i
				}
				break
			}
			reasons[i] = ByTime
			n = i + 1
		}
	}
	if n == 0 {
		if pinned >= 0 {
			plan.Pinned = &segs[pinned]
		}
		return plan
	}
	plan.Delete, plan.Reasons = segs[:n:n], reasons[:n:n]
	for _, s := range plan.Delete {
		plan.Bytes += s.Size
	}
	plan.NewStart = max(plan.NewStart, end(n-1))
	plan.RollFirst = segs[n-1].Active
	if pinned >= 0 {
		plan.Pinned = &segs[pinned]
	}
	return plan
}

// QuietUntil says until when a plan that deletes nothing stays right for
// the same segments: appends cannot make the time rule fire earlier (they
// only add newer records after the first segment), so until the first
// segment's expiry a pass need not look again, as long as the start
// offset, the policy, the upper bound, a DeleteRecords request and, when
// retention.bytes applies, the log's end are unchanged. ok is false when
// no such time exists (the plan deletes, or the first segment has expired
// but is held by the upper bound).
func QuietUntil(in Input, plan Plan) (until time.Time, ok bool) {
	if !plan.Empty() || plan.NewStart != in.StartOffset || len(in.Segments) == 0 {
		return time.Time{}, false
	}
	if !in.Policy.deletes() || in.Policy.Retention < 0 {
		return farFuture, true
	}
	first := in.Segments[0]
	ts := first.LargestTimestamp
	if ts < 0 {
		if first.Modified.IsZero() {
			return time.Time{}, false // unknown age: look again next round
		}
		ts = first.Modified.UnixMilli()
	}
	// The time rule fires once now - ts > retention, in milliseconds.
	limit := in.Policy.Retention.Milliseconds()
	if ts > farFuture.UnixMilli()-limit-1 {
		return farFuture, true
	}
	until = time.UnixMilli(ts + limit + 1)
	if !until.After(in.Now) {
		return time.Time{}, false
	}
	return until, true
}

// farFuture stands for "never" in QuietUntil.
var farFuture = time.UnixMilli(1 << 60)
