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

// TestAppliedLetsGo: Applied drops the recent entries at or below its
// index, and Entries still answers every entry the same (those let go
// from the partition); entries appended after it are kept again.
func TestAppliedLetsGo(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, "/data/t-0")
	defer func() { closeT(t, s) }()
	bootT(t, s)
	if err := s.Append(entries(t, 2, 30, 1)); err != nil {
		t.Fatal(err)
	}
	before, err := s.Entries(2, 31, ^uint64(0))
	if err != nil {
		t.Fatal(err)
	}
	held := func() (first uint64, n int) {
		s.idx.RLock()
		defer s.idx.RUnlock()
		if len(s.recent) > 0 {
			first = s.recent[0].GetIndex()
		}
		return first, len(s.recent)
	}
	s.Applied(1) // below every recent entry: nothing moves
	if first, n := held(); first != 2 || n != 29 {
		t.Fatalf("after Applied(1): recent from %d, %d entries; want from 2, 29", first, n)
	}
	s.Applied(20)
	if first, n := held(); first != 21 || n != 10 {
		t.Fatalf("after Applied(20): recent from %d, %d entries; want from 21, 10", first, n)
	}
	s.idx.RLock()
	var size uint64
	for _, n := range s.recentSizes {
		size += n
	}
	bytes := s.recentBytes
	s.idx.RUnlock()
	if uint64(bytes) != size {
		t.Fatalf("recentBytes %d, the sizes kept add up to %d", bytes, size)
	}
	after, err := s.Entries(2, 31, ^uint64(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("%d entries after Applied, %d before", len(after), len(before))
	}
	for i := range before {
		if !proto.Equal(before[i], after[i]) {
			t.Fatalf("entry %d differs after Applied: %v, %v", before[i].GetIndex(), before[i], after[i])
		}
	}
	s.Applied(100) // past the last: all let go
	if _, n := held(); n != 0 {
		t.Fatalf("after Applied past the end: %d recent entries", n)
	}
	if err := s.Append(entries(t, 31, 32, 1)); err != nil {
		t.Fatal(err)
	}
	if first, n := held(); first != 31 || n != 2 {
		t.Fatalf("after the next append: recent from %d, %d entries; want from 31, 2", first, n)
	}
}
