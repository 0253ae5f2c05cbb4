package cleaner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// keyedSegments appends segs sealed segments of n records each over keys
// distinct keys (record i gets key i mod keys).
func keyedSegments(t *testing.T, l *seglog.Log, clock *testutil.Clock, segs, n, keys int) {
	t.Helper()
	i := 0
	for range segs {
		recs := make([]record.Record, n)
		for j := range recs {
			recs[j] = record.Record{Key: fmt.Appendf(nil, "key-%d", i%keys), Value: fmt.Appendf(nil, "value-%d", i), Timestamp: clock.Now().UnixMilli()}
			i++
		}
		if _, err := l.Append(recs...); err != nil {
			t.Fatal(err)
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
}

func countRecords(t *testing.T, l *seglog.Log) int {
	t.Helper()
	n := 0
	for _, err := range l.Records(l.StartOffset()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

func compactPolicy() Policy {
	p := DefaultPolicy()
	p.CleanupPolicy, p.FileDeleteDelay = Compact, 0
	return p
}

// TestCleanerCompacts: a round compacts a dirty log, writes Kafka's
// cleaner-offset-checkpoint, reports metrics and an event; the next round
// finds nothing dirty and leaves the log alone.
func TestCleanerCompacts(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	l := openLog(t, fs, "/logs/prices-0", clock)
	defer fscktest.CheckCleanAtEnd(t, fs, "/logs/prices-0")
	defer l.Close()
	keyedSegments(t, l, clock, 4, 5, 3)
	var events []LogCompacted
	c := New(Options{Clock: clock})
	c.SetCompaction(CompactionOptions{DedupeBufferBytes: 1 << 16, LogCompacted: func(e LogCompacted) { events = append(events, e) }})
	if err := c.Add(Wrap(l), compactPolicy()); err != nil {
		t.Fatal(err)
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := countRecords(t, l); got != 3 {
		t.Fatalf("%d records after compaction, want one per key (3)", got)
	}
	entries, err := layout.ReadCheckpoint(fs, filepath.Join("/logs/prices-0", layout.CleanerOffsetFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0] != (layout.CheckpointEntry{Topic: "prices", Partition: 0, Offset: 20}) {
		t.Fatalf("checkpoint %+v, want prices 0 20", entries)
	}
	if len(events) != 1 || events[0].RecordsRemoved != 17 || events[0].Ratio != 1 {
		t.Fatalf("events %+v", events)
	}
	m := c.CompactionMetrics()
	if len(m) != 1 || m[0].Rounds != 1 || m[0].RecordsRemoved != 17 || m[0].BytesRead == 0 || m[0].BytesWritten == 0 || m[0].Checkpoint != 20 || m[0].MapFill <= 0 {
		t.Fatalf("metrics %+v", m)
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Fatalf("a clean log was compacted again: %+v", events[1:])
	}

	// Removed, the log's record goes to the removed sums: the totals
	// keep it, and the log added again starts from zero.
	if err := c.Remove(Wrap(l)); err != nil {
		t.Fatal(err)
	}
	logs, removed := c.CompactionTotals()
	if len(logs) != 0 || removed.Rounds != 1 || removed.RecordsRemoved != 17 || removed.BytesRead != m[0].BytesRead {
		t.Fatalf("after Remove: records %+v, removed sums %+v", logs, removed)
	}
	if _, err := c.Compact(context.Background(), Wrap(l), compactPolicy()); !errors.Is(err, ErrUnknownLog) {
		t.Fatalf("Compact of a removed log: %v", err)
	}
	if err := c.Add(Wrap(l), compactPolicy()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(context.Background(), Wrap(l), compactPolicy()); err != nil {
		t.Fatal(err)
	}
	logs, removed = c.CompactionTotals()
	if len(logs) != 1 || logs[0].Rounds != 1 || logs[0].RecordsRemoved != 0 || removed.Rounds != 1 {
		t.Fatalf("added again and compacted: records %+v, removed sums %+v", logs, removed)
	}
}

// TestCleanerCompactionRespectsBounds: neither the last stable offset nor
// min.compaction.lag.ms lets a round clean past them.
func TestCleanerCompactionRespectsBounds(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	l := openLog(t, fs, "/a", clock)
	defer l.Close()
	keyedSegments(t, l, clock, 4, 5, 3)
	c := New(Options{Clock: clock})
	c.SetCompaction(CompactionOptions{DedupeBufferBytes: 1 << 16})
	p := compactPolicy()
	p.MinCompactionLag = time.Hour
	if err := c.Add(Wrap(l), p); err != nil {
		t.Fatal(err)
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := countRecords(t, l); got != 20 {
		t.Fatalf("young segments compacted: %d records", got)
	}
	clock.Advance(2 * time.Hour)
	if err := c.SetLastStableOffset(Wrap(l), 12); err != nil {
		t.Fatal(err)
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Only the two segments below 12 (offsets 0..9) were cleaned: one
	// record per key there, all ten above.
	if got := countRecords(t, l); got != 13 {
		t.Fatalf("%d records, want 3 + 10", got)
	}
	if cp, ok, err := l.CleanerCheckpoint(); err != nil || !ok || cp != 10 {
		t.Fatalf("checkpoint %d %v %v, want 10", cp, ok, err)
	}
}

// TestCleanerFilthiestFirst: with one worker, the log with the higher
// dirty ratio is compacted first, though its directory sorts last.
func TestCleanerFilthiestFirst(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	a := openLog(t, fs, "/z", clock) // sorts after /b
	defer a.Close()
	b := openLog(t, fs, "/b", clock)
	defer b.Close()
	keyedSegments(t, a, clock, 4, 5, 3)
	keyedSegments(t, b, clock, 4, 5, 3)
	// b's first half is clean already: ratio 0.5+, below a's 1.
	if err := b.SetCleanerCheckpoint(10); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	c := New(Options{Clock: clock})
	c.SetCompaction(CompactionOptions{DedupeBufferBytes: 1 << 16, LogCompacted: func(e LogCompacted) {
		mu.Lock()
		order = append(order, fmt.Sprintf("%s %.2f", e.Dir, e.Ratio))
		mu.Unlock()
	}})
	p := compactPolicy()
	p.MinCleanableDirtyRatio = 0.1
	for _, l := range []*seglog.Log{b, a} {
		if err := c.Add(Wrap(l), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "/z 1.00" || order[1][:3] != "/b " {
		t.Fatalf("order %v, want /z (ratio 1) then /b (about 0.5)", order)
	}
}

// TestCleanerCompactDelete: cleanup.policy=compact,delete applies time
// retention and compacts what remains.
func TestCleanerCompactDelete(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	l := openLog(t, fs, "/a", clock)
	defer l.Close()
	segmentsOf(t, l, clock, 72*time.Hour) // 5 records of key "k", old
	keyedSegments(t, l, clock, 3, 5, 3)
	c := New(Options{Clock: clock})
	c.SetCompaction(CompactionOptions{DedupeBufferBytes: 1 << 16})
	p := compactPolicy()
	p.CleanupPolicy, p.Retention = CompactDelete, time.Hour
	if err := c.Add(Wrap(l), p); err != nil {
		t.Fatal(err)
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 5 {
		t.Fatalf("start %d: the old segment was not deleted", l.StartOffset())
	}
	if got := countRecords(t, l); got != 3 {
		t.Fatalf("%d records left, want one per key (3)", got)
	}
}

// TestCleanerCompactForced: Compact cleans even below the dirty ratio and
// removes expired tombstones.
func TestCleanerCompactForced(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	l := openLog(t, fs, "/a", clock)
	defer l.Close()
	if _, err := l.Append(record.Record{Key: []byte("x"), Value: []byte("1")}, record.Record{Key: []byte("y"), Value: nil}); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	c := New(Options{Clock: clock})
	c.SetCompaction(CompactionOptions{DedupeBufferBytes: 1 << 16})
	p := compactPolicy()
	p.DeleteRetention = time.Minute
	if err := c.Add(Wrap(l), p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(context.Background(), Wrap(l), p); err != nil {
		t.Fatal(err)
	}
	if got := countRecords(t, l); got != 2 {
		t.Fatalf("tombstone gone before its horizon: %d records", got)
	}
	clock.Advance(time.Minute)
	res, err := c.Compact(context.Background(), Wrap(l), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := countRecords(t, l); got != 1 || res.TombstonesRemoved != 1 {
		t.Fatalf("after the horizon: %d records, %+v", got, res.Result)
	}
}

// TestCleanerCompactionThrottled: a round charges what it reads and
// writes to the cleaner's Throttle and waits on it.
func TestCleanerCompactionThrottled(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	l := openLog(t, fs, "/a", clock)
	defer l.Close()
	keyedSegments(t, l, clock, 4, 5, 3)
	c := New(Options{Clock: clock, Throttle: NewThrottle(100, clock)}) // 100 bytes/s
	c.SetCompaction(CompactionOptions{DedupeBufferBytes: 1 << 16})
	p := compactPolicy()
	if err := c.Add(Wrap(l), p); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Compact(context.Background(), Wrap(l), p)
		done <- err
	}()
	clock.WaitForTimers(t, 1)
	select {
	case err := <-done:
		t.Fatalf("round finished without waiting for the throttle: %v", err)
	default:
	}
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if got := countRecords(t, l); got != 3 {
				t.Fatalf("%d records, want 3", got)
			}
			return
		default:
			clock.Advance(time.Second)
			runtime.Gosched()
		}
	}
}
