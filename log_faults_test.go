package seglog_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/faults"
	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// faultTolerated are operations whose failure a Log may absorb without
// telling anyone: closing files it is done with, cleanup the next Open
// redoes, and hints.
func faultTolerated(op vfs.Op, during string) bool {
	if during == "compact" && strings.Contains(op.Path, ".cleaned") {
		// Compaction abandons a cleaned segment it cannot finish and
		// deletes its files; when a failure does not stop the round, the
		// state and fsck checks after it prove the swap was whole.
		return true
	}
	switch op.Kind {
	case vfs.OpClose, vfs.OpUnmap, vfs.OpUnlock, vfs.OpRemove, vfs.OpReserve:
		return true
	case vfs.OpFd:
		// Asked only to learn whether a file can be mapped for header reads
		// (index.LogMap) or sent with sendfile: without a descriptor the
		// reads use pread and the sends copy, the same bytes either way.
		return true
	case vfs.OpStat:
		// Log.Segments cannot report one: the segment's mtime is then
		// unknown, which retention takes as young (TestStatFailureDeletesNothing).
		return true
	case vfs.OpWriteAt:
		return !strings.HasSuffix(op.Path, ".log") // zeros warming an index's pages
	case vfs.OpRename, vfs.OpSyncDir:
		// DeleteBefore (retention's too) retires segments below a start
		// it already checkpointed durably: the records are hidden, a
		// failed removal is logged, and the next Open removes the files.
		return (during == "delete" || during == "retain") && (op.Kind == vfs.OpSyncDir || strings.HasSuffix(op.NewPath, ".deleted"))
	case vfs.OpOpen, vfs.OpRead, vfs.OpMap, vfs.OpSize:
		// The cleaner's view of the segments (Log.Segments) is best
		// effort: a sealed segment's end or largest timestamp that cannot
		// be read is logged and estimated. The state check after the
		// fault proves the estimate deleted nothing it should not have.
		return during == "retain" || during == "compact"
	}
	return false
}

// faultScenario is a fixed sequence of campaign ops on a fresh log: every
// kind, each more than once.
var faultScenario = []string{"append", "append", "roll", "append", "ckpt", "append", "compact", "append",
	"delete", "append", "retain", "append", "truncate", "append", "roll", "append", "compact", "append"}

// runFaultScenario runs faultScenario on fs and returns the state after
// each op that returned (states[0] is after the setup appends), the ops
// run, and the first error: returned by an op, by Close or reported by the
// cleaner.
func runFaultScenario(fs vfs.FS, seed uint64, onOp func(kind string)) (states []cstate, ops []cop, firstErr error) {
	l, err := seglog.Open("/c", campaignOptions(fs))
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	noteErr := func(err error) {
		mu.Lock()
		if firstErr == nil && err != nil {
			firstErr = err
		}
		mu.Unlock()
	}
	run, err := newLogRunner(l, seed)
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	run.c = cleaner.New(cleaner.Options{Logger: discard(), Events: cleaner.Events{Failure: func(f cleaner.Failure) { noteErr(f.Err) }}})
	run.c.SetCompaction(cleaner.CompactionOptions{DedupeBufferBytes: 1 << 16, SegmentBytes: 1024})
	p := cleaner.DefaultPolicy()
	p.FileDeleteDelay = 0
	if err := run.c.Add(cleaner.Wrap(l), p); err != nil {
		l.Close()
		return nil, nil, err
	}
	defer func() {
		onOp("close")
		noteErr(l.Close())
	}()
	for l.EndOffset() < 40 {
		if _, err := run.apply("append"); err != nil {
			noteErr(err)
			return
		}
	}
	st, err := readState(l)
	if err != nil {
		noteErr(err)
		return
	}
	states = append(states, st)
	for _, kind := range faultScenario {
		onOp(kind)
		op, err := run.apply(kind)
		ops = append(ops, op)
		if err == nil {
			mu.Lock()
			err = firstErr // a cleaner failure reported through Events
			mu.Unlock()
		}
		if err != nil {
			noteErr(err)
			return
		}
		st, err := readState(l)
		if err != nil {
			noteErr(err)
			return
		}
		states = append(states, st)
	}
	return
}

// TestLogFaultMatrix fails the i-th filesystem operation of a scenario of
// appends, rolls, cleaner-checkpoint writes, compactions, DeleteBefore,
// retention and truncation, for every i, with EIO, with ENOSPC and as a
// short write: the failure must surface (from the call, from Close or as
// a cleaner failure) unless it is one a Log may absorb, nothing may panic,
// and the log must reopen, also after a power loss, holding every
// acknowledged op's effect (the state after the last op that returned, or
// what a crash during the failed op may leave), fsck-clean.
func TestLogFaultMatrix(t *testing.T) {
	seed := soak.Seed()
	ref, refOps, err := runFaultScenario(vfs.NewMem(), seed, func(string) {})
	if err != nil || len(ref) != len(faultScenario)+1 {
		t.Fatalf("reference run: %d states, %v", len(ref), err)
	}
	counter := &vfs.Counter{}
	runFaultScenario(vfs.Inject(vfs.NewMem(), counter), seed, func(string) {})
	total := counter.Count()
	injected := 0
	stride := int64(1) // every operation; every sixth under the race detector
	if soak.Race {
		stride = 6
	}
	for _, kind := range faults.Kinds {
		for i := int64(1); i <= total; i += stride {
			mem := vfs.NewMem()
			inj, fs := faults.New(mem, i, kind)
			states, _, err := runFaultScenario(fs, seed, inj.SetCurrent)
			op, during, fired := inj.Fired()
			if !fired {
				continue // background work made this run shorter
			}
			injected++
			label := fmt.Sprintf("seed %d: %v at op %d (%v %s)", seed, kind, i, op.Kind, op.Path)
			label += " during " + during
			if err == nil && !faultTolerated(op, during) {
				t.Errorf("%s: the failure was swallowed", label)
			}
			crashed := mem.CrashClone() // before the checks write to mem
			k := len(states) - 1        // ops that returned
			if k < 0 {
				// Open or the setup failed: nothing of the scenario was
				// acknowledged; the setup's appends are checked as
				// appends (any prefix of them).
				checkFaultImage(t, mem, label, nil, cstate{}, cop{})
				checkFaultImage(t, crashed, label+", then a power loss", nil, cstate{}, cop{})
				continue
			}
			for idx := range states {
				if !states[idx].same(ref[idx]) {
					t.Fatalf("%s: state after op %d is %v, the reference run's %v", label, idx, states[idx], ref[idx])
				}
			}
			before, after, failed := ref[k], ref[k], cop{"close", 0}
			if k < len(refOps) {
				after, failed = ref[k+1], refOps[k]
			}
			if op.Kind != vfs.OpUnlock { // the lock stays held until the process exits
				checkFaultImage(t, mem, label, &before, after, failed)
			}
			checkFaultImage(t, crashed, label+", then a power loss", &before, after, failed)
			if t.Failed() {
				t.FailNow()
			}
		}
	}
	t.Logf("%d faults injected over %d operations", injected, total)
	soak.Count(t, "faults", injected)
}

// checkFaultImage reopens the log fs holds and checks it; with before nil
// only its own consistency is checked.
func checkFaultImage(t *testing.T, fs *vfs.MemFS, label string, before *cstate, after cstate, op cop) {
	t.Helper()
	if _, err := fs.Stat("/c"); errors.Is(err, os.ErrNotExist) {
		return // failed before the directory existed
	}
	r, err := seglog.Open("/c", campaignOptions(fs))
	if err != nil {
		t.Fatalf("%s: reopen: %v", label, err)
	}
	got, err := readState(r)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	if before != nil && !acceptableAfterCrash(got, *before, after, op) {
		t.Fatalf("%s: reopened %v %v\nbefore %v %v\nafter  %v %v (op %v)", label, got, got.recs, *before, before.recs, after, after.recs, op)
	}
	if _, err := r.Append(record.Record{Key: []byte("z"), Value: campaignValue(r.EndOffset(), "z")}); err != nil {
		t.Fatalf("%s: append after reopening: %v", label, err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("%s: close: %v", label, err)
	}
	fscktest.CheckCleanButQuarantines(t, fs, "/c") // a later segment behind a torn one is set aside
}
