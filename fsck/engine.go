package fsck

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
)

// ErrDisagree is returned by Repair when the engine's segment recovery
// would cut a .log before the point fsck decided on (it found damage in
// bytes fsck's check calls valid), or calls damage synced that fsck placed
// past the recovery point. Nothing was changed in that segment: the
// engine's plan is checked before it is applied. Report it: one of the two
// checkers is wrong.
var ErrDisagree = errors.New("fsck: the engine's recovery and fsck's check disagree")

// recoverSegment runs the engine's own recovery (segment.PlanRecovery and
// segment.OpenRecovered, what the Log's Open runs) on the segment at base:
// it rebuilds both indexes from the .log and truncates the .log at the
// first entry it finds invalid. o are the engine's RecoverOptions, from
// the load plan (loadplan.Plan.RecoverOptions): damage leaving offsets
// below o.Synced out is refused by the engine itself, and batches reaching
// o.NextBase are damage. The plan is
// applied only if it keeps at least floor bytes (fsck's cut point, or the
// file's size when only the indexes are rebuilt), so the engine and fsck
// cannot disagree at the cost of data.
//
// Repair only runs this on segments whose every entry fsck read within
// its read limit, so the engine, which reads any entry the file holds,
// never allocates more than that.
func (r *repairer) recoverSegment(base, floor, logSize int64, o segment.RecoverOptions) (segment.RecoverResult, error) {
	interval := r.opts.IndexIntervalBytes
	if interval == 0 {
		interval = DefaultIndexIntervalBytes
	}
	opts := segment.Options{
		IndexIntervalBytes: interval,
		// Room for an entry per smallest possible entry (a legacy v0
		// message is 26 bytes): an index never fills up during the rebuild.
		MaxIndexBytes: int(max(12*(logSize/(record.LogOverhead+14)+2), 1024)),
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	plan, err := segment.PlanRecovery(r.fs, r.dir, base, opts, o)
	if errors.Is(err, record.ErrCorrupt) {
		return segment.RecoverResult{}, fmt.Errorf("%w: the engine refuses to cut synced data fsck placed past the recovery point: %w", ErrDisagree, err)
	}
	if err != nil {
		return segment.RecoverResult{}, err
	}
	if v := plan.Result().ValidBytes; v < floor {
		return segment.RecoverResult{}, fmt.Errorf("%w: it would cut %s at byte %d (%v), before byte %d where fsck's cut is",
			ErrDisagree, r.path(layout.FileName(base, layout.LogSuffix)), v, plan.Result().Reason, floor)
	}
	// Valid batches after the damage are kept, as the Log's recovery
	// keeps them: copied to a quarantine file before the cut, by the same
	// function the Log's Open recovers its segments with.
	seg, res, err := segment.OpenRecovered(r.fs, r.dir, plan, opts, false)
	if err != nil {
		return res, err
	}
	// The truncation is synced only when a quarantine was made; the
	// rebuilt indexes were made durable when recovery sealed them. Flush
	// makes both durable in every case.
	err = seg.Flush()
	return res, errors.Join(err, seg.Close())
}
