package replica

import (
	"fmt"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
)

const crashDir = "/data/topic-0"

// crashEveryOp runs op on a Store over a fresh FS after prepare, and
// returns the machine's state as a power loss leaves it at each
// filesystem operation op performs (powerLosses), and after it.
func crashEveryOp(t *testing.T, seed uint64, prepare, op func(s *Store) error) []*vfs.MemFS {
	t.Helper()
	pl := newPowerLosses(seed, nil)
	s := openT(t, pl.fs, crashDir)
	if err := prepare(s); err != nil {
		t.Fatal(err)
	}
	pl.rec.Arm(true)
	if err := op(s); err != nil {
		t.Fatal(err)
	}
	clones := pl.images()
	closeT(t, s)
	return clones
}

// outcome is a state a crash may leave: the entries of log from first
// to a last in [minLast, maxLast]; a fresh log (FirstIndex 1, LastIndex
// 0) when log is nil.
type outcome struct {
	log              map[uint64]*pb.Entry
	first            uint64
	minLast, maxLast uint64
}

func logOf(parts ...[]*pb.Entry) map[uint64]*pb.Entry {
	m := map[uint64]*pb.Entry{}
	for _, p := range parts {
		for _, e := range p {
			m[e.GetIndex()] = e
		}
	}
	return m
}

// matches reports whether s holds one of the outcomes.
func matches(s *Store, outs []outcome) error {
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	var got []*pb.Entry
	if first <= last {
		var err error
		if got, err = s.Entries(first, last+1, ^uint64(0)); err != nil {
			return err
		}
	}
next:
	for _, o := range outs {
		if o.log == nil {
			if first == 1 && last == 0 {
				return nil
			}
			continue
		}
		if first != o.first || last < o.minLast || last > o.maxLast {
			continue
		}
		for _, e := range got {
			if sameEntry(e, o.log[e.GetIndex()]) != nil {
				continue next
			}
		}
		return nil
	}
	return fmt.Errorf("[%d, %d] is none of the states a crash may leave", first, last)
}

// copyOf returns a MemoryStorage holding what s holds, the batches
// unstamped as raft proposed them.
func copyOf(t testing.TB, s *Store) memOracle {
	t.Helper()
	ms := newOracle()
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	hs, _, _ := s.InitialState()
	if err := ms.SetHardState(hs); err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first > last {
		return ms
	}
	ents, err := s.Entries(first, last+1, ^uint64(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if isProducer(e) {
			record.Batch(e.GetData()).AssignOffsets(0, 0)
		}
	}
	if err := ms.Append(ents); err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestCrashCampaign: a power loss at every filesystem operation of each
// write (the bootstrap snapshot and a first append that rolls segments, a
// follower's conflict: truncation then append of a new term, a snapshot
// the log holds, a hard state) leaves the store in a state raft accepts:
// the old log, the new one, or, for what was not acknowledged, one
// between; it reopens, appends, and fsck finds its partition clean.
func TestCrashCampaign(t *testing.T) {
	base := entries(t, 2, 40, 1)
	boot := func(s *Store) error {
		if err := s.ApplySnapshot(bootSnap(1, 2, 3)); err != nil {
			return err
		}
		return s.Append(base)
	}
	conflict := entries(t, 25, 35, 2)
	hs := &pb.HardState{Term: new(uint64(2)), Vote: new(uint64(3)), Commit: new(uint64(20))}
	cases := []struct {
		name     string
		prepare  func(*Store) error
		op       func(*Store) error
		outcomes []outcome
		check    func(*Store) error
	}{
		{"bootstrap and first append", func(*Store) error { return nil }, boot,
			[]outcome{{}, {logOf(base), 2, 1, 40}}, nil},
		{"follower conflict", boot, func(s *Store) error { return s.Append(conflict) },
			[]outcome{{logOf(base), 2, 24, 40}, {logOf(base[:23], conflict), 2, 24, 35}}, nil},
		{"snapshot held", boot, func(s *Store) error { return s.ApplySnapshot(snapAt(30, 1)) },
			[]outcome{{logOf(base), 2, 30, 40}, {logOf(base), 31, 30, 30}}, nil},
		{"hard state", boot, func(s *Store) error { return s.SetHardState(hs) },
			[]outcome{{logOf(base), 2, 40, 40}}, func(s *Store) error {
				got, _, err := s.InitialState()
				if err != nil {
					return err
				}
				if got.GetTerm() != 0 && (got.GetTerm() != 2 || got.GetVote() != 3 || got.GetCommit() != 20) {
					return fmt.Errorf("hard state %v, neither the old nor the new", got)
				}
				return nil
			}},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clones := crashEveryOp(t, uint64(ci), c.prepare, c.op)
			if len(clones) < 3 {
				t.Fatalf("only %d crash points", len(clones))
			}
			for i, fs := range clones {
				label := fmt.Sprintf("crash %d of %d", i, len(clones))
				s := openT(t, fs, crashDir)
				if err := matches(s, c.outcomes); err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if c.check != nil {
					if err := c.check(s); err != nil {
						t.Fatalf("%s: %v", label, err)
					}
				}
				checkEpochs(t, label, fs, s)
				// It goes on as raft would: the next entries, with a
				// newer term, after whatever it holds.
				last, _ := s.LastIndex()
				if err := s.Append(entries(t, last+1, last+3, 3)); err != nil {
					t.Fatalf("%s: appending at %d: %v", label, last+1, err)
				}
				oracle := copyOf(t, s)
				closeT(t, s)
				s = openT(t, fs, crashDir)
				compareStores(t, label+", appended and reopened", s, oracle)
				checkEpochs(t, label+", appended and reopened", fs, s)
				closeT(t, s)
				rep, err := fsck.Check(fs, crashDir, fsck.Options{})
				if err != nil {
					t.Fatal(err)
				}
				// What recovery cut of a torn tail, never acknowledged, it
				// keeps in a quarantine file (a warning): nothing else.
				for _, p := range rep.Problems {
					if p.Kind != fsck.KindQuarantine || p.Severity != fsck.Warning {
						t.Fatalf("%s: fsck: %+v", label, rep.Problems)
					}
				}
			}
		})
	}
}
