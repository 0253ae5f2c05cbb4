package replica

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/vfs"
)

// step is one operation of a contract scenario, applied to the store and
// to raft's InmemStore (the executable spec). refused marks what the
// store, as a monotonic store, must refuse where the oracle, which allows
// gaps, accepts: those steps are not applied to the oracle, and the store
// must be left unchanged. noop marks a call the store must accept and
// ignore (InmemStore moves its bounds for a range outside the log, which
// raft never asks for).
type step struct {
	name    string
	do      func(s raft.LogStore) error
	refused error // the error it must match, for a refused step
	noop    bool
}

func storeLogs(ls []*raft.Log) func(raft.LogStore) error {
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

// contractScenarios are raftlog's contract scenarios (the reference's
// §B.5), as sequences; each step's state is compared with the oracle's
// live, after a reopen, and after a power loss.
func contractScenarios(t testing.TB) map[string][]step {
	return map[string][]step{
		"from index 1": {
			{name: "empty", do: func(raft.LogStore) error { return nil }},
			{name: "first batch at 1", do: storeLogs(entries(t, 1, 10, 1))},
			{name: "single entry", do: func(s raft.LogStore) error { return s.StoreLog(entries(t, 11, 11, 1)[0]) }},
			{name: "term 2", do: storeLogs(entries(t, 12, 30, 2))},
			{name: "follower batch of three terms", do: storeLogs(concat(entries(t, 31, 42, 2), entries(t, 43, 45, 3), entries(t, 46, 50, 4)))},
			{name: "gap refused", do: storeLogs(entries(t, 60, 61, 4)), refused: ErrBadEntry},
			{name: "overwrite refused", do: storeLogs(entries(t, 50, 51, 4)), refused: ErrBadEntry},
			{name: "term going back refused", do: storeLogs(entries(t, 51, 52, 3)), refused: ErrBadEntry},
			{name: "term going back inside a call refused", do: storeLogs(concat(entries(t, 51, 51, 5), entries(t, 52, 52, 4))), refused: ErrBadEntry},
			{name: "term above an int32 refused", do: storeLogs(entries(t, 51, 51, 1<<31)), refused: ErrBadEntry},
			{name: "command with extensions refused", do: func(s raft.LogStore) error {
				l := entries(t, 51, 51, 5)[0]
				l.Extensions = []byte("x")
				return s.StoreLog(l)
			}, refused: ErrExtensions},
			{name: "a bad batch among good ones refused", do: func(s raft.LogStore) error {
				ls := entries(t, 51, 53, 5) // 51 and 53 are commands
				ls[2].Data = append([]byte(nil), ls[2].Data...)
				ls[2].Data[len(ls[2].Data)-1] ^= 1
				return s.StoreLogs(ls)
			}, refused: ErrBadEntry},
			{name: "middle delete refused", do: deleteRange(20, 30), refused: ErrMiddleRange},
			{name: "delete outside the log", do: deleteRange(100, 200), noop: true},
			{name: "prefix inside the first segment", do: deleteRange(1, 3)},
			{name: "prefix across segments", do: deleteRange(0, 25)},
			{name: "suffix", do: deleteRange(45, 50)},
			{name: "append after suffix", do: storeLogs(entries(t, 45, 47, 5))},
			{name: "suffix across segments", do: deleteRange(30, 47)},
			{name: "append after long suffix", do: storeLogs(entries(t, 30, 35, 6))},
			{name: "suffix of all but the first", do: deleteRange(27, 40)},
			{name: "delete everything", do: deleteRange(26, 26)},
			{name: "append at a new index", do: storeLogs(entries(t, 1000, 1010, 6))},
			{name: "delete everything as removeOldLogs does", do: deleteRange(1000, 1010)},
			{name: "restart below the old start", do: storeLogs(entries(t, 5, 9, 7))},
			{name: "suffix to one entry", do: deleteRange(6, 9)},
			{name: "suffix of the only entry", do: deleteRange(5, 5)},
			{name: "append after emptied by suffix", do: storeLogs(entries(t, 5, 6, 8))},
		},
		"from index 1,000,000": {
			{name: "first batch", do: storeLogs(entries(t, 1_000_000, 1_000_020, 3))},
			{name: "gap refused", do: storeLogs(entries(t, 1_000_022, 1_000_022, 3)), refused: ErrBadEntry},
			{name: "more", do: storeLogs(entries(t, 1_000_021, 1_000_040, 4))},
			{name: "prefix", do: deleteRange(999_000, 1_000_030)},
			{name: "suffix", do: deleteRange(1_000_035, 1_000_040)},
			{name: "prefix of all but one", do: deleteRange(1_000_031, 1_000_033)},
			{name: "everything", do: deleteRange(1_000_034, 1_000_034)},
			{name: "snapshot-install restart", do: storeLogs(entries(t, 2_000_000, 2_000_002, 9))},
		},
	}
}

// TestContract runs every scenario against the store and InmemStore, and
// compares them after each step live, after a reopen, and after a power
// loss (every write is synced before it returns, so nothing may be lost).
func TestContract(t *testing.T) {
	for name, steps := range contractScenarios(t) {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			const dir = "/data/topic-0"
			s := openT(t, fs, dir)
			defer func() { s.Close() }()
			oracle := raft.NewInmemStore()
			for i, st := range steps {
				label := fmt.Sprintf("step %d %q", i, st.name)
				startOff := s.Log().StartOffset()
				if st.refused != nil || st.noop {
					before := raft.NewInmemStore()
					copyInto(t, s, before)
					end := s.Log().EndOffset()
					err := st.do(s)
					if st.refused != nil && !errors.Is(err, st.refused) {
						t.Fatalf("%s: %v, want %v", label, err, st.refused)
					}
					if st.noop && err != nil {
						t.Fatalf("%s: %v", label, err)
					}
					if s.Log().EndOffset() != end {
						t.Fatalf("%s: the partition's end moved from %d to %d", label, end, s.Log().EndOffset())
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
				checkEpochs(t, label, fs, s)
				if s.Log().StartOffset() != startOff {
					// Raft never removes Kafka data: retention does.
					t.Fatalf("%s: the partition's start moved from %d to %d", label, startOff, s.Log().StartOffset())
				}

				crashed := fs.CrashClone()
				c := openT(t, crashed, dir)
				compareStores(t, label+" after a power loss", c, oracle)
				checkEpochs(t, label+" after a power loss", crashed, c)
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = openT(t, fs, dir)
				compareStores(t, label+" after a reopen", s, oracle)
			}
		})
	}
}
