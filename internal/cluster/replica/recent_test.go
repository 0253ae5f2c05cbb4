package replica

import (
	"errors"
	"testing"

	"github.com/seglog/seglog/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestRecentEntries: the entries just appended are answered from memory
// exactly as a reopened Store reads them from the partition (the stored,
// stamped batches; empty and configuration entries alike), maxSize
// included; a truncation forgets them, and the entries after it are
// answered anew.
func TestRecentEntries(t *testing.T) {
	fs := vfs.NewMem()
	const dir = "/data/t-0"
	s := openT(t, fs, dir)
	bootT(t, s)
	if err := s.Append(entries(t, 2, 30, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(entries(t, 20, 40, 2)); err != nil {
		t.Fatal(err)
	}
	s.idx.RLock()
	held := len(s.recent)
	s.idx.RUnlock()
	if held == 0 {
		t.Fatal("no recent entries after an append")
	}
	type read struct{ lo, hi, max uint64 }
	reads := []read{{2, 41, ^uint64(0)}, {20, 41, ^uint64(0)}, {25, 30, ^uint64(0)}, {20, 41, 300}, {40, 41, 0}}
	var got [][]*pb.Entry
	for _, r := range reads {
		ents, err := s.Entries(r.lo, r.hi, r.max)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ents)
	}
	closeT(t, s)
	s = openT(t, fs, dir)
	defer func() { closeT(t, s) }()
	for k, r := range reads {
		want, err := s.Entries(r.lo, r.hi, r.max)
		if err != nil {
			t.Fatal(err)
		}
		if len(got[k]) != len(want) {
			t.Fatalf("Entries(%d, %d, %d): %d entries, reopened %d", r.lo, r.hi, r.max, len(got[k]), len(want))
		}
		for i := range want {
			if !proto.Equal(got[k][i], want[i]) {
				t.Fatalf("Entries(%d, %d, %d): entry %d differs from the one read back: %v, %v", r.lo, r.hi, r.max, want[i].GetIndex(), got[k][i], want[i])
			}
		}
	}
	// A conflict truncates: the entries after it are the new ones.
	repl := entries(t, 35, 36, 3)
	if err := s.Append(repl); err != nil {
		t.Fatal(err)
	}
	ents, err := s.Entries(34, 37, ^uint64(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 3 || ents[1].GetTerm() != 3 || ents[2].GetTerm() != 3 || ents[0].GetTerm() != 2 {
		t.Fatalf("after a conflict at 35: %v", ents)
	}
	if _, err := s.Entries(34, 38, ^uint64(0)); err == nil {
		t.Fatal("Entries past the truncated end answered")
	} else if !errors.Is(err, raft.ErrUnavailable) {
		t.Fatalf("Entries past the end: %v", err)
	}
}
