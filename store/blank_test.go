package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// TestCleanerLeavesBlankPartitionsUnopened: a cleaner round over
// partitions created and never written (the offsets topic's, a topic's)
// creates no segment in them: opening one made its first segment and
// preallocated its index files, which at the defaults reserved 1 GB on
// every cluster node for 50 idle offsets partitions. A partition written
// to is cleaned as before.
func TestCleanerLeavesBlankPartitionsUnopened(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, fs, newFakeClock())
	defer s.Close()
	cfg := smallConfig()
	cfg.RetentionBytes = 1 << 10
	mustf(t, s.CreateTopic("idle", 3, cfg), "create idle")
	mustf(t, s.CreateTopic("busy", 1, cfg), "create busy")
	for i := range 40 {
		_, err := s.ProduceTo("busy", 0, kv(fmt.Sprint(i), "0123456789012345678901234567890123456789"))
		mustf(t, err, "produce")
	}
	segments := func(topic string, p int) int {
		names, err := fs.List(filepath.Join(testDir, fmt.Sprintf("%s-%d", topic, p)))
		mustf(t, err, "list")
		_, bases := layout.SegmentFiles(names)
		return len(bases)
	}
	before := segments("busy", 0)
	t.Logf("before: idle-0 %d, offsets-0 %d", segments("idle", 0), segments(OffsetsTopic, 0))
	mustf(t, s.CleanOnce(context.Background()), "cleaner round")
	for p := range 3 {
		if n := segments("idle", p); n != 0 {
			t.Errorf("idle-%d: %d segments after a cleaner round, want none", p, n)
		}
	}
	for p := range 5 {
		if n := segments(OffsetsTopic, p); n != 0 {
			t.Errorf("%s-%d: %d segments after a cleaner round, want none", OffsetsTopic, p, n)
		}
	}
	if after := segments("busy", 0); after >= before {
		t.Errorf("busy-0: %d segments before the round, %d after: retention deleted nothing", before, after)
	}
}
