package store

import (
	"errors"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// offsetsEnds returns the end offset of every offsets partition.
func offsetsEnds(t *testing.T, s *Store) []int64 {
	t.Helper()
	info, err := s.DescribeTopic(OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, p := range info.Partitions {
		out = append(out, p.EndOffset)
	}
	return out
}

// TestReplicatedOffsetsNeverWritten: a store whose offsets topic a cluster
// replicates neither replays it at Open nor writes it: commits and
// deletions are refused, and a topic deleted after a commit leaves no
// tombstone behind, at the deletion or at the next Open, where a store
// that replays its offsets topic writes them.
func TestReplicatedOffsetsNeverWritten(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, fs, newFakeClock())
	mustf(t, s.CreateTopic("t", 1, smallConfig()), "create")
	mustf(t, s.Commit("grp", "t", map[int32]int64{0: 3}), "commit")
	mustf(t, s.Close(), "close")

	open := func() *Store {
		s, err := Open(testDir, Options{FS: fs, OffsetsPartitions: 5, Logger: quiet, OffsetsConfig: &offsetsCfg, ReplicatedOffsets: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s = open()
	if !s.ReplicatedOffsets() {
		t.Fatal("ReplicatedOffsets() is false")
	}
	if _, ok := s.CommittedOffset("grp", "t", 0); ok || len(s.Groups()) != 0 {
		t.Fatal("the offsets topic was replayed")
	}
	before := offsetsEnds(t, s)
	for name, err := range map[string]error{
		"commit":         s.Commit("grp", "t", map[int32]int64{0: 4}),
		"delete group":   s.DeleteGroup("grp"),
		"delete offsets": s.DeleteOffsets("grp", "t", 0),
	} {
		if !errors.Is(err, ErrReplicatedOffsets) {
			t.Errorf("%s: %v, want ErrReplicatedOffsets", name, err)
		}
	}
	mustf(t, s.DeleteTopic("t"), "delete topic")
	mustf(t, s.Close(), "close")
	s = open()
	defer s.Close()
	after := offsetsEnds(t, s)
	for p := range before {
		if before[p] != after[p] {
			t.Fatalf("offsets partition %d went from end %d to %d", p, before[p], after[p])
		}
	}
}

// TestCommitCodecExported: EncodeCommit and DecodeCommit are the codec
// the store replays with, tombstones included.
func TestCommitCodecExported(t *testing.T) {
	r := EncodeCommit("g", "t", 7, &Committed{Offset: 42, Timestamp: 5})
	g, topic, p, c, ok, err := DecodeCommit(r.Key, r.Value)
	if err != nil || !ok || g != "g" || topic != "t" || p != 7 || c == nil || *c != (Committed{Offset: 42, Timestamp: 5}) {
		t.Fatalf("decoded %q %q %d %+v %v %v", g, topic, p, c, ok, err)
	}
	r = EncodeCommit("g", "t", 7, nil)
	if _, _, _, c, ok, err := DecodeCommit(r.Key, r.Value); err != nil || !ok || c != nil {
		t.Fatalf("tombstone decoded as %+v %v %v", c, ok, err)
	}
	if _, _, _, _, ok, err := DecodeCommit([]byte{0, 2, 0, 1, 'g'}, nil); ok || err != nil {
		t.Fatalf("a group metadata key: ok %v err %v, want neither", ok, err)
	}
}
