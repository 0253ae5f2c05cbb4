package raftlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/crashtest"
	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/raftlog"
	"github.com/seglog/seglog/vfs"
)

func campaignRaftOptions(fs vfs.FS) raftlog.Options {
	return raftlog.Options{FS: fs, SegmentBytes: 1024, MaxBatchBytes: 512, Logger: slog.New(slog.DiscardHandler)}
}

// entryData is the data of the entry at index in term: a reopened store's
// entries are checked against it alone.
func entryData(index, term uint64) []byte {
	r := rand.New(rand.NewPCG(index, term))
	d := make([]byte, 4+r.IntN(120))
	for i := range d {
		d[i] = byte(r.Uint32())
	}
	return d
}

// raftState is what a Store answers: its range, the term of each entry
// (its data follows from index and term) and the stable key.
type raftState struct {
	first, last uint64
	terms       []uint64 // terms[i] is the term of first+i
	stable      string
}

func (s raftState) String() string {
	return fmt.Sprintf("[%d,%d] stable %q", s.first, s.last, s.stable)
}

func (s raftState) same(o raftState) bool {
	return s.first == o.first && s.last == o.last && slices.Equal(s.terms, o.terms) && s.stable == o.stable
}

func readRaftState(s *raftlog.Store) (raftState, error) {
	var st raftState
	var err error
	if st.first, err = s.FirstIndex(); err != nil {
		return st, err
	}
	if st.last, err = s.LastIndex(); err != nil {
		return st, err
	}
	if st.last != 0 {
		for i := st.first; i <= st.last; i++ {
			var l raft.Log
			if err := s.GetLog(i, &l); err != nil {
				return st, fmt.Errorf("GetLog(%d): %w", i, err)
			}
			if l.Index != i || !bytes.Equal(l.Data, entryData(i, l.Term)) {
				return st, fmt.Errorf("entry %d (index %d term %d) holds data never stored there", i, l.Index, l.Term)
			}
			st.terms = append(st.terms, l.Term)
		}
	}
	v, err := s.Get([]byte("vote"))
	if err != nil {
		return st, err
	}
	st.stable = string(v)
	c, err := s.GetCommitIndex()
	if err != nil {
		return st, err
	}
	if st.last != 0 && c > st.last {
		return st, fmt.Errorf("commit index %d past the last index %d", c, st.last)
	}
	return st, nil
}

type raftOp struct {
	kind     string // store, prefix, suffix, all, stable, commit
	min, max uint64
}

func (o raftOp) String() string { return fmt.Sprintf("%s[%d,%d]", o.kind, o.min, o.max) }

// raftAcceptable: a crash during op leaves the state before or after it;
// a StoreLogs split into several batches may also keep a prefix of its
// entries, and a prefix delete may have moved the first index part of the
// way.
func raftAcceptable(got, before, after raftState, op raftOp) bool {
	if got.same(before) || got.same(after) {
		return true
	}
	if got.stable != before.stable {
		return false
	}
	switch op.kind {
	case "store":
		return got.first == after.first && got.last >= before.last && got.last <= after.last &&
			slices.Equal(got.terms, after.terms[:len(got.terms)])
	case "suffix":
		// Segments past the cut go before the cut itself: a crash between
		// leaves a prefix of the old log, which raft reconciles as any
		// stale follower's log.
		return got.first == before.first && got.last >= after.last && got.last <= before.last &&
			slices.Equal(got.terms, before.terms[:len(got.terms)])
	case "prefix":
		return got.last == before.last && got.first >= before.first && got.first <= after.first &&
			slices.Equal(got.terms, before.terms[got.first-before.first:])
	}
	return false
}

// TestRaftCrashCampaign takes a power loss at every filesystem operation
// of random runs of StoreLogs (with rising terms and staged commit
// indexes), prefix deletes (compaction after a snapshot), suffix deletes
// (a follower dropping a conflicting tail, also inside a batch), deletes
// of everything and stable-store writes. Each image must reopen to the
// state before the op in flight or after it (or, for a split StoreLogs or
// a prefix delete, a state between), every entry must hold its own data,
// the commit index must not pass the last index, the store must take the
// next entries, and fsck must find the partition clean.
func TestRaftCrashCampaign(t *testing.T) {
	if soak.Race {
		// Every clone and reopen copies or zeroes the partition's 10 MiB
		// preallocated indexes, which under the race detector's shadow
		// memory costs seconds each; nothing here is concurrent, and the
		// normal run covers it.
		t.Skip("too slow under the race detector; covered by the normal run")
	}
	runs := 4 * soak.Scale()
	points := 0
	for r := 0; r < runs; r++ {
		seed := soak.Seed()<<32 | uint64(r)
		points += runRaftCampaign(t, seed, 30)
		if t.Failed() {
			t.Fatalf("run seed %d failed (replay: go test ./raftlog -run TestRaftCrashCampaign -soak.seed=%d -soak.scale=%d)", seed, soak.Seed(), soak.Scale())
		}
	}
	t.Logf("%d crash points over %d runs", points, runs)
	soak.Count(t, "crash_points", points)
	if points < 25*runs {
		t.Errorf("only %d crash points", points)
	}
}

func runRaftCampaign(t *testing.T, seed uint64, nops int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 6))
	mem := vfs.NewMem()
	// The recorder's state is the number of the op in flight (0: Open).
	// It samples: a raft partition's preallocated indexes make each clone
	// cost megabytes.
	rec := crashtest.New(mem, 0, nil, crashtest.Options{Rand: rand.New(rand.NewPCG(seed, 7)), TornStream: 3, Chance: 0.04, KeepUnsynced: 0.7})
	s, err := raftlog.Open("/raft", campaignRaftOptions(vfs.Inject(mem, rec)))
	if err != nil {
		t.Fatal(err)
	}
	term := uint64(1)
	st, err := readRaftState(s)
	if err != nil {
		t.Fatal(err)
	}
	states := []raftState{st}
	var ops []raftOp
	total := 0
	rec.Arm(true)
	for i := 1; i <= nops; i++ {
		rec.Set(i)
		var op raftOp
		cur := states[len(states)-1]
		empty := cur.last == 0 || cur.last < cur.first
		switch k := rng.IntN(10); {
		case k < 5 || empty:
			if rng.IntN(4) == 0 {
				term++
			}
			next := cur.last + 1
			if cur.last == 0 {
				next = max(cur.first, 1)
			}
			n := 1 + rng.IntN(12)
			logs := make([]*raft.Log, n)
			for j := range logs {
				idx := next + uint64(j)
				logs[j] = &raft.Log{Index: idx, Term: term, Type: raft.LogCommand, Data: entryData(idx, term)}
			}
			if rng.IntN(2) == 0 {
				if err := s.StageCommitIndex(next - 1 + uint64(rng.IntN(n+1))); err != nil {
					t.Fatal(err)
				}
			}
			op = raftOp{"store", next, next + uint64(n) - 1}
			err = s.StoreLogs(logs)
		case k < 7:
			op = raftOp{"prefix", 0, cur.first + uint64(rng.Int64N(int64(cur.last-cur.first+1)))}
			if op.max == cur.last {
				op.kind = "all"
			}
			err = s.DeleteRange(op.min, op.max)
		case k < 9:
			op = raftOp{"suffix", cur.first + uint64(rng.Int64N(int64(cur.last-cur.first+1))), cur.last}
			if op.min == cur.first {
				op.kind = "all"
			}
			err = s.DeleteRange(op.min, op.max)
		default:
			op = raftOp{"stable", 0, 0}
			err = s.Set([]byte("vote"), []byte(fmt.Sprintf("v%d", i)))
		}
		if err != nil {
			t.Fatalf("seed %d op %d %v: %v", seed, i, op, err)
		}
		ops = append(ops, op)
		st, err := readRaftState(s)
		if err != nil {
			t.Fatalf("seed %d after op %d %v: %v", seed, i, op, err)
		}
		states = append(states, st)
		total += checkRaftPoints(t, rec, seed, states, ops, term)
	}
	rec.Set(nops + 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rec.Arm(false)
	ops = append(ops, raftOp{kind: "close"})
	states = append(states, states[len(states)-1])
	total += checkRaftPoints(t, rec, seed, states, ops, term)
	return total
}

// checkRaftPoints verifies the clones taken so far and drops them.
func checkRaftPoints(t *testing.T, rec *crashtest.Recorder[int], seed uint64, states []raftState, ops []raftOp, term uint64) int {
	t.Helper()
	points := rec.Take()
	for _, p := range points {
		inflight := p.State
		before, after, op := states[0], states[0], raftOp{kind: "open"}
		if inflight > 0 {
			before, after, op = states[inflight-1], states[inflight], ops[inflight-1]
		}
		label := fmt.Sprintf("seed %d: crash at fs op %d (%v %s, torn %v) during op %d %v", seed, p.N, p.Op.Kind, p.Op.Path, p.Torn, inflight, op)
		r, err := raftlog.Open("/raft", campaignRaftOptions(p.FS))
		if err != nil {
			t.Fatalf("%s: reopen: %v", label, err)
		}
		got, err := readRaftState(r)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if !raftAcceptable(got, before, after, op) {
			t.Fatalf("%s: reopened %v %v\nbefore %v %v\nafter  %v %v\nops %v\nstates %v", label, got, got.terms, before, before.terms, after, after.terms, ops, states)
		}
		next := got.last + 1
		if got.last == 0 {
			next = max(got.first, 1)
		}
		if err := r.StoreLogs([]*raft.Log{{Index: next, Term: term + 1, Type: raft.LogCommand, Data: entryData(next, term+1)}}); err != nil && !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("%s: StoreLogs after reopening at %d: %v", label, next, err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("%s: close: %v", label, err)
		}
		fscktest.CheckClean(t, p.FS, filepath.Join("/raft", raftlog.PartitionDir))
		if t.Failed() {
			t.Fatalf("%s: fsck", label)
		}
	}
	return len(points)
}
