package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/vfs"
)

// partitionCleaner is the entry of topic's partition 0, failing the test
// when there is none.
func partitionCleaner(t *testing.T, m CleanerMetrics, topic string) PartitionCleanerMetrics {
	t.Helper()
	for _, p := range m.Partitions {
		if p.Topic == topic && p.Partition == 0 {
			return p
		}
	}
	t.Fatalf("no cleaner figures for %s-0 in %+v", topic, m.Partitions)
	return PartitionCleanerMetrics{}
}

// The store's cleaner figures count what its rounds did: retention.bytes
// that leaves room for all but the first segment deletes exactly that
// segment, and the bytes deleted are its size; a compacting topic whose
// keys were overwritten is compacted, with its bytes read and written
// accounting for what the partition shrank by and its dirty ratio above
// min.cleanable.dirty.ratio. Deleting a topic takes its partitions out
// but not its bytes out of the totals: they are counters.
func TestCleanerMetrics(t *testing.T) {
	s := openStore(t, vfs.NewMem(), newFakeClock())
	defer s.Close()

	if m := s.CleanerMetrics(); m.Passes != 0 || m.BytesDeleted != 0 || m.CompactionRounds != 0 {
		t.Fatalf("figures before any round: %+v", m)
	}

	del := smallConfig()
	mustf(t, s.CreateTopic("r", 1, del), "create r")
	w := fillSegments(t, s, "r", 4)
	segs := w.View().Segments()
	var total int64
	for _, sg := range segs {
		total += sg.Size
	}
	// Kafka deletes the oldest segment while the log without it is still
	// at or over retention.bytes: this keeps all but the first.
	del.RetentionBytes = total - segs[0].Size
	mustf(t, s.SetTopicConfig("r", del), "retention.bytes")

	comp := smallConfig()
	comp.CleanupPolicy = cleaner.Compact
	comp.MinCleanableDirtyRatio = 0.1
	mustf(t, s.CreateTopic("c", 1, comp), "create c")
	for i := range 200 {
		_, err := s.ProduceTo("c", 0, kv(fmt.Sprintf("k%d", i%5), fmt.Sprintf("value %d %0100d", i, i)))
		mustf(t, err, "produce c")
	}
	cl, err := s.Log("c", 0)
	mustf(t, err, "log c")
	sizeBefore := cl.Size()

	before := s.CleanerMetrics()
	if r := partitionCleaner(t, before, "r"); r.DirtyRatio != -1 {
		t.Errorf("dirty ratio of a delete topic: %v, want -1", r.DirtyRatio)
	}
	if c := partitionCleaner(t, before, "c"); c.DirtyRatio != -1 {
		t.Errorf("dirty ratio before any pass: %v, want -1", c.DirtyRatio)
	}

	mustf(t, s.CleanOnce(context.Background()), "cleaner round")
	m := s.CleanerMetrics()
	if after := w.View().Segments(); len(after) != len(segs)-1 || after[0].BaseOffset != segs[1].BaseOffset {
		t.Fatalf("retention left %d segments from %d, want the first of %d gone", len(after), after[0].BaseOffset, len(segs))
	}
	r := partitionCleaner(t, m, "r")
	if r.BytesDeleted != segs[0].Size || r.SegmentsDeleted != 1 {
		t.Errorf("r-0: %d bytes in %d segments deleted, want %d in 1", r.BytesDeleted, r.SegmentsDeleted, segs[0].Size)
	}
	if m.BytesDeleted != segs[0].Size || m.SegmentsDeleted != 1 || m.RecordsDeleted != segs[0].NextOffset-segs[0].BaseOffset {
		t.Errorf("totals: %d bytes, %d segments, %d records deleted, want %d, 1, %d",
			m.BytesDeleted, m.SegmentsDeleted, m.RecordsDeleted, segs[0].Size, segs[0].NextOffset-segs[0].BaseOffset)
	}
	if m.Passes != 1 || m.LastRun.IsZero() || m.Failures != 0 {
		t.Errorf("passes %d, last run %v, failures %d after one clean round", m.Passes, m.LastRun, m.Failures)
	}

	c := partitionCleaner(t, m, "c")
	shrunk := sizeBefore - cl.Size()
	if c.CompactionRounds != 1 || c.BytesWritten <= 0 || shrunk <= 0 || shrunk > c.BytesRead-c.BytesWritten {
		t.Errorf("c-0: %d rounds, %d bytes read, %d written; the partition shrank by %d", c.CompactionRounds, c.BytesRead, c.BytesWritten, shrunk)
	}
	if c.DirtyRatio <= comp.MinCleanableDirtyRatio || c.DirtyRatio > 1 {
		t.Errorf("c-0's dirty ratio %v, want over min.cleanable.dirty.ratio %v", c.DirtyRatio, comp.MinCleanableDirtyRatio)
	}
	if r.DirtyRatio != -1 || c.Failed || r.Failed {
		t.Errorf("r-0 %+v, c-0 %+v", r, c)
	}
	// The offsets topic compacts too; the totals add every partition.
	var read, written int64
	for _, p := range m.Partitions {
		read, written = read+p.BytesRead, written+p.BytesWritten
	}
	if m.CompactionRounds < 1 || m.BytesRead != read || m.BytesWritten != written {
		t.Errorf("totals: %d rounds, %d read, %d written; the partitions' sum %d, %d", m.CompactionRounds, m.BytesRead, m.BytesWritten, read, written)
	}

	mustf(t, s.DeleteTopic("r"), "delete r")
	gone := s.CleanerMetrics()
	for _, p := range gone.Partitions {
		if p.Topic == "r" {
			t.Errorf("deleted topic still listed: %+v", p)
		}
	}
	if gone.BytesDeleted != m.BytesDeleted || gone.BytesRead != m.BytesRead {
		t.Errorf("totals went down with the topic: %+v, were %+v", gone, m)
	}

	// A compacted topic deleted and created again under its name starts
	// its figures from zero; the totals keep the old one's.
	mustf(t, s.DeleteTopic("c"), "delete c")
	mustf(t, s.CreateTopic("c", 1, comp), "create c again")
	again := s.CleanerMetrics()
	if c2 := partitionCleaner(t, again, "c"); c2.CompactionRounds != 0 || c2.BytesRead != 0 || c2.DirtyRatio != -1 {
		t.Errorf("c-0 created again inherits the old one's figures: %+v", c2)
	}
	if again.CompactionRounds != gone.CompactionRounds || again.BytesRead != gone.BytesRead || again.BytesWritten != gone.BytesWritten {
		t.Errorf("totals changed with c deleted and created again: %+v, were %+v", again, gone)
	}
}

// A read-only store runs no cleaner: no figures.
func TestCleanerMetricsReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, fs, newFakeClock())
	mustf(t, s.CreateTopic("r", 1, smallConfig()), "create")
	mustf(t, s.Close(), "close")
	ro, err := Open(testDir, Options{FS: fs, ReadOnly: true, Logger: quiet})
	mustf(t, err, "open read-only")
	defer ro.Close()
	if m := ro.CleanerMetrics(); m.Passes != 0 || len(m.Partitions) != 0 {
		t.Errorf("a read-only store's cleaner figures: %+v", m)
	}
}
