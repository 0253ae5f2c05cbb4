package seglog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/vfs"
)

// truncOp is one step of a truncation crash scenario.
type truncOp struct {
	kind string // "append" (a single-record batch), "truncate", "delete"
	arg  int64
}

func (o truncOp) String() string { return fmt.Sprintf("%s(%d)", o.kind, o.arg) }

// logState is what a log holds: its start and, per offset from there, the
// epoch key of the record (which write put it there).
type logState struct {
	start int64
	keys  []string
}

func (s logState) end() int64 { return s.start + int64(len(s.keys)) }

func (s logState) String() string {
	return fmt.Sprintf("[%d, %d)", s.start, s.end())
}

// stateOf reads a log's state, checking offsets and values on the way.
func stateOf(l *Log) (logState, error) {
	st := logState{start: l.StartOffset()}
	next := st.start
	for r, err := range l.Records(st.start) {
		if err != nil {
			return st, fmt.Errorf("reading at %d: %w", next, err)
		}
		if r.Offset != next {
			return st, fmt.Errorf("offset %d follows %d", r.Offset, next-1)
		}
		if !bytes.Equal(r.Value, crashValue(r.Offset, len(r.Value))) {
			return st, fmt.Errorf("offset %d holds a value never written there", r.Offset)
		}
		st.keys = append(st.keys, string(r.Key))
		next++
	}
	if next != l.EndOffset() {
		return st, fmt.Errorf("read up to %d, end %d", next, l.EndOffset())
	}
	return st, nil
}

// runTruncOps applies ops to l; before op i (from 1) it calls at(i), and
// it returns the state after each op (after[0] is the state before any).
func runTruncOps(l *Log, ops []truncOp, at func(i int)) ([]logState, error) {
	st, err := stateOf(l)
	if err != nil {
		return nil, err
	}
	after := []logState{st}
	epoch := 0
	for i, op := range ops {
		at(i + 1)
		switch op.kind {
		case "append":
			end := l.EndOffset()
			if _, err := l.Append(epochRecords(end, 1, epoch)...); err != nil {
				return after, fmt.Errorf("append at %d: %w", end, err)
			}
		case "truncate":
			epoch++
			if err := l.TruncateTo(op.arg); err != nil {
				return after, fmt.Errorf("%v: %w", op, err)
			}
		case "delete":
			if _, err := l.DeleteBefore(op.arg); err != nil {
				return after, fmt.Errorf("%v: %w", op, err)
			}
		}
		if st, err = stateOf(l); err != nil {
			return after, fmt.Errorf("after %v: %w", op, err)
		}
		after = append(after, st)
	}
	return after, nil
}

// acceptable reports whether got is a state a crash during op (taking the
// log from before to after) may leave: either state whole, or, for a
// truncation, before with a suffix removed down to where the truncation
// cuts; for retention, before with its start moved part of the way.
func acceptable(got, before, after logState, op truncOp) bool {
	same := func(a, b logState) bool { return a.start == b.start && slices.Equal(a.keys, b.keys) }
	if same(got, before) || same(got, after) {
		return true
	}
	switch op.kind {
	case "truncate":
		floor := max(after.end(), before.start)
		return got.start == before.start && got.end() >= floor && got.end() <= before.end() &&
			slices.Equal(got.keys, before.keys[:len(got.keys)])
	case "delete":
		return got.end() == before.end() && got.start >= before.start && got.start <= after.start &&
			slices.Equal(got.keys, before.keys[got.start-before.start:])
	}
	return false
}

// TestTruncationOrdersSurviveCrashes runs DeleteBefore and TruncateTo in
// every order that matters (truncation above, at and below a start that
// retention moved; retention after a truncation; both into a batch that
// straddles the start), with acknowledged (SyncAlways) appends between,
// and simulates a power loss at every filesystem operation of each run.
// Half the crashes also keep some unsynced bytes and directory entries.
// The log that reopens must hold every record acknowledged before the
// crash, nothing that a returned truncation or DeleteBefore removed, and
// the start that was last made: the state before the operation under way,
// the state after it, or, for a truncation, one that lost less of the
// suffix than it removes.
func TestTruncationOrdersSurviveCrashes(t *testing.T) {
	// 0..119 in batches of five, about five batches to a segment.
	setup := vfs.NewMem()
	l, err := Open("/c", truncOptions(setup, SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	for l.EndOffset() < 120 {
		if _, err := l.Append(epochRecords(l.EndOffset(), 5, 0)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// a(n) is n acknowledged single-record appends.
	a := func(n int) []truncOp { return slices.Repeat([]truncOp{{"append", 0}}, n) }
	tr := func(o int64) []truncOp { return []truncOp{{"truncate", o}} }
	del := func(o int64) []truncOp { return []truncOp{{"delete", o}} }
	seq := slices.Concat[[]truncOp]
	for _, sc := range []struct {
		name string
		ops  []truncOp
		want logState // start and end after the last op
	}{
		{"delete/truncate below start/append", seq(del(100), tr(60), a(10)), logState{start: 60, keys: make([]string, 10)}},
		{"delete/truncate at start/append", seq(del(100), tr(100), a(4)), logState{start: 100, keys: make([]string, 4)}},
		{"delete/truncate above start/append", seq(del(100), tr(112), a(4)), logState{start: 100, keys: make([]string, 14)}},
		{"delete into a batch/truncate in it/append", seq(del(102), tr(103), a(3)), logState{start: 102, keys: make([]string, 3)}},
		{"delete all/truncate below/append/truncate/append", seq(del(120), tr(50), a(5), tr(52), a(3)), logState{start: 50, keys: make([]string, 5)}},
		{"truncate/append/delete/append", seq(tr(80), a(5), del(83), a(3)), logState{start: 83, keys: make([]string, 5)}},
		{"truncate/delete all/truncate below/append", seq(tr(40), del(40), tr(7), a(4)), logState{start: 7, keys: make([]string, 4)}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			open := func(fs vfs.FS) *Log {
				t.Helper()
				l, err := Open("/c", truncOptions(fs, SyncAlways))
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			// A run without a crash gives the states between the ops and
			// the number of filesystem operations they take.
			counter := &vfs.Counter{}
			counted := vfs.Inject(setup.CrashClone(), counter)
			l := open(counted)
			skip := counter.Count()
			states, err := runTruncOps(l, sc.ops, func(int) {})
			if err != nil {
				t.Fatal(err)
			}
			total := counter.Count() - skip
			l.Close()
			if last := states[len(states)-1]; last.start != sc.want.start || last.end() != sc.want.end() {
				t.Fatalf("without a crash: %v, want %v", last, sc.want)
			}
			// Each point twice: once keeping only what was synced, once
			// also keeping some unsynced bytes and directory entries at
			// random (a journal that happened to commit them).
			for point := int64(0); point < 2*total; point++ {
				k, torn := 1+point/2, point%2 == 1
				mem := setup.CrashClone()
				var mu sync.Mutex
				var crashed *vfs.MemFS
				inflight, current := 0, 0
				n := int64(0)
				armed := false
				inj := vfs.InjectorFunc(func(op vfs.Op) error {
					mu.Lock()
					defer mu.Unlock()
					if !armed || crashed != nil {
						return nil
					}
					if n++; n == k {
						inflight = current
						if torn {
							crashed = mem.CrashCloneWith(vfs.CrashOptions{Rand: rand.New(rand.NewPCG(uint64(k), 11)), KeepUnsynced: 0.7, KeepUnsyncedEntries: 0.5})
						} else {
							crashed = mem.CrashClone()
						}
					}
					return nil
				})
				l := open(vfs.Inject(mem, inj))
				mu.Lock()
				armed = true
				mu.Unlock()
				if _, err := runTruncOps(l, sc.ops, func(i int) {
					mu.Lock()
					current = i
					mu.Unlock()
				}); err != nil {
					t.Fatalf("crash run %d: %v", k, err)
				}
				l.Close()
				if crashed == nil {
					continue // the run took fewer operations this time
				}
				label := fmt.Sprintf("crash at op %d/%d (torn %v)", k, total, torn)
				// Op 0 is the read of the state before the first op.
				before, after, op := states[0], states[0], truncOp{}
				if inflight > 0 {
					before, after, op = states[inflight-1], states[inflight], sc.ops[inflight-1]
					label += fmt.Sprintf(" during %v", op)
				}
				r, err := Open("/c", truncOptions(crashed, SyncAlways))
				if err != nil {
					t.Fatalf("%s: reopen: %v", label, err)
				}
				got, err := stateOf(r)
				if err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if !acceptable(got, before, after, op) {
					t.Fatalf("%s: reopened %v %v; before it %v %v, after it %v %v", label, got, got.keys, before, before.keys, after, after.keys)
				}
				if _, err := r.Append(epochRecords(r.EndOffset(), 1, 9)...); err != nil {
					t.Fatalf("%s: append after reopening: %v", label, err)
				}
				if err := r.Close(); err != nil {
					t.Fatalf("%s: close: %v", label, err)
				}
				fscktest.CheckCleanButQuarantines(t, crashed, "/c") // a later segment behind a torn one is set aside
			}
		})
	}
}
