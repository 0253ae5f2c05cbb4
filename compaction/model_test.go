package compaction

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestModel appends random keyed records (tombstones and keyless ones
// among them) in batches to a log of small segments, compacts at random
// moments with a map too small for all keys, and checks after each round
// and after reopening that reading gives exactly the model: the latest
// record per key below the checkpoint, everything from it on, offsets
// unchanged.
func TestModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			fsys := vfs.NewMem()
			l := openTestLog(t, fsys)
			m := model{}
			// 60 slots at load 0.9: 54 keys per round, fewer than the 120.
			om := NewOffsetMap(60*slotBytes, 0)
			checkpoint := int64(0)
			var removed int64
			sawFull := false
			for step := range 300 {
				n := 1 + rng.IntN(5)
				recs := make([]record.Record, n)
				for i := range recs {
					var key, value []byte
					if rng.IntN(20) > 0 {
						key = fmt.Appendf(nil, "key-%d", rng.IntN(120))
					}
					if rng.IntN(8) > 0 {
						value = fmt.Appendf(nil, "v%d-%d", step, i)
					}
					recs[i] = record.Record{Key: key, Value: value, Timestamp: int64(1_700_000_000_000 + step)}
				}
				info, err := l.Append(recs...)
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range recs {
					r.Offset = info.FirstOffset + int64(i)
					m[r.Offset] = r
				}
				if rng.IntN(25) == 0 {
					res, err := Clean(l, om, checkpoint, l.EndOffset(), Options{})
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					removed += res.RecordsRemoved
					sawFull = sawFull || res.MapFull
					if res.End < checkpoint {
						t.Fatalf("checkpoint went back from %d to %d", checkpoint, res.End)
					}
					checkpoint = res.End
					if err := testutil.CompareRecords(testutil.ReadRecords(t, l, l.StartOffset()), m.expect(0, checkpoint, l.EndOffset())); err != nil {
						t.Fatalf("step %d, after a round to %d: %v", step, checkpoint, err)
					}
				}
			}
			// Rounds until the checkpoint reaches the sealed end.
			for range 50 {
				res, err := Clean(l, om, checkpoint, l.EndOffset(), Options{})
				if err != nil {
					t.Fatal(err)
				}
				removed += res.RecordsRemoved
				sawFull = sawFull || res.MapFull
				if res.Deferred {
					// The flusher still held a segment a swap retired:
					// the round stopped short, and the next one resumes
					// once it lets go.
					checkpoint = res.End
					waitRetired(t, fsys, "/log")
					continue
				}
				if res.End == checkpoint {
					break
				}
				checkpoint = res.End
			}
			t.Logf("checkpoint %d of %d, %d records removed, map full in some round: %v", checkpoint, l.EndOffset(), removed, sawFull)
			if removed == 0 || !sawFull || checkpoint < l.EndOffset()/2 {
				t.Fatalf("compaction hardly ran: checkpoint %d of %d, %d removed, map full %v", checkpoint, l.EndOffset(), removed, sawFull)
			}
			want := m.expect(0, checkpoint, l.EndOffset())
			if err := testutil.CompareRecords(testutil.ReadRecords(t, l, l.StartOffset()), want); err != nil {
				t.Fatal(err)
			}
			end := l.EndOffset()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			fscktest.CheckClean(t, fsys, "/log")
			l = openTestLog(t, fsys)
			defer l.Close()
			if l.EndOffset() != end {
				t.Fatalf("end %d after reopen, was %d", l.EndOffset(), end)
			}
			if err := testutil.CompareRecords(testutil.ReadRecords(t, l, l.StartOffset()), want); err != nil {
				t.Fatalf("after reopen: %v", err)
			}
		})
	}
}
