// Package loadplan decides what loading a log directory does, from its
// listing and its checkpoints alone: which files are leftovers and
// orphans, which segments are trusted as they are, which are scanned,
// where damage counts as a torn tail rather than corruption, and which
// later segments leave the log after a cut. It writes nothing and reads
// nothing itself.
//
// It is the one copy of those rules. The Log's writable Open checks a Plan
// and applies it, the read-only view builds itself from one and applies
// nothing, and fsck --repair applies the same Plan's rules to the damage
// its deeper check finds. The checkpoints themselves are read by each
// caller (a writable Open refuses a checkpoint it cannot parse; fsck
// counts it as "everything synced" and reports it), and handed in as a
// State.
package loadplan

import (
	"math"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
)

// State is what a directory's checkpoints and clean-shutdown marker say
// about the last shutdown.
type State struct {
	// Clean says every batch was synced: a clean-shutdown marker (or, for
	// fsck, a recovery point that cannot be read, which counts the same).
	Clean bool
	// OwnMarker says Clean comes from the directory's own marker file,
	// which a writable load removes before its first change.
	OwnMarker bool
	// RecoveryPoint is the offset below which every batch was synced,
	// when not Clean.
	RecoveryPoint int64
	// LogStart is the checkpointed log start offset, when HaveLogStart.
	LogStart     int64
	HaveLogStart bool
}

// Plan is what loading a directory does, made by New.
type Plan struct {
	// Names is the directory listing the plan was made from.
	Names []string
	// State is what the checkpoints and the marker say.
	State State
	// Leftovers are the files an interrupted operation left: .deleted,
	// .cleaned and checkpoint .tmp files to delete, .swap files to delete
	// or complete (layout.PlanLeftovers).
	Leftovers layout.Plan
	// Orphans are index files without a .log, to delete.
	Orphans []string
	// Files says which files each segment has; Bases are the segments'
	// base offsets (those with a .log), in order.
	Files map[int64]layout.Files
	Bases []int64
	// Synced is the offset below which every batch was synced: the
	// recovery point, or MaxInt64 after a clean shutdown. Damage below it
	// is corruption, never cut; at or above it, a torn tail.
	Synced int64
	// ScanFrom is the first segment recovery scans: the one holding the
	// recovery point after a crash (0 if none does), len(Bases) after a
	// clean shutdown. The segments before it are trusted as they are when
	// their indexes are there.
	ScanFrom int
}

// New makes the plan for a directory listing names whose checkpoints and
// marker say st.
func New(names []string, st State) *Plan {
	p := &Plan{
		Names:     names,
		State:     st,
		Leftovers: layout.PlanLeftovers(names),
		Orphans:   layout.Orphans(names),
	}
	p.Files, p.Bases = layout.SegmentFiles(names)
	// After a clean shutdown everything was synced and nothing is
	// scanned; after a crash, everything from the segment holding the
	// recovery point on.
	p.Synced, p.ScanFrom = math.MaxInt64, len(p.Bases)
	if !st.Clean {
		p.Synced, p.ScanFrom = st.RecoveryPoint, 0
		for i, b := range p.Bases {
			if b <= st.RecoveryPoint {
				p.ScanFrom = i
			}
		}
	}
	return p
}

// Index returns the position of the segment at base in Bases.
func (p *Plan) Index(base int64) (int, bool) {
	for i, b := range p.Bases {
		if b == base {
			return i, true
		}
	}
	return -1, false
}

// RecoverOptions are the segment recovery options of the i-th segment:
// damage that would leave out offsets below Synced is refused as
// corruption, and a batch reaching the next segment's base is damage.
func (p *Plan) RecoverOptions(i int) segment.RecoverOptions {
	o := segment.RecoverOptions{Synced: p.Synced}
	if i+1 < len(p.Bases) {
		o.NextBase = p.Bases[i+1]
	}
	return o
}

// Torn reports whether damage after which the log would resume at offset
// nextBefore (the offset after the last valid batch before it) lies in
// data that was never synced: a torn tail, which recovery cuts. Below
// Synced it is corruption, which only an explicit repair may cut.
func (p *Plan) Torn(nextBefore int64) bool { return nextBefore >= p.Synced }

// Trusted reports whether the i-th segment is taken as it is, unscanned:
// it lies wholly below the recovery point (or the shutdown was clean) and
// its index files are there, as Kafka trusts it.
func (p *Plan) Trusted(i int) bool {
	const both = layout.HasIndex | layout.HasTimeIndex
	return i < p.ScanFrom && p.Files[p.Bases[i]]&both == both
}

// CheckFirst reports whether the i-th segment is scanned before anything
// changes: it needs a scan and holds synced data.
func (p *Plan) CheckFirst(i int) bool {
	if i < p.ScanFrom {
		return !p.Trusted(i)
	}
	return p.Bases[i] < p.Synced
}

// LostBelowStart reports whether what the i-th segment lost (a cut, or a
// gap to the next segment) lies at or below the log start: only records
// already deleted were lost, so the later segments stay (RestartAt past
// the end creates its new segment before it checkpoints the start, then
// removes the old ones, so a crash can leave both).
func (p *Plan) LostBelowStart(i int) bool {
	return i+1 < len(p.Bases) && p.State.HaveLogStart && p.Bases[i+1] <= p.State.LogStart
}

// SetsAside reports whether the segments after the i-th leave the log
// because it lost bytes (lost: recovery cut it, or it ends before the next
// segment begins): Kafka's rule, as bytes lost in one segment make the
// later ones unreachable; unless what it lost lies below the log start.
func (p *Plan) SetsAside(i int, lost bool) bool {
	return lost && !p.LostBelowStart(i)
}

// RemovesMarker reports whether loading removes the clean-shutdown
// marker: the directory's own, after a clean shutdown. It must be gone,
// durably, before the first file changes: otherwise a crash later would
// skip the recovery it needs.
func (p *Plan) RemovesMarker() bool { return p.State.Clean && p.State.OwnMarker }
