package replica

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestContract drives a Store and raft.MemoryStorage (etcd's reference
// Storage) with the same random operations (appends overlapping the tail
// in a newer term, hard states, snapshots the log holds, out of date or
// past it, reads of Entries under a size limit) and checks that they
// answer every read the same way, and that the Store, reopened after
// every step, still does.
func TestContract(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			contractRun(t, seed, 120)
		})
	}
}

// writes are the write side both a Store and raft.MemoryStorage have.
type writes interface {
	Append([]*pb.Entry) error
	ApplySnapshot(*pb.Snapshot) error
	SetHardState(*pb.HardState) error
}

func contractRun(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	fs := vfs.NewMem()
	const dir = "/data/t-0"
	s := openT(t, fs, dir)
	defer func() { closeT(t, s) }()
	oracle := newOracle()
	both := func(what string, f func(st writes) error) {
		t.Helper()
		gerr, werr := f(s), f(oracle)
		if !errors.Is(gerr, werr) {
			t.Fatalf("%s: %v, oracle %v", what, gerr, werr)
		}
	}
	term := uint64(1)
	if seed%2 == 0 {
		both("bootstrap", func(st writes) error {
			return st.ApplySnapshot(bootSnap(1, 2, 3))
		})
	}
	for step := range steps {
		first, _ := oracle.FirstIndex()
		last, _ := oracle.LastIndex()
		var what string
		switch op := rng.IntN(10); {
		case op < 5:
			lo := first + uint64(rng.IntN(int(last-first)+2))
			if rng.IntN(8) == 0 && first > 3 {
				lo = first - 2 // partly below the snapshot: skipped
			}
			if lo <= last {
				term++ // a new leader's entries replace the tail
			}
			ents := entries(t, lo, lo+uint64(rng.IntN(8)), term)
			what = fmt.Sprintf("append [%d, %d] term %d", lo, ents[len(ents)-1].GetIndex(), term)
			both(what, func(st writes) error {
				return st.Append(ents)
			})
		case op < 6:
			hs := &pb.HardState{Term: new(term), Vote: new(uint64(rng.IntN(4))), Commit: new(uint64(rng.IntN(int(last) + 1)))}
			what = fmt.Sprintf("hard state %v", hs)
			both(what, func(st writes) error {
				return st.SetHardState(hs)
			})
		case op < 7 && first <= last:
			i := first + uint64(rng.IntN(int(last-first)+1))
			it, _ := oracle.Term(i)
			what = fmt.Sprintf("snapshot at %d term %d", i, it)
			both(what, func(st writes) error {
				return st.ApplySnapshot(snapAt(i, it))
			})
		case op < 8:
			ft, _ := oracle.Term(first - 1)
			what = fmt.Sprintf("snapshot at %d, out of date", first-1)
			both(what, func(st writes) error {
				return st.ApplySnapshot(snapAt(first-1, ft))
			})
		case op < 9:
			what = fmt.Sprintf("snapshot at %d, past the log", last+5)
			snap := snapAt(last+5, term)
			snap.Data = encodeSnapData(s.Log().EndOffset() + 1000)
			if err := s.ApplySnapshot(snap); !errors.Is(err, ErrSnapshotNeedsData) {
				t.Fatalf("step %d: %s: %v, want ErrSnapshotNeedsData", step, what, err)
			}
		default:
			if first > last {
				continue
			}
			lo := first + uint64(rng.IntN(int(last-first)+1))
			hi := lo + 1 + uint64(rng.IntN(int(last-lo)+1))
			max := uint64(rng.IntN(400))
			what = fmt.Sprintf("entries [%d, %d) max %d", lo, hi, max)
			got, err := s.Entries(lo, hi, max)
			if err != nil {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
			want, _ := oracle.Entries(lo, hi, max)
			if len(got) != len(want) {
				t.Fatalf("step %d: %s: %d entries, oracle %d", step, what, len(got), len(want))
			}
			for i := range got {
				if err := sameEntry(got[i], want[i]); err != nil {
					t.Fatalf("step %d: %s: %v", step, what, err)
				}
			}
		}
		compareStores(t, fmt.Sprintf("step %d, %s", step, what), s, oracle)
		checkEpochs(t, fmt.Sprintf("step %d, %s", step, what), fs, s)
		closeT(t, s)
		s = openT(t, fs, dir)
		compareStores(t, fmt.Sprintf("step %d, %s, reopened", step, what), s, oracle)
	}
}

// memOracle is raft.MemoryStorage with the two rules the Store adds: a
// snapshot raises the commit index to its own index in the same write
// (ApplySnapshot), so a crash before the driver's SetHardState cannot
// leave a commit below the log's first entry; and InitialState never
// answers a commit index below the first entry's predecessor (every entry
// below the first was committed; the Store saves the commit index lazily
// while retention and CompactTo move the first entry at once).
type memOracle struct{ *raft.MemoryStorage }

func (o memOracle) InitialState() (*pb.HardState, *pb.ConfState, error) {
	hs, cs, err := o.MemoryStorage.InitialState()
	if err != nil {
		return nil, nil, err
	}
	if first, _ := o.FirstIndex(); hs.GetCommit() < first-1 {
		hs = &pb.HardState{Term: new(hs.GetTerm()), Vote: new(hs.GetVote()), Commit: new(first - 1)}
	}
	return hs, cs, nil
}

func newOracle() memOracle { return memOracle{raft.NewMemoryStorage()} }

func (o memOracle) ApplySnapshot(snap *pb.Snapshot) error {
	if err := o.MemoryStorage.ApplySnapshot(snap); err != nil {
		return err
	}
	hs, _, err := o.InitialState()
	if err != nil {
		return err
	}
	if idx := snap.GetMetadata().GetIndex(); idx > hs.GetCommit() {
		return o.SetHardState(&pb.HardState{Term: new(hs.GetTerm()), Vote: new(hs.GetVote()), Commit: new(idx)})
	}
	return nil
}
