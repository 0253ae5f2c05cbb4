package raftlog

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/vfs"
)

// step is one operation of a contract scenario, applied to the adapter
// and to raft's InmemStore (the executable spec). refused marks what the
// adapter, as a monotonic store, must refuse where the oracle, which
// allows gaps, accepts: those steps are not applied to the oracle, and
// the adapter must be left unchanged. noop marks a call the adapter must
// accept and ignore; the oracle is skipped there because InmemStore moves
// its bounds for a range outside the log (deleting [100, 200] from [1, 50]
// makes its LastIndex 99), which raft never asks for. stage, when not
// zero, is a commit index staged (CommitTrackingLogStore) just before do.
// dropsSegments marks a delete that must remove whole segment files (the
// test's 1 KiB segments make it cross their boundaries).
type step struct {
	name          string
	do            func(s raft.LogStore) error
	refused       bool
	middle        bool // refused as a range inside the log (ErrMiddleRange)
	noop          bool
	stage         uint64
	dropsSegments bool
}

func nothing(raft.LogStore) error { return nil }

func store(ls []*raft.Log) func(raft.LogStore) error {
	return func(s raft.LogStore) error { return s.StoreLogs(ls) }
}

func deleteRange(lo, hi uint64) func(raft.LogStore) error {
	return func(s raft.LogStore) error { return s.DeleteRange(lo, hi) }
}

func concat(parts ...[]*raft.Log) []*raft.Log {
	var out []*raft.Log
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// contractScenarios are the cases of the reference's §B.5 (and raft-wal's
// integration scenarios), as sequences: each step's state is compared with
// the oracle's live, after a reopen, and after a power loss with a torn
// tail; so is the commit index a reopened Store reports (commitModel).
var contractScenarios = map[string][]step{
	"from index 1": {
		{name: "empty", do: func(raft.LogStore) error { return nil }},
		{name: "first batch at 1", do: store(entries(1, 10, 1))},
		{name: "single entry", do: func(s raft.LogStore) error { return s.StoreLog(entries(11, 11, 1)[0]) }, stage: 4},
		{name: "batches of term 2", do: store(entries(12, 16, 2)), stage: 11},
		{name: "more of term 2", do: store(entries(17, 30, 2)), stage: 16},
		{name: "more of term 2 again", do: store(entries(31, 40, 2))},
		{name: "follower batch of three terms", do: store(concat(entries(41, 42, 2), entries(43, 45, 3), entries(46, 50, 4))), stage: 45},
		{name: "commit staged, power loss before a StoreLogs", do: nothing, stage: 50},
		{name: "gap refused", do: store(entries(60, 61, 4)), refused: true, stage: 50},
		{name: "overwrite refused", do: store(entries(50, 51, 4)), refused: true},
		{name: "middle delete refused", do: deleteRange(20, 30), refused: true, middle: true},
		{name: "delete outside the log", do: deleteRange(100, 200), noop: true},
		{name: "prefix inside the first segment", do: deleteRange(1, 3)},
		{name: "prefix across segments", do: deleteRange(0, 25), dropsSegments: true},
		{name: "suffix inside a batch", do: deleteRange(45, 50)},
		{name: "append after suffix", do: store(entries(45, 47, 5)), stage: 100},
		{name: "suffix across segments", do: deleteRange(30, 47), dropsSegments: true},
		{name: "append after long suffix", do: store(entries(30, 35, 6))},
		{name: "suffix of the whole first batch kept", do: deleteRange(27, 40)},
		{name: "delete everything", do: deleteRange(26, 26)},
		{name: "append at a new index", do: store(entries(1000, 1010, 6)), stage: 1005},
		{name: "delete everything as removeOldLogs does", do: deleteRange(1000, 1010)},
		{name: "restart below the old start", do: store(entries(5, 9, 7))},
		{name: "suffix to one entry", do: deleteRange(6, 9)},
		{name: "suffix of the only entry", do: deleteRange(5, 5)},
		{name: "append after emptied by suffix", do: store(entries(5, 6, 8))},
	},
	"from index 1,000,000": {
		{name: "first batch", do: store(entries(1_000_000, 1_000_020, 3)), stage: 1_000_010},
		{name: "gap refused", do: store(entries(1_000_022, 1_000_022, 3)), refused: true, stage: 1_000_020},
		{name: "more", do: store(entries(1_000_021, 1_000_040, 4)), stage: 1_000_038},
		{name: "prefix", do: deleteRange(999_000, 1_000_030), dropsSegments: true},
		{name: "suffix straddling the start", do: deleteRange(1_000_035, 1_000_040)},
		{name: "prefix of all but one", do: deleteRange(1_000_031, 1_000_033)},
		{name: "everything", do: deleteRange(1_000_034, 1_000_034)},
		{name: "snapshot-install restart", do: store(entries(2_000_000, 2_000_002, 9))},
	},
}

func TestContract(t *testing.T) {
	for name, steps := range contractScenarios {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			const dir = "/raft"
			s := openT(t, fs, dir)
			oracle := raft.NewInmemStore()
			commits := commitModel{}
			for i, st := range steps {
				label := fmt.Sprintf("step %d %q", i, st.name)
				prevLast, _ := s.LastIndex()
				prevSegs := len(s.Log().Segments())
				if st.stage != 0 {
					if err := s.StageCommitIndex(st.stage); err != nil {
						t.Fatal(err)
					}
				}
				if st.refused || st.noop {
					before := raft.NewInmemStore()
					copyInto(t, s, before)
					err := st.do(s)
					if st.refused && err == nil {
						t.Fatalf("%s: the adapter accepted it", label)
					}
					if st.middle && !errors.Is(err, ErrMiddleRange) {
						t.Fatalf("%s: %v, want ErrMiddleRange", label, err)
					}
					if st.noop && err != nil {
						t.Fatalf("%s: %v", label, err)
					}
					compareStores(t, label+" (unchanged)", s, before)
				} else {
					if err := st.do(oracle); err != nil {
						t.Fatalf("%s: oracle: %v", label, err)
					}
					if err := st.do(s); err != nil {
						t.Fatalf("%s: %v", label, err)
					}
				}
				compareStores(t, label, s, oracle)
				if st.dropsSegments && len(s.Log().Segments()) >= prevSegs {
					t.Fatalf("%s: %d segments before, %d after: no segment file was removed", label, prevSegs, len(s.Log().Segments()))
				}
				if !st.refused && !st.noop {
					last, _ := s.LastIndex()
					commits.after(prevLast, last, st.stage)
				}

				// A power loss now, with a torn batch after the tail.
				crashed := fs.CrashClone()
				tearTail(t, crashed, dir)
				c := openT(t, crashed, dir)
				compareStores(t, label+" after a power loss", c, oracle)
				commits.check(t, label+" after a power loss", c)
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				checkFsck(t, crashed, dir)

				// A clean reopen.
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				checkFsck(t, fs, dir)
				s = openT(t, fs, dir)
				compareStores(t, label+" after reopen", s, oracle)
				commits.check(t, label+" after reopen", s)
			}
			s.Close()
		})
	}
}

// copyInto fills dst with src's entries.
func copyInto(t *testing.T, src *Store, dst raft.LogStore) {
	t.Helper()
	first, _ := src.FirstIndex()
	last, _ := src.LastIndex()
	for i := first; i <= last && last > 0; i++ {
		var l raft.Log
		if err := src.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if err := dst.StoreLog(&l); err != nil {
			t.Fatal(err)
		}
	}
}

// commitModel is what GetCommitIndex must answer after a reopen: the
// commit index staged before the StoreLogs call that wrote the last entry
// (staged values die with the process, so only the step's own stage
// counts), capped at LastIndex; 0 if the last entry's batch carries none
// (the log is empty, or a suffix delete rewrote the batch it ends in).
// Keys are the last index of each StoreLogs call still in the log.
type commitModel map[uint64]uint64

// after records a step that took the last index from prev to last.
func (m commitModel) after(prev, last, staged uint64) {
	switch {
	case last == 0:
		clear(m)
	case last > prev || prev == 0:
		m[last] = staged // a StoreLogs: stores only append
	default:
		for k := range m {
			if k > last {
				delete(m, k) // removed by a suffix delete
			}
		}
	}
}

func (m commitModel) check(t *testing.T, label string, s *Store) {
	t.Helper()
	last, _ := s.LastIndex()
	want := min(m[last], last)
	if got, err := s.GetCommitIndex(); err != nil || got != want {
		t.Fatalf("%s: GetCommitIndex = %d, %v; want %d", label, got, err, want)
	}
}
