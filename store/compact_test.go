package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// The offsets topic is compacted by the store's cleaner: many commits of
// one group shrink to about one record per partition, the committed
// offsets rebuilt on reopen are unchanged, the cleaner's checkpoint is a
// line of the log.dir's cleaner-offset-checkpoint (none in the partition
// directory), and a deleted group's tombstones go once
// delete.retention.ms has passed.
func TestOffsetsTopicCompacted(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	oc := offsetsTopicConfig()
	if oc.CleanupPolicy.String() != "compact" {
		t.Fatalf("the offsets topic's cleanup.policy is %s", oc.CleanupPolicy)
	}
	oc.SegmentBytes = 4 << 10
	oc.MaxMessageBytes = 2 << 10
	oc.SegmentIndexBytes = 4096
	open := func() *Store {
		s, err := Open(testDir, Options{FS: fs, OffsetsPartitions: 1, OffsetsConfig: &oc, Clock: clock,
			Logger: quiet, DedupeBufferBytes: 1 << 20, MaxOpenLogs: testMaxOpenLogs})
		mustf(t, err, "open")
		return s
	}
	s := open()
	defer func() { s.Close() }()
	mustf(t, s.CreateTopic("t", 4, smallConfig()), "create")
	for i := range 100 {
		_, err := s.Produce("t", kv(string(rune('a'+i%26))+string(rune('a'+i/26)), "v"))
		mustf(t, err, "produce")
	}
	ends := make(map[int32]int64)
	for p := range int32(4) {
		l, _ := s.Log("t", p)
		ends[p] = l.EndOffset()
	}
	commitRound := func(i int) {
		offs := make(map[int32]int64)
		for p, end := range ends {
			offs[p] = int64(i) % (end + 1)
		}
		mustf(t, s.Commit("g", "t", offs), "commit")
	}
	for i := range 400 {
		commitRound(i)
	}
	for range 5 {
		mustf(t, s.Commit("h", "t", map[int32]int64{0: 1, 1: 1}), "commit h")
	}
	mustf(t, s.DeleteGroup("h"), "delete h")
	for i := range 100 {
		commitRound(i) // so that the tombstones are in a sealed segment
	}
	want := committedOf(s, "g", 4)

	ol, _ := s.Log(OffsetsTopic, 0)
	before, recsBefore := ol.Size(), len(partitionRecords(t, s, OffsetsTopic, 0, 0))
	mustf(t, s.CleanOnce(context.Background()), "cleaner round")
	after := ol.Size()
	recs := partitionRecords(t, s, OffsetsTopic, 0, 0)
	if after*4 > before || len(recs)*4 > recsBefore {
		t.Fatalf("compaction left %d of %d bytes, %d of %d records", after, before, len(recs), recsBefore)
	}
	if tombstones(recs) == 0 {
		t.Error("group h's tombstones went before delete.retention.ms")
	}
	cp, ok, err := layout.PartitionOffset(fs, filepath.Join(testDir, layout.CleanerOffsetFile), OffsetsTopic, 0)
	if err != nil || !ok || cp == 0 {
		t.Errorf("log.dir cleaner-offset-checkpoint for %s-0: %d, %v", OffsetsTopic, cp, err)
	}
	if _, err := fs.Stat(filepath.Join(testDir, OffsetsTopic+"-0", layout.CleanerOffsetFile)); err == nil {
		t.Error("a cleaner-offset-checkpoint inside the partition directory")
	}

	mustf(t, s.Close(), "close")
	s = open()
	if got := committedOf(s, "g", 4); !slices.Equal(got, want) {
		t.Fatalf("after compaction and reopen g's offsets are %v, were %v", got, want)
	}
	if g := s.Groups(); !slices.Equal(g, []string{"g"}) {
		t.Fatalf("groups after reopen: %v", g)
	}

	// Past delete.retention.ms (24 h), the next round drops the
	// tombstones; it runs once enough is dirty again.
	clock.Advance(25 * time.Hour)
	for i := range 400 {
		commitRound(i + 7)
	}
	want = committedOf(s, "g", 4)
	mustf(t, s.CleanOnce(context.Background()), "cleaner round")
	if n := tombstones(partitionRecords(t, s, OffsetsTopic, 0, 0)); n != 0 {
		t.Errorf("%d tombstones left past their horizon", n)
	}
	mustf(t, s.Close(), "close")
	s = open()
	if got := committedOf(s, "g", 4); !slices.Equal(got, want) {
		t.Fatalf("after the second round g's offsets are %v, were %v", got, want)
	}
	if g := s.Groups(); !slices.Equal(g, []string{"g"}) {
		t.Fatalf("groups after the tombstones went: %v", g)
	}
}

func committedOf(s *Store, group string, n int32) []int64 {
	var out []int64
	for p := range n {
		c, ok := s.CommittedOffset(group, "t", p)
		if !ok {
			c.Offset = -1
		}
		out = append(out, c.Offset)
	}
	return out
}

func tombstones(recs []record.Record) int {
	n := 0
	for _, r := range recs {
		if r.Value == nil {
			n++
		}
	}
	return n
}
