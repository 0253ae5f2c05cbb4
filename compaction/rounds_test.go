package compaction

import (
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Records of TestSmallMapRounds: key (n/20) mod smallMapKeys, so each
// key is written 20 times in a row and again smallMapKeys*20 records later.
const smallMapKeys = 2000

func smallMapKey(n int64) []byte { return fmt.Appendf(nil, "key-%05d", (n/20)%smallMapKeys) }

// smallMapKept says whether offset n survives compaction to checkpoint
// cp: its key comes back only at or after cp.
func smallMapKept(n, cp int64) bool {
	next := n + 1
	if n%20 == 19 {
		next = n + smallMapKeys*20 - 19
	}
	return n >= cp || next >= cp
}

// TestSmallMapRounds: with a map holding a tenth of the keys, rounds
// continue from one another's checkpoint until the whole sealed log is
// compacted to the latest record per key; what a round keeps live on the
// heap, map aside, stays far below the log it reads (measured with
// runtime/metrics).
func TestSmallMapRounds(t *testing.T) {
	// 5.8 MB of records: well above what a round may keep (below).
	const testRecords = int64(160_000)
	// The real filesystem: a MemFS holds its files on the heap, which
	// would be counted as the round's memory.
	fsys := vfs.Default
	o := testOptions(fsys)
	o.SegmentBytes = 64 << 10
	dir := filepath.Join(t.TempDir(), "log")
	l, err := seglog.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]record.Record, 10)
	for n := int64(0); n < testRecords; n += 10 {
		for j := range recs {
			recs[j] = record.Record{Key: smallMapKey(n + int64(j)), Value: fmt.Appendf(nil, "value-%08d", n+int64(j)), Timestamp: 1}
		}
		if _, err := l.Append(recs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	check := func(cp int64) error {
		want := int64(0)
		for r, err := range l.Records(0) {
			if err != nil {
				return err
			}
			for !smallMapKept(want, cp) {
				want++
			}
			if r.Offset != want || string(r.Key) != string(smallMapKey(want)) || string(r.Value) != fmt.Sprintf("value-%08d", want) {
				return fmt.Errorf("read offset %d key %s value %s, want offset %d", r.Offset, r.Key, r.Value, want)
			}
			want++
		}
		if want != testRecords {
			return fmt.Errorf("read up to %d of %d", want, testRecords)
		}
		return nil
	}
	logBytes := l.Size()
	om := NewOffsetMap(55*bucketSlots*slotBytes, 0) // 220 slots: 198 keys a round
	checkpoint, rounds := int64(0), 0
	var most uint64
	var res Result
	for checkpoint < l.EndOffset() {
		base, peak := heapPeak(func() {
			res, err = Clean(l, om, checkpoint, l.EndOffset(), Options{})
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.End <= checkpoint {
			t.Fatalf("round %d made no progress from %d", rounds, checkpoint)
		}
		if peak > base {
			most = max(most, peak-base)
		}
		checkpoint = res.End
		rounds++
		if rounds%10 == 0 {
			if err := check(checkpoint); err != nil {
				t.Fatalf("round %d: %v", rounds, err)
			}
		}
	}
	if err := check(checkpoint); err != nil {
		t.Fatalf("after %d rounds: %v", rounds, err)
	}
	t.Logf("%d rounds; log %d bytes; a round's peak live heap above its start %d bytes", rounds, logBytes, most)
	if rounds < smallMapKeys/200 {
		t.Fatalf("%d rounds for %d keys with a map of 198", rounds, smallMapKeys)
	}
	// A round holds a batch or two, its buffers and the new segment's
	// index: 2 MiB is Kafka's two largest batches, and under a third of
	// the log. Holding the log, or a segment per group, would exceed it.
	if most > 2<<20 {
		t.Fatalf("a round's heap grew by %d bytes for a log of %d", most, logBytes)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fscktest.CheckClean(t, fsys, dir)
}

// heapPeak runs fn with the collector at its most eager and returns the
// live heap (runtime/metrics' /gc/heap/live:bytes, what the last
// collection found reachable) before fn and the highest sampled while fn
// ran: what fn keeps live, not garbage waiting for a collection.
func heapPeak(fn func()) (base, peak uint64) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	live := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base = live()
	done := make(chan struct{})
	sampled := make(chan uint64)
	go func() {
		p := uint64(0)
		for {
			select {
			case <-done:
				sampled <- p
				return
			default:
			}
			p = max(p, live())
			time.Sleep(50 * time.Microsecond) // the sampling interval, not a wait for anything
		}
	}()
	fn()
	close(done)
	runtime.GC()
	return base, max(<-sampled, live())
}
