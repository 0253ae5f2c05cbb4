package store

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/vfs"
)

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	names, err := vfs.Default.List("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting descriptors: %v", err)
	}
	return len(names) - 1 // the listing's own
}

// A store of 10,000 partitions stays within its budget of open Logs
// (MaxOpenLogs): creating, writing, reopening and visiting every partition
// holds at most about 3 descriptors per budgeted Log, and the store runs a
// fixed handful of goroutines (one cleaner, one flush pool, one remover),
// not one per partition. The open time after a clean shutdown is logged;
// bench store measures it.
func TestTenThousandPartitionsWithinBudget(t *testing.T) {
	const (
		parts  = 10_000
		budget = 64
		// slack covers the offsets topic's partitions opened on Open,
		// the test's own and the runtime's descriptors.
		slack = 32
	)
	dir := filepath.Join(t.TempDir(), "data")
	clock := newFakeClock()
	opts := Options{OffsetsPartitions: 5, OffsetsConfig: &offsetsCfg, Clock: clock, Logger: quiet, MaxOpenLogs: budget}
	cfg := DefaultTopicConfig()
	cfg.SegmentBytes = 4 << 10
	cfg.MaxMessageBytes = 1 << 10
	cfg.SegmentIndexBytes = 256

	fds0, g0 := openFDs(t), runtime.NumGoroutine()
	maxFDs, maxG := 0, 0
	sample := func() {
		maxFDs = max(maxFDs, openFDs(t)-fds0)
		maxG = max(maxG, runtime.NumGoroutine()-g0)
	}
	s, err := Open(dir, opts)
	mustf(t, err, "open")
	start := time.Now()
	mustf(t, s.CreateTopic("t", parts, cfg), "create")
	t.Logf("created %d partitions in %v", parts, time.Since(start))
	start = time.Now()
	// Every 50th partition gets records: opening, appending to and
	// closing a Log costs a few syncs, which 10,000 would make slow.
	for p := int32(0); p < parts; p += 50 {
		for i := range 1 + int(p/50)%3 {
			_, err := s.ProduceTo("t", p, kv("k", fmt.Sprint(i)))
			mustf(t, err, "produce to %d", p)
		}
		if p%500 == 0 {
			sample()
		}
	}
	t.Logf("wrote to every 50th partition in %v", time.Since(start))
	mustf(t, s.Close(), "close")

	start = time.Now()
	s, err = Open(dir, opts)
	mustf(t, err, "reopen")
	t.Logf("reopened %d partitions in %v", parts, time.Since(start))
	defer s.Close()
	sample()
	start = time.Now()
	info, err := s.DescribeTopic("t")
	mustf(t, err, "describe")
	t.Logf("described every partition in %v", time.Since(start))
	sample()
	var total int64
	for _, p := range info.Partitions {
		total += p.EndOffset
	}
	want := int64(0)
	for p := 0; p < parts; p += 50 {
		want += 1 + int64(p/50)%3
	}
	if total != want {
		t.Errorf("%d records in all, want %d", total, want)
	}
	start = time.Now()
	// Reading partitions through AcquireLog, releasing each: what the
	// open Log says is what DescribeTopic said without opening it.
	for p := int32(0); p < parts; p += 25 {
		l, release, err := s.AcquireLog("t", p)
		mustf(t, err, "acquire %d", p)
		n := int64(0)
		for _, err := range l.Records(0) {
			mustf(t, err, "read %d", p)
			n++
		}
		d := info.Partitions[p]
		if got := (PartitionInfo{Partition: p, StartOffset: l.StartOffset(), EndOffset: l.EndOffset(), Size: l.Size(),
			Segments: l.NumSegments()}); n != d.EndOffset || got.StartOffset != d.StartOffset || got.EndOffset != d.EndOffset ||
			got.Size != d.Size || got.Segments != d.Segments {
			t.Fatalf("partition %d: %d records, open Log %+v, described %+v", p, n, got, d)
		}
		release()
		if p%1000 == 0 {
			sample()
		}
	}
	t.Logf("read %d partitions through AcquireLog in %v", parts/25, time.Since(start))
	t.Logf("descriptors: at most %d above the start (budget %d Logs); goroutines: at most %d above", maxFDs, budget, maxG)
	if maxFDs > 3*budget+slack {
		t.Errorf("%d descriptors open for a budget of %d Logs", maxFDs, budget)
	}
	if maxG > 10 {
		t.Errorf("%d goroutines for %d partitions", maxG, parts)
	}
}

// TestLongReadsWithinDescriptorBudget: consumers reading partitions of
// many segments from their start hold at most a few sealed .log
// descriptors per open Log (seglog.Options.MaxOpenSegmentFiles), not one
// per segment passed: 3 partitions of about 100 segments each, read whole
// through AcquireLog under a budget of 2 Logs, with one of them held
// across the others' reads.
func TestLongReadsWithinDescriptorBudget(t *testing.T) {
	const budget = 2
	dir := filepath.Join(t.TempDir(), "data")
	clock := newFakeClock()
	opts := Options{OffsetsPartitions: 1, OffsetsConfig: &offsetsCfg, Clock: clock, Logger: quiet, MaxOpenLogs: budget}
	cfg := DefaultTopicConfig()
	cfg.SegmentBytes = 4 << 10
	cfg.MaxMessageBytes = 2 << 10
	s, err := Open(dir, opts)
	mustf(t, err, "open")
	value := string(make([]byte, 1000))
	mustf(t, s.CreateTopic("t", 3, cfg), "create")
	for p := range int32(3) {
		for i := range 300 {
			_, err := s.ProduceTo("t", p, kv(fmt.Sprint(i), value))
			mustf(t, err, "produce")
		}
	}
	mustf(t, s.Close(), "close")
	s, err = Open(dir, opts)
	mustf(t, err, "reopen")
	defer s.Close()

	fds0 := openFDs(t)
	maxFDs, segments := 0, 0
	held, release, err := s.AcquireLog("t", 0)
	mustf(t, err, "acquire 0")
	defer release()
	readAll := func(l seglog.View, p int32) {
		t.Helper()
		n := 0
		for _, err := range l.Records(l.StartOffset()) {
			mustf(t, err, "read %d", p)
			if n++; n%20 == 0 {
				maxFDs = max(maxFDs, openFDs(t)-fds0)
			}
		}
		if n != 300 {
			t.Fatalf("partition %d: %d records, want 300", p, n)
		}
		segments = max(segments, l.NumSegments())
	}
	readAll(held, 0)
	for p := int32(1); p < 3; p++ {
		l, rel, err := s.AcquireLog("t", p)
		mustf(t, err, "acquire %d", p)
		readAll(l, p)
		rel()
	}
	readAll(held, 0)
	// Per open Log: the active segment's 3 files, 4 index and 4 time-index
	// mappings and 4 sealed .log descriptors; one Log over the budget while
	// the held one is in use.
	limit := (budget + 1) * (3 + 8 + 4)
	t.Logf("descriptors: at most %d above the start reading partitions of %d segments (limit %d)", maxFDs, segments, limit)
	if segments <= limit {
		t.Fatalf("partitions of %d segments cannot tell a bound of %d from none", segments, limit)
	}
	if maxFDs > limit {
		t.Errorf("%d descriptors open reading %d-segment partitions, budget %d Logs (limit %d)", maxFDs, segments, budget, limit)
	}
}
