package fsck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seglog/seglog/defaults"
	"github.com/seglog/seglog/internal/loadplan"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// RepairOptions configures Repair.
type RepairOptions struct {
	Options
	// TruncateDamaged is the escape hatch: it lets Repair cut the log at
	// damage below the recovery point (in data the log had synced),
	// setting every valid batch after it and every later segment aside in
	// quarantine files. Without it such damage is reported and left as it
	// is; only damage past the recovery point is cut, as the Log's
	// recovery cuts it.
	TruncateDamaged bool
	// IndexIntervalBytes is the index.interval.bytes used to rebuild
	// indexes. Zero means DefaultIndexIntervalBytes; negative means index
	// every batch but the first.
	IndexIntervalBytes int
}

// DefaultIndexIntervalBytes is Kafka's index.interval.bytes
// (defaults.IndexIntervalBytes), used to rebuild indexes when
// RepairOptions.IndexIntervalBytes is zero.
const DefaultIndexIntervalBytes = defaults.IndexIntervalBytes

// maxRepairPasses bounds the fix-and-recheck loop.
const maxRepairPasses = 4

// Repair checks dir and fixes what the Log's own recovery would fix, with
// the engine's segment recovery where it can:
//
//   - leftover files are resolved as Kafka's log loader resolves them
//     (docs/format.md, "Segments, indexes and checkpoints"), by
//     layout.Resolve as Open does; orphan index files and corrupt
//     producer snapshots are deleted;
//   - damage past the recovery point is cut at: the .log is cut at the
//     first such damage (by the engine's segment recovery, which also
//     rebuilds the segment's indexes) and every later segment removed;
//     as in the Log's recovery, bytes cut that hold a valid batch are
//     kept in quarantine files (segment.QuarantineTail,
//     segment.SetAsideSegment), so only a torn tail is deleted;
//   - damage below the recovery point is corruption in synced data: it is
//     reported and not cut, unless opts.TruncateDamaged asks for it;
//   - missing or damaged .index and .timeindex files of segments without
//     damage are rebuilt by the engine's segment recovery, except an
//     .index that is the evidence of missing data (entries past the end of
//     its .log at synced batches);
//   - a recovery point this repair's own cut left beyond the end of the log
//     is lowered to it, once no damage remains; one found beyond the end is
//     missing data and is left as it is;
//   - an unusable offset checkpoint is rewritten so that every record is
//     kept, and a log start beyond the end of the log set to the end;
//     Problem.Repair says what was written.
//
// The recovery point is read once, before anything changes, in the order
// the Log's Open reads it: a clean-shutdown marker in dir (every batch
// synced); dir's recovery-point-offset-checkpoint; for a Kafka partition
// directory, the parent log.dir's line for the partition (and the
// log.dir's marker); else 0. A checkpoint that cannot be read counts as
// everything synced. An entry above the read limit is never
// cut, and its segment's indexes are left alone.
//
// It takes the directory's lock (DIR/.lock; for a partition directory of
// a store or Kafka log.dir, the log.dir's .lock alone, which a store's
// partition shares) and fails with ErrLocked, naming the holder its lock
// file names, if a live Log or store holds it. An empty directory (an
// empty log) is only checked, and one holding only files or directories
// that are not a log's is ErrNoPartition: no lock file is created in
// either. The report lists every problem found on the way;
// a problem is marked repaired when a check after the repair no longer
// finds it. On an I/O error the report so far is returned with the error.
func Repair(fsys vfs.FS, dir string, opts RepairOptions) (*Report, error) {
	contents, err := layout.ReadContents(fsys, dir)
	if err != nil {
		return nil, err
	}
	if !isPartition(contents) {
		// Nothing of a log: an empty directory (an empty log: nothing to
		// repair) is only checked, one of other files is none of fsck's
		// business; taking the lock would leave a .lock file in either.
		if contents.Kind() != layout.DirEmpty {
			return nil, &NoPartitionError{Root: dir, Strays: contents.Strays}
		}
		return Check(fsys, dir, opts.Options)
	}
	unlock, err := lockDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	// found holds the problems of the first check, then those later checks
	// add; a later one is a consequence of a fix (index entries past a
	// truncation) or was hidden behind one (a swapped-in segment's), and
	// is kept only if the repair could not fix it.
	var found []Problem
	var later []bool
	seen := map[string]bool{}
	checks := 0
	collect := func(ps []Problem) {
		for _, p := range ps {
			if k := problemKey(p); !seen[k] {
				seen[k] = true
				found = append(found, p)
				later = append(later, checks > 0)
			}
		}
		checks++
	}
	c, err := newChecker(fsys, dir, opts.Options)
	if err != nil {
		return nil, err
	}
	c.run()
	collect(c.r.Problems)
	// The recovery point and log start are taken from the directory as it
	// was: a later pass must not find damage "past" a recovery point this
	// repair lowered.
	rp := &repairer{fs: fsys, dir: dir, opts: opts, st: c.plan.State, first: map[string]bool{}, wrote: map[string]string{}}
	for _, p := range c.r.Problems {
		rp.first[problemKey(p)] = true
	}
	for pass := 0; pass < maxRepairPasses; pass++ {
		changed, err := rp.fixOne(c)
		if err != nil {
			return finalReport(found, later, c.r, rp.wrote), err
		}
		if !changed {
			break
		}
		if c, err = newChecker(fsys, dir, opts.Options); err != nil {
			return nil, err
		}
		c.run()
		collect(c.r.Problems)
	}
	return finalReport(found, later, c.r, rp.wrote), nil
}

// finalReport marks as repaired every problem the last check no longer
// finds, and drops the repaired ones that only later checks found.
// wrote holds, by problem, what repair wrote for it.
func finalReport(found []Problem, later []bool, last *Report, wrote map[string]string) *Report {
	remaining := map[string]bool{}
	for _, p := range last.Problems {
		remaining[problemKey(p)] = true
	}
	out := &Report{Dir: last.Dir, Layout: last.Layout, Stats: last.Stats}
	for i, p := range found {
		p.Repaired = !remaining[problemKey(p)]
		p.Repair = wrote[problemKey(p)]
		if later[i] && p.Repaired {
			continue
		}
		out.Problems = append(out.Problems, p)
	}
	return out
}

func problemKey(p Problem) string {
	return fmt.Sprintf("%s\x00%d\x00%s", p.File, p.Position, p.Kind)
}

// lockedMsg begins Repair's refusal of a held directory (ErrLocked).
const lockedMsg = "fsck: directory is locked by a running log; stop it before repairing"

// lockDir takes the directory's lock or, for a partition directory of a
// store or Kafka log.dir (layout.PartitionLogDir), the log.dir's lock
// alone: a store's partition is written only by the log.dir's holder and
// has no lock of its own. The lock file then names the repair as its
// holder, and a lock held by another names that holder in the error.
func lockDir(fsys vfs.FS, dir string) (func(), error) {
	if _, err := fsys.Stat(dir); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, layout.LockFile)
	if logDir, _, _, ok, err := layout.PartitionLogDir(fsys, dir); err != nil {
		return nil, err
	} else if ok {
		p = filepath.Join(logDir, layout.LockFile)
	}
	l, err := fsys.Lock(p)
	if err != nil {
		if h, named, held := layout.HolderOf(err); named {
			return nil, fmt.Errorf("%s: %s is held by %s: %w", lockedMsg, p, h, err)
		} else if held {
			return nil, fmt.Errorf("%s: %s: %w", lockedMsg, p, err)
		}
		return nil, err
	}
	if err := l.SetOwner(layout.Holder{Command: "seglog fsck --repair", PID: os.Getpid()}.Format()); err != nil {
		l.Close()
		return nil, err
	}
	return func() { l.Close() }, nil
}

// repairer applies fixes, one category per pass, so that each pass works
// from a fresh check of the directory as the previous one left it.
type repairer struct {
	fs   vfs.FS
	dir  string
	opts RepairOptions
	// st is the state the directory's checkpoints gave when repair
	// began; each pass applies the load plan (loadplan.New) of the
	// listing it checked with it.
	st loadplan.State
	// first holds the problems of the first check: a recovery point
	// beyond the end of the log found then is evidence of missing data,
	// one found later was left by this repair's own cut.
	first map[string]bool
	// wrote says, by problem, what repair wrote for it.
	wrote map[string]string
}

func (r *repairer) path(name string) string { return filepath.Join(r.dir, name) }

// fixOne applies the first category of fixes the check calls for and
// reports whether it changed anything.
func (r *repairer) fixOne(c *checker) (bool, error) {
	has := func(op fixOp) bool {
		for _, p := range c.r.Problems {
			if p.fix.op == op {
				return true
			}
		}
		return false
	}
	switch {
	case has(fixLeftover) || has(fixRemove):
		return true, r.resolveLeftovers(c)
	}
	plan := loadplan.New(c.names, r.st)
	if k := r.damageCut(c, plan); k >= 0 {
		return true, r.truncate(c, plan, c.damages[k])
	}
	changed := false
	for i, sr := range c.segs {
		// A segment whose index is the evidence of missing data keeps it:
		// rebuilt from what is left, it would say nothing was there. Only
		// entries this repair's own cut left past the end are dropped.
		if sr.indexBad && !sr.damaged && !sr.overLimit && !r.first[sr.missing] {
			if err := r.rebuildIndexes(c, plan, i); err != nil {
				return changed, err
			}
			changed = true
		}
	}
	for _, p := range c.r.Problems {
		// While damage remains the recovery point is the evidence of what
		// was synced: lowered to the end of the valid batches, it would
		// make the damage look like an unsynced tail to the next repair
		// or Open.
		//
		// Only a recovery point this repair's own cut left beyond the end
		// is lowered: one found so is the evidence that synced data is
		// missing, and lowering it would hide that.
		if p.fix.op == fixCheckpoint && len(c.damages) == 0 && !r.first[problemKey(p)] {
			if err := r.lowerRecoveryPoint(filepath.Join(r.dir, p.File), c.logEnd()); err != nil {
				return changed, err
			}
			changed = true
		}
		did, err := r.fixCheckpointFile(c, p)
		if err != nil {
			return changed, err
		}
		changed = changed || did
	}
	if changed {
		if err := r.fs.SyncDir(r.dir); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// damageCut returns the damage the log should be truncated at: the first
// damage the load plan calls a torn tail (where the Log's recovery would
// cut), or with TruncateDamaged the first damage of all; -1 if none
// applies.
func (r *repairer) damageCut(c *checker, plan *loadplan.Plan) int {
	for k, d := range c.damages {
		if r.opts.TruncateDamaged || plan.Torn(d.nextBefore) {
			return k
		}
	}
	return -1
}

// resolveLeftovers resolves leftover and orphan files with the engine's
// own code (layout.Resolve, what the Log's Open runs: Kafka's LogLoader
// steps 1 and 2), then deletes the corrupt producer snapshots the check
// found.
func (r *repairer) resolveLeftovers(c *checker) error {
	if _, _, err := layout.Resolve(r.fs, r.dir, segment.LogEnd); err != nil {
		return err
	}
	for _, p := range c.r.Problems {
		if p.fix.op == fixRemove && p.Kind == KindSnapshot {
			if err := r.fs.Remove(r.path(p.File)); err != nil && !isNotExist(err) {
				return err
			}
		}
	}
	return r.fs.SyncDir(r.dir)
}

// truncate cuts the log at damage d, as the Log's recovery cuts it: the
// engine's segment recovery truncates the .log (and rebuilds its indexes),
// every later segment is removed (bytes lost in one segment make the later
// ones unreachable, Kafka's rule) unless the next one begins at or below
// the log start, and the .txnindex loses the entries beyond the new end. Cut bytes and later segments holding a valid batch
// are kept in quarantine files, never deleted.
//
// Where fsck's check is stricter than the engine's recovery (records that
// only a deep check decodes), or
// the segment holds an entry above the read limit the engine would have
// to read whole, the engine keeps bytes fsck calls damaged; the .log is
// then cut at fsck's point directly and the indexes rebuilt on the next
// pass. Either way nothing before d.pos is ever cut (see recoverSegment).
func (r *repairer) truncate(c *checker, plan *loadplan.Plan, d damageRef) error {
	sr := c.segs[d.seg]
	i, err := planIndex(plan, sr.base)
	if err != nil {
		return err
	}
	cut := false
	if !sr.overLimit {
		o := plan.RecoverOptions(i)
		if r.opts.TruncateDamaged {
			o.Synced = 0
		}
		res, err := r.recoverSegment(sr.base, d.pos, sr.size, o)
		if err != nil {
			return err
		}
		cut = res.ValidBytes == d.pos
	}
	if !cut {
		// What fsck cuts that the engine would keep is kept too, in a
		// quarantine file, when it holds a valid batch.
		if _, err := segment.QuarantineFrom(r.fs, r.dir, sr.base, d.pos, d.entry.Err); err != nil {
			return err
		}
		if err := r.cutLog(sr.base, d.pos); err != nil {
			return err
		}
	}
	// Later segments leave the log as the Log's recovery removes them:
	// renamed to quarantine files when they hold a valid batch. Not when
	// the next segment begins at or below the log start: what the cut lost
	// was deleted already, and the Log's Open keeps the later segments
	// then too (a crash in the middle of RestartAt past the end leaves
	// the old segments below the new start).
	rest := c.segs[d.seg+1:]
	if !plan.SetsAside(i, true) {
		rest = nil
	}
	for _, later := range rest {
		if _, err := segment.SetAsideSegment(r.fs, r.dir, later.base); err != nil {
			return err
		}
	}
	if sr.hasTxnIdx {
		if err := r.trimTxnIndex(sr.base, d.nextBefore); err != nil {
			return err
		}
	}
	return r.fs.SyncDir(r.dir)
}

// cutLog truncates the segment's .log at pos and syncs it.
func (r *repairer) cutLog(base, pos int64) error {
	f, err := r.fs.OpenReadWrite(r.path(layout.FileName(base, layout.LogSuffix)))
	if err != nil {
		return err
	}
	err = f.Truncate(pos)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// trimTxnIndex drops the .txnindex entries whose marker is at or after
// end.
func (r *repairer) trimTxnIndex(base, end int64) error {
	name := layout.FileName(base, layout.TxnIndexSuffix)
	data, err := vfs.ReadFileLimit(r.fs, r.path(name), maxIndexFile)
	if err != nil {
		return err
	}
	var out []byte
	for i := 0; i+34 <= len(data); i += 34 {
		if int64(binary.BigEndian.Uint64(data[i+18:])) < end {
			out = append(out, data[i:i+34]...)
		}
	}
	return vfs.WriteFileAtomic(r.fs, r.path(name), out)
}

// rebuildIndexes rewrites a segment's .index and .timeindex from its .log
// with the engine's own recovery, forbidden to cut anything.
func (r *repairer) rebuildIndexes(c *checker, plan *loadplan.Plan, seg int) error {
	sr := c.segs[seg]
	i, err := planIndex(plan, sr.base)
	if err != nil {
		return err
	}
	o := plan.RecoverOptions(i)
	o.Synced = 0
	_, err = r.recoverSegment(sr.base, sr.size, sr.size, o)
	return err
}

// planIndex finds the segment at base in the plan made from the same
// listing the check read: both take the .log files' base offsets
// (layout.SegmentFiles), so a miss is a bug, reported rather than
// guessed around.
func planIndex(plan *loadplan.Plan, base int64) (int, error) {
	i, ok := plan.Index(base)
	if !ok {
		return 0, fmt.Errorf("fsck: internal error: segment %d is not in the load plan %v", base, plan.Bases)
	}
	return i, nil
}

// lowerRecoveryPoint rewrites the recovery-point entry for this directory
// in the checkpoint at path to end, keeping every other line. It reads and
// writes the file with package layout, the Log's own checkpoint code (the
// checker reads it with the same parser), so repair and Open agree on the
// format.
func (r *repairer) lowerRecoveryPoint(path string, end int64) error {
	entries, err := layout.ReadCheckpoint(r.fs, path)
	if err != nil {
		return err
	}
	topic, part, _ := topicPartition(r.dir)
	inDir := filepath.Dir(path) == filepath.Clean(r.dir)
	for i, e := range entries {
		mine := e.Topic == topic && int64(e.Partition) == part
		if mine || (inDir && len(entries) == 1) {
			entries[i].Offset = min(e.Offset, end)
		}
	}
	return layout.WriteCheckpoint(r.fs, path, entries)
}
