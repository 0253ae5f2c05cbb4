package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// fillSegments appends records until the partition has at least n
// segments, and returns the Writer.
func fillSegments(t *testing.T, s *Store, name string, n int) Writer {
	t.Helper()
	w, err := s.Writer(name, 0)
	mustf(t, err, "writer")
	for i := 0; w.View().NumSegments() < n; i++ {
		_, err := w.Append(kv(fmt.Sprintf("k%d", i%4), fmt.Sprintf("value %d %0200d", i, i)))
		mustf(t, err, "append %d", i)
	}
	return w
}

// The cleaning floor holds retention back: no segment holding the floor
// or anything after it goes, whatever retention.bytes says; lifting it
// lets the cleaner delete as before; a floor never deletes more.
func TestCleaningFloorHoldsRetention(t *testing.T) {
	fsys := vfs.NewMem()
	s := openStore(t, fsys, newFakeClock())
	defer s.Close()
	cfg := smallConfig()
	cfg.RetentionBytes = 1
	mustf(t, s.CreateTopic("r", 1, cfg), "create")
	w := fillSegments(t, s, "r", 6)
	segs := w.View().Segments()
	floor := segs[2].BaseOffset + 1 // inside the third segment
	w.SetCleaningFloor(floor)
	if got, ok := w.CleaningFloor(); !ok || got != floor {
		t.Fatalf("CleaningFloor %d %v, want %d", got, ok, floor)
	}
	_, err := s.Clean(context.Background(), "r")
	mustf(t, err, "clean")
	if start := w.View().StartOffset(); start != segs[2].BaseOffset {
		t.Fatalf("start %d after retention under floor %d, want the floor's segment base %d", start, floor, segs[2].BaseOffset)
	}
	// A floor of 0 deletes nothing more.
	w.SetCleaningFloor(0)
	_, err = s.Clean(context.Background(), "r")
	mustf(t, err, "clean")
	if start := w.View().StartOffset(); start != segs[2].BaseOffset {
		t.Fatalf("start %d after a lower floor, want %d kept", start, segs[2].BaseOffset)
	}
	w.SetCleaningFloor(-1)
	_, err = s.Clean(context.Background(), "r")
	mustf(t, err, "clean")
	if start, last := w.View().StartOffset(), w.View().Segments(); start != last[len(last)-1].BaseOffset {
		t.Fatalf("start %d with no floor, want the last segment's base %d", start, last[len(last)-1].BaseOffset)
	}
}

// A replicated partition (raft's files in its directory) is not cleaned
// until its Writer sets a floor in this session: after a restart the
// cleaner must not run ahead of raft.
func TestReplicatedPartitionHeldWithoutFloor(t *testing.T) {
	fsys := vfs.NewMem()
	s := openStore(t, fsys, newFakeClock())
	cfg := smallConfig()
	cfg.RetentionBytes = 1
	mustf(t, s.CreateTopic("r", 1, cfg), "create")
	w := fillSegments(t, s, "r", 4)
	mustf(t, vfs.WriteFileAtomic(fsys, filepath.Join(testDir, layout.PartitionDirName("r", 0), layout.RaftStateFile), []byte("x")), "raft state")
	segs := w.View().Segments()
	_, err := s.Clean(context.Background(), "r")
	mustf(t, err, "clean")
	if start, n := w.View().StartOffset(), w.View().NumSegments(); start != 0 || n != len(segs) {
		t.Fatalf("a replicated partition with no floor was cleaned to %d, %d segments of %d", start, n, len(segs))
	}
	w.SetCleaningFloor(segs[1].NextOffset)
	_, err = s.Clean(context.Background(), "r")
	mustf(t, err, "clean")
	if start := w.View().StartOffset(); start != segs[2].BaseOffset {
		t.Fatalf("start %d under a floor at the third segment, want %d", start, segs[2].BaseOffset)
	}
}

// Compaction rewrites only sealed segments wholly below the floor: the
// segments from the floor's on are byte for byte as they were.
func TestCleaningFloorHoldsCompaction(t *testing.T) {
	fsys := vfs.NewMem()
	s := openStore(t, fsys, newFakeClock())
	defer s.Close()
	cfg := smallConfig()
	cfg.CleanupPolicy = cleaner.Compact
	cfg.MinCleanableDirtyRatio = 0
	mustf(t, s.CreateTopic("c", 1, cfg), "create")
	w := fillSegments(t, s, "c", 6)
	segs := w.View().Segments()
	w.SetCleaningFloor(segs[3].BaseOffset + 1)
	dir := filepath.Join(testDir, layout.PartitionDirName("c", 0))
	keep := map[string][]byte{}
	for _, sg := range segs[3:] {
		name := filepath.Join(dir, layout.FileName(sg.BaseOffset, layout.LogSuffix))
		data, err := vfs.ReadFileLimit(fsys, name, 1<<20)
		mustf(t, err, "read %s", name)
		keep[name] = data
	}
	res, err := s.Clean(context.Background(), "c")
	mustf(t, err, "clean")
	if len(res) != 1 || res[0].Err != nil || res[0].Compacted == nil || res[0].Compacted.SegmentsRead == 0 {
		t.Fatalf("no compaction below the floor: %+v", res)
	}
	if got := res[0].Compacted.End; got > segs[3].BaseOffset {
		t.Fatalf("compaction reached %d, past the floor's segment %d", got, segs[3].BaseOffset)
	}
	for name, data := range keep {
		got, err := vfs.ReadFileLimit(fsys, name, 1<<20)
		mustf(t, err, "read %s", name)
		if string(got) != string(data) {
			t.Fatalf("%s changed under the floor", name)
		}
	}
}
