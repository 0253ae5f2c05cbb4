package raftlog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// dirState describes every file and directory under root (root
// included): mode, size, modification time and contents
// (vfstest.Snapshot). Directories' times change when an entry is created,
// removed or renamed in them.
func dirState(t *testing.T, root string) map[string]string {
	t.Helper()
	return vfstest.Snapshot(t, vfs.Default, root)
}

// diffState lists what changed between two dirStates.
func diffState(a, b map[string]string) []string {
	var out []string
	for p, fa := range a {
		fb, ok := b[p]
		switch {
		case !ok:
			out = append(out, "removed "+p)
		case fa != fb:
			out = append(out, fmt.Sprintf("%s: %s -> %s", p, fa, fb))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, "created "+p)
		}
	}
	sort.Strings(out)
	return out
}

// afterCloseCall is one call made on a closed Store (or on its view).
type afterCloseCall struct {
	method string // the method called, for the coverage check
	name   string
	call   func() error
}

// storeCallsAfterClose calls every exported method of s that can answer
// an error, with arguments that would read or write if s were open: an
// append that follows the log, every shape of delete, every stable key.
func storeCallsAfterClose(s *Store, last uint64) []afterCloseCall {
	var out raft.Log
	return []afterCloseCall{
		{"FirstIndex", "FirstIndex", func() error { _, err := s.FirstIndex(); return err }},
		{"LastIndex", "LastIndex", func() error { _, err := s.LastIndex(); return err }},
		{"GetLog", "GetLog first", func() error { return s.GetLog(1, &out) }},
		{"GetLog", "GetLog cached", func() error { return s.GetLog(last, &out) }},
		{"TermAt", "TermAt", func() error { _, err := s.TermAt(last); return err }},
		{"StoreLog", "StoreLog", func() error { return s.StoreLog(termEntries(last+1, last+1, 7)[0]) }},
		{"StoreLogs", "StoreLogs following", func() error { return s.StoreLogs(termEntries(last+1, last+20, 7)) }},
		{"StoreLogs", "StoreLogs at a new index", func() error { return s.StoreLogs(termEntries(1000, 1001, 7)) }},
		{"StoreLogs", "StoreLogs nothing", func() error { return s.StoreLogs(nil) }},
		{"DeleteRange", "DeleteRange prefix", func() error { return s.DeleteRange(1, last/2) }},
		{"DeleteRange", "DeleteRange suffix", func() error { return s.DeleteRange(last-2, last) }},
		{"DeleteRange", "DeleteRange everything", func() error { return s.DeleteRange(1, last) }},
		{"Set", "Set", func() error { return s.Set([]byte("LastVoteCand"), []byte("after close")) }},
		{"Set", "Set new key", func() error { return s.Set([]byte("new"), nil) }},
		{"Get", "Get", func() error { _, err := s.Get([]byte("LastVoteCand")); return err }},
		{"Get", "Get unset", func() error { _, err := s.Get([]byte("unset")); return err }},
		{"SetUint64", "SetUint64", func() error { return s.SetUint64([]byte("CurrentTerm"), 99) }},
		{"GetUint64", "GetUint64", func() error { _, err := s.GetUint64([]byte("CurrentTerm")); return err }},
		{"GetUint64", "GetUint64 unset", func() error { _, err := s.GetUint64([]byte("unset")); return err }},
		{"StageCommitIndex", "StageCommitIndex", func() error { return s.StageCommitIndex(last) }},
		{"GetCommitIndex", "GetCommitIndex", func() error { _, err := s.GetCommitIndex(); return err }},
		{"Close", "Close again", s.Close},
		{"Log", "Log().Read", func() error { _, err := s.Log().Read(0, 1<<20, seglog.ReadOptions{}); return err }},
	}
}

// viewCallsAfterClose calls every method of a view taken before Close
// that can answer an error.
func viewCallsAfterClose(v seglog.View) []afterCloseCall {
	lastErr := func(seq func(func(_ any, err error) bool)) error {
		var last error
		seq(func(_ any, err error) bool { last = err; return true })
		return last
	}
	return []afterCloseCall{
		{"Read", "view Read", func() error { _, err := v.Read(v.StartOffset(), 1<<20, seglog.ReadOptions{}); return err }},
		{"Records", "view Records", func() error {
			return lastErr(func(y func(any, error) bool) {
				for r, err := range v.Records(v.StartOffset()) {
					if !y(r, err) {
						return
					}
				}
			})
		}},
		{"Follow", "view Follow", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return lastErr(func(y func(any, error) bool) {
				for r, err := range v.Follow(ctx, v.StartOffset()) {
					if !y(r, err) || err != nil {
						return
					}
				}
			})
		}},
		{"OffsetForTime", "view OffsetForTime", func() error { _, err := v.OffsetForTime(0); return err }},
	}
}

// Methods that answer no error, each with why it needs none after Close.
var (
	storeNoError = map[string]string{
		"Dir":         "names the directory given to Open; reads nothing",
		"IsMonotonic": "a constant",
	}
	viewNoError = map[string]string{
		"Dir":          "names the directory; reads nothing",
		"StartOffset":  "the bound the log had when it closed (seglog.View's contract); no error result",
		"EndOffset":    "the bound the log had when it closed; no error result",
		"Size":         "the size the log had when it closed; no error result",
		"NumSegments":  "the count the log had when it closed; no error result",
		"Segments":     "empty once the log is closed; no error result",
		"UnservedTail": "a writable log has no unserved tail: it answers false and nil from no state at all, open or closed",
	}
)

// TestAfterCloseCoversEveryMethod: the tables of TestCallsAfterClose name
// every exported method of Store and of seglog.View, or say why it needs
// no error, so a method added later cannot be missed.
func TestAfterCloseCoversEveryMethod(t *testing.T) {
	check := func(typ reflect.Type, calls []afterCloseCall, noError map[string]string) {
		covered := map[string]bool{}
		for _, c := range calls {
			covered[c.method] = true
		}
		for i := range typ.NumMethod() {
			m := typ.Method(i).Name
			if !covered[m] && noError[m] == "" {
				t.Errorf("%v.%s is called by no case of TestCallsAfterClose: add one (it must answer ErrClosed and write nothing) or say in the no-error list why it needs none", typ, m)
			}
			delete(covered, m)
			delete(noError, m)
		}
		for m := range covered {
			t.Errorf("the table names %v.%s, which is no method", typ, m)
		}
		for m := range noError {
			t.Errorf("the no-error list names %v.%s, which is no method", typ, m)
		}
	}
	clone := func(m map[string]string) map[string]string {
		c := map[string]string{}
		for k, v := range m {
			c[k] = v
		}
		return c
	}
	check(reflect.TypeFor[*Store](), storeCallsAfterClose(nil, 2), clone(storeNoError))
	check(reflect.TypeFor[seglog.View](), viewCallsAfterClose(seglog.View{}), clone(viewNoError))
}

// TestCallsAfterClose: once Close has returned, every method of the
// Store and every read of the view it handed out answers ErrClosed, and
// nothing under the Store's directory changes (no file created, written,
// removed or renamed; modes and times included). Close itself a second
// time answers ErrClosed too. The Store is closed full (entries over
// several segments and terms, a cached batch, stable keys, a staged commit
// index) or empty.
func TestCallsAfterClose(t *testing.T) {
	for _, full := range []bool{true, false} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{SegmentBytes: 1024, MaxBatchBytes: 1024, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			last := uint64(40)
			if full {
				if err := s.StoreLogs(termEntries(1, 20, 1)); err != nil {
					t.Fatal(err)
				}
				if err := s.StoreLogs(termEntries(21, last, 2)); err != nil {
					t.Fatal(err)
				}
				if err := s.Set([]byte("LastVoteCand"), []byte("n1")); err != nil {
					t.Fatal(err)
				}
				if err := s.SetUint64([]byte("CurrentTerm"), 2); err != nil {
					t.Fatal(err)
				}
				var l raft.Log
				if err := s.GetLog(last, &l); err != nil { // cached now
					t.Fatal(err)
				}
			}
			if err := s.StageCommitIndex(last); err != nil {
				t.Fatal(err)
			}
			v := s.Log()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			before := dirState(t, dir)
			for _, c := range append(storeCallsAfterClose(s, last), viewCallsAfterClose(v)...) {
				time.Sleep(2 * time.Millisecond) // so a write shows in a time even if not in the bytes
				if err := c.call(); !errors.Is(err, ErrClosed) {
					t.Errorf("%s after Close: %v, want ErrClosed", c.name, err)
				}
				if d := diffState(before, dirState(t, dir)); len(d) > 0 {
					t.Errorf("%s after Close changed the directory: %v", c.name, d)
					before = dirState(t, dir)
				}
			}
		})
	}
}

// TestCloseRace: Close racing with SetUint64, Set and StoreLogs. Each
// call either completes before Close (and is then on disk) or answers
// ErrClosed (and wrote nothing): the directory does not change after
// Close returns, and a reopened Store holds exactly the last value and
// entry whose call succeeded. Run it under -race.
func TestCloseRace(t *testing.T) {
	for round := range 8 {
		dir := t.TempDir()
		s, err := Open(dir, Options{SegmentBytes: 1024, MaxBatchBytes: 1024, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg      sync.WaitGroup
			started sync.WaitGroup
			okTerm  uint64 // last SetUint64 that succeeded
			okCand  string // last Set that succeeded
			okIndex uint64 // last StoreLogs that succeeded
		)
		var closedAt atomic.Pointer[time.Time] // when Close returned
		loop := func(name string, op func(i uint64) error, ok func(i uint64)) {
			wg.Add(1)
			started.Add(1)
			go func() {
				defer wg.Done()
				closed := false
				for i := uint64(1); ; i++ {
					err := op(i)
					if i == 1 {
						started.Done()
					}
					if c := closedAt.Load(); err == nil && c != nil && time.Since(*c) > time.Second {
						t.Errorf("round %d: %s still succeeds a second after Close returned", round, name)
						return
					}
					switch {
					case err == nil && closed:
						t.Errorf("round %d: %s %d succeeded after one answered ErrClosed", round, name, i)
						return
					case err == nil:
						ok(i)
					case errors.Is(err, ErrClosed):
						if closed {
							return
						}
						closed = true // one more call, which must fail too
					default:
						t.Errorf("round %d: %s %d: %v", round, name, i, err)
						return
					}
				}
			}()
		}
		loop("SetUint64", func(i uint64) error { return s.SetUint64([]byte("CurrentTerm"), i) }, func(i uint64) { okTerm = i })
		loop("Set", func(i uint64) error { return s.Set([]byte("LastVoteCand"), fmt.Appendf(nil, "n%d", i)) }, func(i uint64) { okCand = fmt.Sprintf("n%d", i) })
		loop("StoreLogs", func(i uint64) error { return s.StoreLogs(termEntries(2*i-1, 2*i, 1)) }, func(i uint64) { okIndex = 2 * i })
		started.Wait()
		time.Sleep(time.Duration(round) * time.Millisecond)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		closedAt.Store(&now)
		after := dirState(t, dir)
		wg.Wait()
		if d := diffState(after, dirState(t, dir)); len(d) > 0 {
			t.Fatalf("round %d: the directory changed after Close returned: %v", round, d)
		}
		s, err = Open(dir, Options{SegmentBytes: 1024, MaxBatchBytes: 1024, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		term, _ := s.GetUint64([]byte("CurrentTerm"))
		cand, _ := s.Get([]byte("LastVoteCand"))
		lastIdx, _ := s.LastIndex()
		if term != okTerm || string(cand) != okCand || lastIdx != okIndex {
			t.Errorf("round %d: reopened with CurrentTerm %d, LastVoteCand %q, LastIndex %d; the last calls that succeeded stored %d, %q, %d",
				round, term, cand, lastIdx, okTerm, okCand, okIndex)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
