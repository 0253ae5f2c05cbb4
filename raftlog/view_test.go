package raftlog

import (
	"errors"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/vfs"
)

// TestLogView: the view Log returns follows what raft writes (appends, a
// suffix delete, a prefix compaction) without any write of its own, and
// answers ErrClosed once the Store is closed instead of reading the
// closed log as empty.
func TestLogView(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/raft")
	v := s.Log()
	for from := uint64(1); from <= 40; from += 10 {
		if err := s.StoreLogs(termEntries(from, from+9, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if v.StartOffset() != toOffset(1) || v.EndOffset() != toOffset(41) {
		t.Fatalf("view bounds [%d, %d) after 40 entries, want [%d, %d)", v.StartOffset(), v.EndOffset(), toOffset(1), toOffset(41))
	}
	if err := s.DeleteRange(31, 40); err != nil {
		t.Fatal(err)
	}
	if v.EndOffset() != toOffset(31) {
		t.Fatalf("view end %d after a suffix delete from 31, want %d", v.EndOffset(), toOffset(31))
	}
	if err := s.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	if v.StartOffset() > toOffset(11) {
		t.Fatalf("view start %d after a prefix delete to 10, want at most %d", v.StartOffset(), toOffset(11))
	}
	n := 0
	for _, err := range v.Records(v.StartOffset()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("the view read no records")
	}
	end := v.EndOffset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Read(toOffset(21), 1<<20, seglog.ReadOptions{}); !errors.Is(err, seglog.ErrClosed) {
		t.Fatalf("Read after Close: %v, want ErrClosed", err)
	}
	var last error
	for _, err := range v.Records(toOffset(21)) {
		last = err
	}
	if !errors.Is(last, seglog.ErrClosed) {
		t.Fatalf("Records after Close ended with %v, want ErrClosed", last)
	}
	if v.EndOffset() != end {
		t.Fatalf("view end %d after Close, want %d (its last)", v.EndOffset(), end)
	}
}
