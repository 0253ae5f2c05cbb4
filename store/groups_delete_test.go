package store

import (
	"errors"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// DeleteOffsets tombstones only the partitions named, and the deletion
// holds after a reopen replays the offsets topic.
func TestDeleteOffsets(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	mustf(t, s.CreateTopic("t", 3, smallConfig()), "create")
	for p := range int32(3) {
		_, err := s.ProduceTo("t", p, kv("a", "1"))
		mustf(t, err, "produce")
	}
	mustf(t, s.Commit("g", "t", map[int32]int64{0: 1, 1: 1, 2: 0}), "commit")
	mustf(t, s.DeleteOffsets("g", "t", 0, 2, 2, 7), "delete offsets")
	if err := s.DeleteOffsets("nobody", "t", 0); !errors.Is(err, ErrUnknownGroup) {
		t.Errorf("unknown group: %v", err)
	}
	mustf(t, s.Close(), "close")
	s = openStore(t, fs, clock)
	defer s.Close()
	for p, want := range map[int32]bool{0: false, 1: true, 2: false} {
		if _, ok := s.CommittedOffset("g", "t", p); ok != want {
			t.Errorf("partition %d committed %v after reopen, want %v", p, ok, want)
		}
	}
	mustf(t, s.DeleteOffsets("g", "t", 1), "delete the last offset")
	if len(s.Groups()) != 0 {
		t.Errorf("groups after every offset deleted: %v", s.Groups())
	}
}
