package store

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// Issue 26, item 3 through the store: a partition whose recovery keeps
// valid batches after damage in a quarantine file tells the embedder,
// through Options.OnQuarantine, which topic and partition it was, with
// the Log's seglog.Quarantine (file, records, offsets). The store of
// item 3(b): no clean-shutdown marker, the partition's recovery point 0,
// one byte flipped in its first batch.
func TestOnQuarantineNamesThePartition(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	mustf(t, s.CreateTopic("events", 2, smallConfig()), "create")
	for i := range 12 {
		_, err := s.ProduceTo("events", 1, kv("", fmt.Sprintf("value-%d", i)))
		mustf(t, err, "produce")
	}
	mustf(t, s.Close(), "close")

	mustf(t, fs.Remove(filepath.Join(testDir, layout.CleanShutdownFile)), "remove the marker")
	rpFile := filepath.Join(testDir, layout.RecoveryPointFile)
	entries, err := layout.ReadCheckpoint(fs, rpFile)
	mustf(t, err, "read the recovery points")
	for i := range entries {
		entries[i].Offset = 0
	}
	mustf(t, layout.WriteCheckpoint(fs, rpFile, entries), "write the recovery points")
	seg := filepath.Join(testDir, "events-1", layout.FileName(0, layout.LogSuffix))
	data := vfstest.ReadFile(t, fs, seg)
	data[40] ^= 0xff // in the first batch, under its CRC
	vfstest.WriteFile(t, fs, seg, data)

	type event struct {
		topic string
		part  int32
		q     seglog.Quarantine
	}
	var got []event
	s, err = Open(testDir, Options{FS: fs, OffsetsPartitions: 5, Clock: clock, Logger: quiet,
		OffsetsConfig: &offsetsCfg, MaxOpenLogs: testMaxOpenLogs,
		OnQuarantine: func(topic string, p int32, q seglog.Quarantine) { got = append(got, event{topic, p, q}) }})
	mustf(t, err, "open")
	if len(got) != 0 {
		t.Fatalf("quarantines reported before the partition was used: %+v", got)
	}
	if n := len(partitionRecords(t, s, "events", 1, 0)); n != 0 {
		t.Fatalf("events-1 serves %d records after its first batch was damaged, want 0", n)
	}
	mustf(t, s.Close(), "close")
	if len(got) != 1 {
		t.Fatalf("%d quarantines reported, want 1: %+v", len(got), got)
	}
	e := got[0]
	if e.topic != "events" || e.part != 1 || filepath.Dir(e.q.File) != filepath.Join(testDir, "events-1") ||
		e.q.Records != 11 || e.q.FirstOffset != 1 || e.q.LastOffset != 11 {
		t.Fatalf("quarantine reported as %s-%d %+v, want events-1's records 1-11", e.topic, e.part, e.q)
	}
}
