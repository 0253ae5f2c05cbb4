package seglog

import (
	"errors"
	"fmt"

	"github.com/seglog/seglog/internal/loadplan"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
)

// loadPlan is what loading a log directory does (loadplan.Plan: decided
// from the directory's listing and checkpoints alone, writing nothing),
// with the recovery plans the check made. The rules are loadplan's, one
// copy for every load:
//
//   - a writable Open checks it (checkLoad, which reads and still writes
//     nothing) and then applies it (applyLoad): leftovers resolved, orphan
//     indexes deleted, segments recovered, later segments set aside after
//     a cut, after the clean-shutdown marker is removed (first, durably);
//   - a read-only open (readOnly.load) builds its view from it and applies
//     nothing: reading never writes. What it cannot see without a change
//     (a swap to complete) it refuses;
//   - fsck --repair is driven by its own deeper check of the directory
//     and applies a loadplan.Plan's rules (Torn, RecoverOptions,
//     SetsAside) with the same functions: layout.Resolve,
//     segment.PlanRecovery and OpenRecovered, SetAsideSegment.
//
// The recovery of segments that hold no synced data is decided as it is
// applied: a segment's recovery plan holds its rebuilt index entries, and
// after a crash that left no recovery point every segment is one of them,
// so planning them all first would hold every segment's index in memory at
// once. Which later segments are set aside depends on those scans
// (SetsAside).
type loadPlan struct {
	*loadplan.Plan
	// st is the state the plan was made from, with where the log start
	// was read (for LogStartError).
	st dirState
	// checked holds the recovery plans checkLoad made, by base offset:
	// those of the segments holding synced data that need a scan, made
	// before anything changes so that damage there fails Open with the
	// directory as it was.
	checked map[int64]*segment.RecoveryPlan
}

// planLoad makes the plan for a directory listing names whose checkpoints
// and marker say st.
func planLoad(names []string, st dirState) *loadPlan {
	return &loadPlan{Plan: loadplan.New(names, st.State), st: st}
}

// endsShort reports whether seg ends before nextBase, the next segment's
// base, where a log that was never compacted has no gap (gapsAllowed):
// the same loss as a cut.
func (l *Log) endsShort(seg *segment.Segment, nextBase int64) bool {
	return seg.NextOffset() < nextBase && !l.gapsAllowed()
}

// planDir lists the directory and reads its state for a writable load.
func (l *Log) planDir() (*loadPlan, error) {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, err
	}
	st, err := l.dirState(names)
	if err != nil {
		return nil, err
	}
	return planLoad(names, st), nil
}

// load reads the directory into l: plan, check, apply. It checks before it
// changes anything: the directory is listed, the checkpoints read and every
// segment that holds synced data and needs a scan is scanned
// (segment.PlanRecovery) before the first file is removed, truncated or
// rebuilt, so damage below the recovery point fails Open with the
// directory as it was. Only an interrupted swap is completed first, as
// Kafka's loader does, because the check must look at the segments the
// log will have. Every change to the directory is made durable (SyncDir)
// before Open returns, so no later Sync can acknowledge data that a power
// loss would put behind a deleted segment brought back.
//
// The directory is listed again under the lock: checkLogDir's listing was
// taken before it, while another Log may still have been changing it.
func (l *Log) load() error {
	p, err := l.planDir()
	if err != nil {
		return err
	}
	dirChanged := false
	if len(p.Leftovers.Swaps) > 0 {
		if err := layout.Apply(l.fs, l.dir, p.Names, p.Leftovers, segment.LogEnd); err != nil {
			return err
		}
		names, err := l.fs.List(l.dir)
		if err != nil {
			return err
		}
		// The plan is made again for the segments the swap left; the
		// checkpoints are those read before it, and the leftovers have
		// been resolved.
		p = planLoad(names, p.st)
		p.Leftovers, dirChanged = layout.Plan{}, true
	}
	if err := l.checkLoad(p); err != nil {
		return err
	}
	return l.applyLoad(p, dirChanged)
}

// checkLoad refuses, before anything changes, a log-start checkpoint
// beyond what the segments can hold, and damage in what holds synced data;
// it records the recovery plans its scans made in p.checked. It writes
// nothing.
func (l *Log) checkLoad(p *loadPlan) error {
	if err := l.checkLogStart(p.st, p.Bases); err != nil {
		return err
	}
	p.checked = make(map[int64]*segment.RecoveryPlan)
	for i, base := range p.Bases {
		if !p.CheckFirst(i) {
			continue
		}
		rp, err := segment.PlanRecovery(l.fs, l.dir, base, l.segmentOptions(), p.RecoverOptions(i))
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				return fmt.Errorf("seglog: open %s: nothing was changed (run seglog fsck): %w", l.dir, err)
			}
			return err
		}
		p.checked[base] = rp
	}
	return nil
}

// applyLoad applies a checked plan: leftovers, orphans, recovery, then
// makes it all durable. dirChanged says whether the directory was changed
// already (a swap completed).
func (l *Log) applyLoad(p *loadPlan, dirChanged bool) error {
	if p.RemovesMarker() {
		// The marker vouches for the files exactly as Close left them, and
		// the first write below changes them: opening the active segment
		// grows its indexes back to their preallocated size, which a
		// trusting open would read as an index full of entries. So it goes
		// first, durably; a crash from here on recovers from the recovery
		// point Close wrote, which scans only the last segment.
		if err := l.fs.Remove(l.path(CleanShutdownFile)); err != nil && !isNotExist(err) {
			return err
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
		dirChanged = false
	}
	if !p.Leftovers.Empty() {
		if err := layout.Apply(l.fs, l.dir, p.Names, p.Leftovers, segment.LogEnd); err != nil {
			return err
		}
		dirChanged = true
	}
	for _, n := range p.Orphans {
		l.logger.Warn("seglog: deleting orphan index file", "file", l.path(n))
		if err := l.fs.Remove(l.path(n)); err != nil && !isNotExist(err) {
			return err
		}
		dirChanged = true
	}
	bases := p.Bases
	for i := 0; i < len(bases); i++ {
		base := bases[i]
		last := i == len(bases)-1
		if p.Trusted(i) {
			seg, err := segment.Open(l.fs, l.dir, base, last, l.segmentOptions())
			if err != nil {
				return err
			}
			l.segs.tree.ReplaceOrInsert(segItem{base: base, seg: seg})
			l.segs.active = seg
			continue
		}
		seg, truncated, err := l.recoverSegment(base, p.checked[base], p.RecoverOptions(i), last)
		if err != nil {
			return err
		}
		l.segs.tree.ReplaceOrInsert(segItem{base: base, seg: seg})
		l.segs.active = seg
		if !last && p.SetsAside(i, truncated || l.endsShort(seg, bases[i+1])) {
			// Kafka's rule: bytes lost in one segment make every later
			// segment unreachable, so Kafka deletes them. They lie above
			// the recovery point (the scan refused damage below it). Here
			// they leave the log without losing a byte: one holding any
			// valid batch is renamed to a quarantine file, only one
			// holding none is deleted.
			for _, later := range bases[i+1:] {
				q, err := segment.SetAsideSegment(l.fs, l.dir, later)
				if err != nil {
					return err
				}
				if q != nil {
					l.reportQuarantine(q)
				} else {
					l.logger.Warn("seglog: deleted a segment after a truncated one: it held no valid batch",
						"dir", l.dir, "base", later)
				}
			}
			dirChanged = true
			bases = bases[:i+1]
			last = true
		}
		if last {
			if err := seg.Unseal(); err != nil {
				return err
			}
		}
	}

	st := p.st
	if l.segs.active != nil {
		// checkLogStart refused a start beyond what the segments hold
		// before anything changed; recovery's cut of a torn tail, or a
		// later segment set aside, can still leave the end below it.
		// Kafka deletes every segment then; the segments stay, and the
		// inconsistency is reported.
		if err := st.logStartBeyond(l.dir, l.segs.active.NextOffset()); err != nil {
			if dirChanged {
				if serr := l.fs.SyncDir(l.dir); serr != nil {
					return errors.Join(err, serr)
				}
			}
			return err
		}
	}
	if l.segs.active == nil {
		// No segments: start empty at the log start.
		start := int64(0)
		if st.HaveLogStart {
			start = st.LogStart
		}
		seg, err := l.createSegment(start)
		if err != nil {
			return err
		}
		l.segs.tree.ReplaceOrInsert(segItem{base: start, seg: seg})
		l.segs.active = seg
		dirChanged = true
	}
	first, _ := l.segs.tree.Min()
	start := first.base
	if st.HaveLogStart && st.LogStart > start {
		start = st.LogStart
	}
	l.start.Store(start)
	l.end.Store(l.segs.active.NextOffset())
	end := l.end.Load()
	l.mu.next = end

	if st.Clean {
		l.mu.recoveryPoint = end
	} else {
		l.mu.recoveryPoint = min(st.RecoveryPoint, end)
	}
	if dirChanged {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	return nil
}

// recoverSegment opens the segment at base and runs recovery on it: the
// plan made by the check when there is one, else a scan now (the segment
// holds no synced data), carried out by segment.OpenRecovered (valid
// batches after damage are first copied to a quarantine file, durably, and
// reported here; then the plan is applied). The last segment is left
// active. It reports whether bytes were cut.
func (l *Log) recoverSegment(base int64, p *segment.RecoveryPlan, o segment.RecoverOptions, last bool) (*segment.Segment, bool, error) {
	l.recovered++
	if p == nil {
		var err error
		if p, err = segment.PlanRecovery(l.fs, l.dir, base, l.segmentOptions(), o); err != nil {
			return nil, false, err
		}
	}
	// Recovery changes only what the scan finds wrong
	// (segment.ApplyRecovery): an intact segment costs no write and no
	// sync.
	seg, res, err := segment.OpenRecovered(l.fs, l.dir, p, l.segmentOptions(), last)
	if q := res.Quarantine; q != nil {
		// Reported once the bytes are safe in it, even when the cut that
		// follows failed: the next recovery reuses the file.
		l.reportQuarantine(q)
	}
	if err != nil {
		return nil, false, err
	}
	// A zero tail (a preallocated file a crash left untrimmed) is cut
	// too, but it is the end of the file, not lost data: only a cut with
	// a reason drops what later segments follow.
	damaged := res.Reason != nil
	if damaged && res.Quarantine == nil {
		l.logger.Warn("seglog: truncated a torn tail during recovery: no valid batch followed the damage",
			"file", seg.LogPath(), "valid_bytes", res.ValidBytes, "truncated_bytes", res.TruncatedBytes, "reason", res.Reason)
	}
	return seg, damaged, nil
}

// checkLogStart refuses, before Open changes anything, a log-start
// checkpoint beyond the end the segments can reach: the offset after the
// last whole entry of the last .log (segment.ScanNextOffset), which bounds
// what recovery can keep. It reads the last .log only when the start lies
// past its base; otherwise recovery's outcome decides (load checks again).
func (l *Log) checkLogStart(st dirState, bases []int64) error {
	if !st.HaveLogStart || len(bases) == 0 || st.LogStart <= bases[len(bases)-1] {
		return nil
	}
	last := bases[len(bases)-1]
	end, _, err := segment.ScanNextOffset(l.fs, l.path(segment.FileName(last, segment.LogSuffix)), last)
	if err != nil {
		return err
	}
	return st.logStartBeyond(l.dir, end)
}

// reportQuarantine logs a quarantine recovery made and hands it to
// Options.OnQuarantine.
func (l *Log) reportQuarantine(q *segment.Quarantine) {
	reason := "a segment after one recovery cut: bytes lost there make it unreachable"
	if q.Reason != nil {
		reason = q.Reason.Error()
	}
	l.logger.Warn("seglog: recovery kept bytes it cut from the log in a quarantine file; they are not part of the log (read them with: seglog dump FILE)",
		"file", q.File, "source", q.Source, "pos", q.Pos, "bytes", q.Bytes, "batches", q.Batches, "records", q.Records,
		"first_offset", q.FirstOffset, "last_offset", q.LastOffset, "unsure", q.Unsure, "reason", reason)
	if f := l.opts.OnQuarantine; f != nil {
		f(*q)
	}
}
