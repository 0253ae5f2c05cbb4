package raftlog

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// storedBatch is what the partition holds for one batch.
type storedBatch struct {
	base   int64
	epoch  int32
	count  int
	size   int
	commit uint64 // the raft.commit its last record carries
}

// batchesOf reads every batch of s's partition.
func batchesOf(t *testing.T, s *Store) []storedBatch {
	t.Helper()
	var out []storedBatch
	for off := s.Log().StartOffset(); off < s.Log().EndOffset(); {
		b, err := s.readBatch(off)
		if err != nil {
			t.Fatal(err)
		}
		sb := storedBatch{base: b.BaseOffset(), epoch: b.PartitionLeaderEpoch(), size: b.Size()}
		for r, err := range b.Records() {
			if err != nil {
				t.Fatal(err)
			}
			sb.count++
			sb.commit = commitOf(r)
		}
		out = append(out, sb)
		off = b.NextOffset()
	}
	return out
}

// TestOneBatchPerStoreLogs: a leader's StoreLogs (one term) is one batch
// stamped with its term; a follower's call spanning terms is one batch per
// run of equal terms; a call larger than MaxBatchBytes is split into
// batches within it, the commit index on the last; an entry that no batch
// can hold is refused before anything is written.
func TestOneBatchPerStoreLogs(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open("/raft", Options{FS: fs, SegmentBytes: 1 << 20, MaxBatchBytes: 16384, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.StageCommitIndex(7); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(1, 64, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.StageCommitIndex(64); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(concat(entries(65, 66, 1), entries(67, 69, 2), entries(70, 70, 3))); err != nil {
		t.Fatal(err)
	}
	want := []storedBatch{{0, 1, 64, 0, 7}, {64, 1, 2, 0, 0}, {66, 2, 3, 0, 0}, {69, 3, 1, 0, 64}}
	got := batchesOf(t, s)
	for i := range got {
		got[i].size = 0
	}
	if !slices.Equal(got, want) {
		t.Fatalf("batches %+v, want %+v", got, want)
	}

	// 20 entries of 3000 bytes do not fit one 16 KiB batch.
	big := entries(71, 90, 4)
	for _, l := range big {
		l.Data = make([]byte, 3000)
	}
	if err := s.StageCommitIndex(80); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(big); err != nil {
		t.Fatal(err)
	}
	split := batchesOf(t, s)[len(want):]
	n := 0
	for i, b := range split {
		if b.size > 16384 || b.epoch != 4 || (b.commit != 0) != (i == len(split)-1) {
			t.Fatalf("batch %d of the split call: %+v", i, b)
		}
		n += b.count
	}
	if len(split) < 4 || n != 20 || split[len(split)-1].commit != 80 {
		t.Fatalf("the split call: %+v", split)
	}

	// One entry too large for any batch: refused, nothing written, not
	// even its term in the leader-epoch checkpoint.
	before := tree(t, fs, "/raft")
	huge := entries(91, 93, 5)
	huge[1].Data = make([]byte, 16384-record.HeaderSize)
	err = s.StoreLogs(huge)
	if !errors.Is(err, ErrBadEntry) {
		t.Fatalf("an entry larger than a batch: %v, want ErrBadEntry", err)
	}
	if last, _ := s.LastIndex(); last != 90 {
		t.Fatalf("last index %d after the refused call, want 90", last)
	}
	if after := tree(t, fs, "/raft"); !maps.Equal(before, after) {
		t.Fatal("the refused StoreLogs changed the Store's files")
	}
	// The log goes on, and still refuses what seglog refuses.
	if err := s.StoreLogs(entries(91, 91, 5)); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := s.GetLog(91, &l); err != nil || l.Term != 5 {
		t.Fatalf("GetLog(91) = %+v, %v", l, err)
	}
	// The largest entry a batch holds, with every header, is stored and
	// within the limit; one byte more is refused.
	edge := entries(92, 93, 5)
	edge[0].Type, edge[0].Extensions = raft.LogConfiguration, []byte("e")
	edge[0].Data = make([]byte, 16384-169-len(edge[0].Extensions))
	if err := s.StageCommitIndex(92); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(edge[:1]); err != nil {
		t.Fatalf("the largest entry: %v", err)
	}
	if bs := batchesOf(t, s); bs[len(bs)-1].size > 16384 || bs[len(bs)-1].commit != 92 {
		t.Fatalf("the largest entry's batch: %+v", bs[len(bs)-1])
	}
	edge[1].Data = make([]byte, 16384-168)
	if err := s.StoreLogs(edge[1:]); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("one byte more: %v", err)
	}
}
