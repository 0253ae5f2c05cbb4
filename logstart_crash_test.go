package seglog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// TestDeleteBeforeUnsyncedRecordsCrash: DeleteBefore over records that
// were never synced (SyncNone, no roll, no Sync) and a power loss right
// after it. The new start must not be checkpointed ahead of the records
// below it: DeleteBefore makes them durable first, so the log reopens with
// its start inside it instead of failing with ErrLogStartBeyondEnd (or,
// before that error existed, deleting every segment).
func TestDeleteBeforeUnsyncedRecordsCrash(t *testing.T) {
	mem := vfs.NewMem()
	opts := func(fs vfs.FS) Options {
		return Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 1 << 20, Sync: SyncNone}, Logger: discardLogger()}
	}
	l, err := Open("/log", opts(mem))
	if err != nil {
		t.Fatal(err)
	}
	for l.EndOffset() < 200 {
		if _, err := l.Append(recordsAt(l.EndOffset(), 5)...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.DeleteBefore(150); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	l.Close()
	r, err := Open("/log", opts(crashed))
	if err != nil {
		t.Fatalf("reopen after DeleteBefore and a power loss: %v", err)
	}
	defer r.Close()
	if r.StartOffset() != 150 || r.EndOffset() < 150 {
		t.Fatalf("start %d end %d, want the start 150 inside the log", r.StartOffset(), r.EndOffset())
	}
	if _, err := stateOf(r); err != nil {
		t.Fatal(err)
	}
}

// TestRestartAtSurvivesCrashes: RestartAt inside the log and past its end,
// with a power loss at every filesystem operation it makes (and half the
// time some unsynced bytes and entries kept). The log reopens — never
// with its start beyond its end — as it was, as it was with a suffix
// removed, or restarted.
func TestRestartAtSurvivesCrashes(t *testing.T) {
	setup := vfs.NewMem()
	l, err := Open("/c", truncOptions(setup, SyncNone))
	if err != nil {
		t.Fatal(err)
	}
	for l.EndOffset() < 120 {
		if _, err := l.Append(epochRecords(l.EndOffset(), 5, 0)...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.DeleteBefore(12); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, target := range []int64{60, 119, 120, 500} {
		t.Run(fmt.Sprint(target), func(t *testing.T) {
			open := func(fs vfs.FS) *Log {
				t.Helper()
				l, err := Open("/c", truncOptions(fs, SyncNone))
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			l := open(setup.CrashClone())
			before, err := stateOf(l)
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			counter := &vfs.Counter{}
			l = open(vfs.Inject(setup.CrashClone(), counter))
			skip := counter.Count()
			if err := l.RestartAt(target); err != nil {
				t.Fatal(err)
			}
			total := counter.Count() - skip
			l.Close()
			for point := int64(0); point < 2*total; point++ {
				k, torn := 1+point/2, point%2 == 1
				mem := setup.CrashClone()
				var mu sync.Mutex
				var crashed *vfs.MemFS
				n, armed := int64(0), false
				inj := vfs.InjectorFunc(func(op vfs.Op) error {
					mu.Lock()
					defer mu.Unlock()
					if armed && crashed == nil {
						if n++; n == k {
							o := vfs.CrashOptions{}
							if torn {
								o = vfs.CrashOptions{Rand: randFor(k), KeepUnsynced: 0.7, KeepUnsyncedEntries: 0.5, HoleUnsynced: 0.5}
							}
							crashed = mem.CrashCloneWith(o)
						}
					}
					return nil
				})
				l := open(vfs.Inject(mem, inj))
				mu.Lock()
				armed = true
				mu.Unlock()
				if err := l.RestartAt(target); err != nil {
					t.Fatal(err)
				}
				l.Close()
				if crashed == nil {
					continue
				}
				label := fmt.Sprintf("crash at op %d/%d (torn %v)", k, total, torn)
				// A read-only view of the crashed log sees what the
				// writable open below will make of it.
				ro := truncOptions(crashed, SyncNone)
				ro.ReadOnly, ro.Sync = true, SyncNone
				v, err := Open("/c", ro)
				if err != nil {
					t.Fatalf("%s: read-only open: %v", label, err)
				}
				view, err := stateOf(v)
				v.Close()
				if err != nil {
					t.Fatalf("%s: read-only: %v", label, err)
				}
				r, err := Open("/c", truncOptions(crashed, SyncNone))
				if errors.Is(err, ErrLogStartBeyondEnd) {
					t.Fatalf("%s: %v", label, err)
				}
				if err != nil {
					t.Fatalf("%s: reopen: %v", label, err)
				}
				got, err := stateOf(r)
				r.Close()
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if view.start != got.start || strings.Join(view.keys, ",") != strings.Join(got.keys, ",") {
					t.Fatalf("%s: the read-only view saw %v, the writable open %v", label, view, got)
				}
				restarted := got.start == target && len(got.keys) == 0
				prefix := got.start == before.start && got.end() <= before.end() &&
					strings.Join(got.keys, ",") == strings.Join(before.keys[:len(got.keys)], ",")
				if !restarted && !prefix {
					t.Fatalf("%s: reopened %v; before %v, restart at %d", label, got, before, target)
				}
			}
		})
	}
}

// randFor is a seeded source for the crash at operation k.
func randFor(k int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(k), 11)) }

// TestTruncateIntoStraddlingBatchCutsNothing: a truncation into the batch
// holding the log start restarts the log at its start without first
// cutting the .log below it. Such a cut, were it on disk before the
// restart finished (a filesystem may commit a truncation's new size
// without a sync), would leave the log ending below its start.
func TestTruncateIntoStraddlingBatchCutsNothing(t *testing.T) {
	var mu sync.Mutex
	var cuts []vfs.Op
	recording := false
	inj := vfs.InjectorFunc(func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if recording && op.Kind == vfs.OpTruncate && strings.HasSuffix(op.Path, ".log") {
			cuts = append(cuts, op)
		}
		return nil
	})
	l, err := Open("/c", truncOptions(vfs.Inject(vfs.NewMem(), inj), SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for l.EndOffset() < 110 {
		if _, err := l.Append(epochRecords(l.EndOffset(), 5, 0)...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.DeleteBefore(102); err != nil { // into the batch [100, 105)
		t.Fatal(err)
	}
	mu.Lock()
	recording = true
	mu.Unlock()
	if err := l.TruncateTo(103); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 102 || l.EndOffset() != 102 {
		t.Fatalf("start %d end %d, want an empty log at 102", l.StartOffset(), l.EndOffset())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(cuts) > 0 {
		t.Fatalf("the .log was cut below the start before the restart: %v", cuts)
	}
}
