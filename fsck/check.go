package fsck

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seglog/seglog/internal/loadplan"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// Options configures Check.
type Options struct {
	// Deep decodes every record of every batch (decompression, record
	// lengths, counts, varints), not just the framing and checksums.
	Deep bool
	// MaxEntryBytes is the read limit: the largest entry read into memory
	// to verify it. An entry the file holds but that is larger is reported
	// as KindReadLimit (not damage) and skipped unverified. Zero means
	// DefaultMaxEntryBytes.
	MaxEntryBytes int
	// MaxBatchBytes is the old name of MaxEntryBytes, used when
	// MaxEntryBytes is zero.
	//
	// Deprecated: use MaxEntryBytes.
	MaxBatchBytes int
	// Progress, when set, is called with the number of .log bytes scanned
	// since its last call.
	Progress func(n int64)
}

// readLimit is MaxEntryBytes with the old field and the default applied.
func (o Options) readLimit() int {
	switch {
	case o.MaxEntryBytes > 0:
		return o.MaxEntryBytes
	case o.MaxBatchBytes > 0:
		return o.MaxBatchBytes
	}
	return DefaultMaxEntryBytes
}

// fixOp says what Repair would do about a problem.
type fixOp uint8

const (
	fixNone       fixOp = iota
	fixLeftover         // resolve .deleted/.cleaned/.swap/.tmp files as Kafka's loader does
	fixRemove           // delete the file (orphan index, corrupt snapshot)
	fixIndex            // rebuild the segment's .index and .timeindex
	fixDamage           // truncate the log at the damage (mid-log only with TruncateDamaged)
	fixCheckpoint       // lower the recovery point to the end of the log (one this repair's cut left beyond it)
	fixUnusable         // rewrite an unusable offset checkpoint so that every record is kept
	fixLogStart         // set a log start beyond the end of the log to the end
)

type fixAction struct {
	op   fixOp
	base int64 // segment base offset, for fixIndex and fixDamage
}

// maxProblemsPerFile caps the problems listed for one file and kind, so a
// garbage index does not print a million lines; the rest are summarized.
const maxProblemsPerFile = 50

// Check checks the partition directory dir and returns its report. It
// writes nothing and takes no lock. err is for operational failures (dir
// missing or unreadable, ErrNotDir when it is a file, ErrNoPartition when it
// holds no partition); damage, including files that cannot be read, is
// reported as problems.
func Check(fsys vfs.FS, dir string, opts Options) (*Report, error) {
	c, err := newChecker(fsys, dir, opts)
	if err != nil {
		return nil, err
	}
	c.run()
	return c.r, nil
}

// checker holds the state of one directory check.
type checker struct {
	fs   vfs.FS
	dir  string
	opts Options
	r    *Report

	names    []string
	present  map[string]bool
	logs     []int64 // sorted bases of the .log files
	clean    bool    // a clean-shutdown marker is present
	perFile  map[string]int
	overflow map[string]int

	segs    []*segResult
	damages []damageRef
	// Running totals of valid batches and records, to say how many a
	// truncation at a damaged region would drop.
	validBatches, validRecords int64
	next                       int64 // offset after the last valid batch, -1 if none

	// rp is the recovery point (allSynced when every batch is), and
	// rpSource says where it came from, for the report.
	rp       int64
	rpSource string
	// plan is the load plan the Log's Open would make from the same
	// listing and recovery point: its rules (loadplan.Plan.Torn,
	// RecoverOptions, SetsAside) decide what is torn and what repair cuts.
	plan *loadplan.Plan

	// logStart is the checkpointed log start offset (0 if none or
	// unusable): offsets below it are deleted, not missing. compacted says
	// the log has a cleaner-offset checkpoint (layout.Compacted): a
	// compacted log legitimately has offset gaps. damageSince is set
	// between a damaged region and the next valid batch: a gap there is
	// the damage's, reported as such.
	logStart    int64
	compacted   bool
	damageSince bool
	contents    layout.Contents

	epochs    map[int32]int64 // leader epoch -> first offset seen
	epochEnd  map[int32]int64 // leader epoch -> last offset seen
	lastEpoch int32
	openTxn   map[int64]int64 // producer id -> first offset of its open transaction
}

// segResult is what the check learned about one segment.
type segResult struct {
	base      int64
	size      int64
	validEnd  int64 // end of the last valid entry
	batches   int64
	damaged   bool
	indexBad  bool // .index or .timeindex needs rebuilding
	overLimit bool // holds an entry larger than the read limit: repair leaves it
	hasTxnIdx bool
	// missing is the key of a missing-data problem whose evidence is the
	// segment's .index (entries past the end of the .log): rebuilt from
	// what is left, it would say nothing was there, so repair keeps it,
	// unless its own cut left the entries behind.
	missing string
}

// damageRef is a damaged region of a .log.
type damageRef struct {
	seg                       int
	pos                       int64
	problem                   int
	batchesBefore, recsBefore int64
	nextBefore                int64 // offset after the last valid batch before the damage
	entry                     Entry
	file                      string
}

func newChecker(fsys vfs.FS, dir string, opts Options) (*checker, error) {
	fi, err := fsys.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s", ErrNotDir, dir)
	}
	names, err := fsys.List(dir)
	if err != nil {
		return nil, err
	}
	contents, err := layout.Classify(fsys, dir, names)
	if err != nil {
		return nil, err
	}
	if !isPartition(contents) && contents.Kind() != layout.DirEmpty {
		// An empty directory is an empty log (a store's new partition);
		// one holding only other files or directories is no log at all.
		return nil, &NoPartitionError{Root: dir, Strays: contents.Strays}
	}
	opts.MaxEntryBytes = opts.readLimit()
	c := &checker{
		fs: fsys, dir: dir, opts: opts,
		r:         &Report{Dir: dir, Stats: newStats()},
		names:     names,
		present:   make(map[string]bool, len(names)),
		perFile:   map[string]int{},
		overflow:  map[string]int{},
		next:      -1,
		epochs:    map[int32]int64{},
		epochEnd:  map[int32]int64{},
		lastEpoch: -1,
		openTxn:   map[int64]int64{},
		contents:  contents,
	}
	for _, n := range names {
		c.present[n] = true
	}
	return c, nil
}

func (c *checker) path(name string) string { return filepath.Join(c.dir, name) }

// add records a problem and returns its index (-1 if it was capped).
func (c *checker) add(p Problem) int {
	key := p.File + "\x00" + string(p.Kind)
	c.perFile[key]++
	if c.perFile[key] > maxProblemsPerFile {
		c.overflow[key]++
		return -1
	}
	c.r.Problems = append(c.r.Problems, p)
	return len(c.r.Problems) - 1
}

func (c *checker) addf(file string, pos int64, kind Kind, sev Severity, fix fixAction, format string, args ...any) int {
	return c.add(Problem{File: file, Position: pos, Kind: kind, Severity: sev, Detail: fmt.Sprintf(format, args...), fix: fix})
}

func (c *checker) run() {
	c.scanNames()
	c.rp, c.rpSource = c.recoveryPoint()
	c.logStart = c.checkpointedLogStart()
	c.plan = loadplan.New(c.names, loadplan.State{
		Clean:         c.rp == allSynced,
		RecoveryPoint: c.rp,
		LogStart:      c.logStart,
		HaveLogStart:  c.logStart > 0,
	})
	c.compacted = c.hasCleanerCheckpoint()
	for i := range c.logs {
		c.checkSegment(i)
	}
	c.classifyDamage()
	c.checkFiles()
	c.dropVanishedLeftovers()
	for key, n := range c.overflow {
		file, kind, _ := strings.Cut(key, "\x00")
		// The summary carries the fix of the problems it stands for.
		var fix fixAction
		var sev Severity
		for _, p := range c.r.Problems {
			if p.File == file && string(p.Kind) == kind {
				fix, sev = p.fix, p.Severity
				break
			}
		}
		c.r.Problems = append(c.r.Problems, Problem{File: file, Kind: Kind(kind), Severity: sev, fix: fix,
			Detail: fmt.Sprintf("%d more %s problems in this file not listed", n, kind)})
	}
	slices.SortStableFunc(c.r.Problems, func(a, b Problem) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return int(min(max(a.Position-b.Position, -1), 1))
	})
}

// dropVanishedLeftovers forgets the leftovers gone by the end of the
// check. Beside a live Log, a checkpoint's .tmp (or a swap's file) listed
// with the directory was an operation in flight that has finished since,
// not one a crash interrupted: reporting it would send the user to repair
// a healthy log. One still there is reported; a check racing the writer
// can still meet one written again, as it can a half-written batch.
func (c *checker) dropVanishedLeftovers() {
	c.r.Problems = slices.DeleteFunc(c.r.Problems, func(p Problem) bool {
		if p.Kind != KindLeftover {
			return false
		}
		_, err := c.fs.Stat(c.path(p.File))
		return errors.Is(err, fs.ErrNotExist)
	})
}

// scanNames classifies the directory's files: segments, leftovers,
// orphans, badly named files, and everything else.
func (c *checker) scanNames() {
	logs := map[int64]bool{}
	for _, n := range c.names {
		if f, ok, _ := layout.ParseSegmentFile(n); ok && f.Temp == "" && f.Kind == layout.LogSuffix {
			logs[f.Base] = true
		}
	}
	for _, n := range c.names {
		f, ok, bad := layout.ParseSegmentFile(n)
		switch {
		case bad || slices.Contains(c.contents.Misnamed, n):
			c.addf(n, 0, KindSegmentName, Error, fixAction{}, "named like a segment file, but a segment file's name is its base offset in exactly 20 decimal digits: Kafka's loader misreads (or deletes) it, and seglog refuses to open the log while it is here; rename or move it")
		case ok && f.Temp != "":
			c.addf(n, 0, KindLeftover, Warning, fixAction{op: fixLeftover}, "%s", leftoverDetail(f.Temp))
		case ok && f.Kind == layout.LogSuffix:
			c.logs = append(c.logs, f.Base)
		case ok && (f.Kind == layout.IndexSuffix || f.Kind == layout.TimeIndexSuffix || f.Kind == layout.TxnIndexSuffix):
			if !logs[f.Base] {
				c.addf(n, 0, KindOrphanIndex, Warning, fixAction{op: fixRemove}, "index file without %s; recovery deletes it", layout.FileName(f.Base, layout.LogSuffix))
			}
		case ok && f.Kind == layout.SnapshotSuffix:
			// checked in checkFiles
		case strings.HasSuffix(n, layout.CheckpointTmpSuffix):
			c.addf(n, 0, KindLeftover, Warning, fixAction{op: fixLeftover}, "temporary file of an interrupted checkpoint write; recovery deletes it")
		case layout.IsQuarantine(n):
			c.checkQuarantine(n)
		case n == layout.CleanShutdownFile:
			c.clean = true
			c.r.Stats.OtherFiles = append(c.r.Stats.OtherFiles, n)
		case n == layout.RecoveryPointFile || n == layout.LogStartOffsetFile || n == layout.CleanerOffsetFile || n == layout.LeaderEpochFile || n == layout.PartitionMetadataFile:
			// checked in checkFiles
		case slices.Contains(c.contents.Subdirs, n):
			c.addf(n, 0, KindDirectory, Error, fixAction{}, "a directory inside a log's directory: seglog refuses to open the log while it is here (Kafka's loader ignores it); move it out")
		default:
			c.r.Stats.OtherFiles = append(c.r.Stats.OtherFiles, n)
			if slices.Contains(c.contents.Strays, n) {
				c.r.Stats.Strays = append(c.r.Stats.Strays, n)
			}
		}
	}
	slices.Sort(c.logs)
	if !c.clean {
		if _, err := c.fs.Stat(filepath.Join(c.dir, "..", layout.CleanShutdownFile)); err == nil {
			c.clean = true
		}
	}
}

func leftoverDetail(temp string) string {
	switch temp {
	case layout.DeletedSuffix:
		return "file scheduled for deletion; recovery deletes it"
	case layout.CleanedSuffix:
		return "output of an interrupted compaction; recovery deletes it"
	default:
		return "segment of an interrupted compaction swap; recovery completes or undoes the swap"
	}
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
