package store

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// Partitions open on first use, so after a crash a partition is recovered
// when first used, and Close recovers the ones the session never used
// before it writes the clean-shutdown marker: the marker makes the next
// Open trust every partition. One that cannot be recovered keeps the
// marker from being written.
func TestCleanMarkerAfterCrashNeedsRecovery(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	cfg := smallConfig()
	cfg.FlushMessages = 1 // the records survive the crash
	mustf(t, s.CreateTopic("t", 3, cfg), "create")
	for p := range int32(2) { // partition 2 stays empty
		_, err := s.ProduceTo("t", p, kv("k", "v"))
		mustf(t, err, "produce")
	}
	crashed := fs.CrashClone()
	mustf(t, s.Close(), "close")
	marker := filepath.Join(testDir, layout.CleanShutdownFile)

	// Partition 1 cannot be opened in this session.
	broken := vfs.Inject(crashed, vfs.If(func(op vfs.Op) bool {
		return (op.Kind == vfs.OpOpen || op.Kind == vfs.OpOpenReadWrite || op.Kind == vfs.OpCreate) && strings.Contains(op.Path, "/t-1/")
	}, syscall.EIO))
	s = openStore(t, broken, clock)
	partitionRecords(t, s, "t", 0, 0)
	mustf(t, s.Close(), "close")
	if _, err := crashed.Stat(marker); err == nil {
		t.Fatal("the clean-shutdown marker was written with partition 1 never recovered")
	}

	s = openStore(t, crashed, clock)
	partitionRecords(t, s, "t", 0, 0) // only partition 0: Close recovers 1
	mustf(t, s.Close(), "close")
	if _, err := crashed.Stat(marker); err != nil {
		t.Fatalf("Close recovered every partition, but wrote no marker: %v", err)
	}
	s = openStore(t, crashed, clock)
	defer s.Close()
	info, err := s.DescribeTopic("t")
	mustf(t, err, "describe")
	for p, want := range []int64{1, 1, 0} {
		if got := info.Partitions[p].EndOffset; got != want {
			t.Errorf("partition %d ends at %d, want %d", p, got, want)
		}
		if got := len(partitionRecords(t, s, "t", int32(p), 0)); int64(got) != want {
			t.Errorf("partition %d holds %d records, want %d", p, got, want)
		}
	}
}
