package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// A model of the store: random keyed and keyless produces, groups that
// consume, commit and rewind, retention on a fake clock, reopens. It
// checks that one key's records keep their order in one partition, that
// groups do not disturb each other, and that lag is end minus the
// committed offset counted from the start.
func TestStoreAgainstModel(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	defer func() { s.Close() }()
	cfg := smallConfig()
	cfg.RetentionMs = (3 * time.Hour).Milliseconds()
	const parts = 4
	mustf(t, s.CreateTopic("m", parts, cfg), "create")
	rng := rand.New(rand.NewPCG(3, 4))

	seq := make(map[string]int) // key → records produced
	groups := map[string]map[int32]int64{"g0": {}, "g1": {}, "g2": {}}
	for step := range 1500 {
		switch op := rng.IntN(20); {
		case op < 12:
			key := fmt.Sprintf("k%d", rng.IntN(30))
			if rng.IntN(5) == 0 {
				key = ""
			}
			n := 1 + rng.IntN(3)
			batch := make([]record.Record, n)
			for i := range batch {
				batch[i] = kv(key, fmt.Sprint(seq[key]+i))
			}
			res, err := s.Produce("m", batch...)
			mustf(t, err, "produce")
			for i := 1; i < len(res); i++ {
				if res[i].Partition != res[0].Partition || res[i].Offset != res[i-1].Offset+1 {
					t.Fatalf("one key's records of one call split: %v", res)
				}
			}
			seq[key] += n
		case op < 15:
			g := fmt.Sprintf("g%d", rng.IntN(3))
			p := int32(rng.IntN(parts))
			pos, err := s.Position(g, "m", p, Earliest)
			mustf(t, err, "position")
			l, _ := s.Log("m", p)
			next := min(pos.Offset+int64(rng.IntN(20)), l.EndOffset())
			mustf(t, s.Commit(g, "m", map[int32]int64{p: next}), "commit")
			groups[g][p] = next
		case op < 16:
			g := fmt.Sprintf("g%d", rng.IntN(3))
			got, err := s.ResetOffsets(g, "m", Reset{Kind: ToEarliest})
			mustf(t, err, "rewind")
			for p, off := range got {
				groups[g][p] = off
			}
		case op < 18:
			clock.Advance(time.Duration(rng.IntN(40)) * time.Minute)
			mustf(t, s.CleanOnce(context.Background()), "retention")
		case op < 19 && step%7 == 0:
			mustf(t, s.Close(), "close")
			s = openStore(t, fs, clock)
		default:
			// Every group's view is its own, and lag is what the model says.
			for g, m := range groups {
				rows, total, err := s.DescribeGroup(g)
				if len(m) == 0 {
					continue
				}
				mustf(t, err, "describe %s", g)
				var sum int64
				for _, r := range rows {
					if r.Committed != m[r.Partition] {
						t.Fatalf("%s on %d: committed %d, model %d", g, r.Partition, r.Committed, m[r.Partition])
					}
					want := r.End - max(r.Committed, r.Start)
					if r.Lag != want {
						t.Fatalf("%s on %d: lag %d, want %d", g, r.Partition, r.Lag, want)
					}
					sum += want
				}
				if total != sum || len(rows) != len(m) {
					t.Fatalf("%s: total lag %d over %d rows, want %d over %d", g, total, len(rows), sum, len(m))
				}
			}
		}
	}
	// Per-key order: in each partition, a key's values are consecutive
	// numbers, and a keyed key lives in Kafka's partition only.
	last := make(map[string]int)
	for p := range int32(parts) {
		l, _ := s.Log("m", p)
		for _, r := range partitionRecords(t, s, "m", p, l.StartOffset()) {
			var v int
			fmt.Sscan(string(r.Value), &v)
			if r.Key == nil {
				continue
			}
			key := string(r.Key)
			if PartitionForKey(r.Key, parts) != p {
				t.Fatalf("key %s in partition %d", key, p)
			}
			if prev, ok := last[key]; ok && v != prev+1 {
				t.Fatalf("key %s: %d after %d", key, v, prev)
			}
			last[key] = v
		}
	}
	for key, v := range last {
		if v != seq[key]-1 {
			t.Errorf("key %s ends at %d, produced %d", key, v, seq[key])
		}
	}
}

// Producers, committers, describers, retention and topic churn at once,
// for the race detector; bounded so that it runs in well under a second.
func TestConcurrentUse(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	defer s.Close()
	mustf(t, s.CreateTopic("c", 3, smallConfig()), "create")
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 200 {
				_, err := s.Produce("c", kv(fmt.Sprintf("%d-%d", w, i%10), "v"), kv("", "x"))
				mustf(t, err, "produce")
			}
		})
	}
	for g := range 2 {
		wg.Go(func() {
			for i := range 100 {
				p := int32(i % 3)
				l, _ := s.Log("c", p)
				mustf(t, s.Commit(fmt.Sprint("g", g), "c", map[int32]int64{p: l.EndOffset()}), "commit")
				if _, _, err := s.DescribeGroup(fmt.Sprint("g", g)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			mustf(t, s.CleanOnce(context.Background()), "retention")
			if _, err := s.DescribeTopic("c"); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Go(func() {
		for range 10 {
			mustf(t, s.CreateTopic("churn", 2, smallConfig()), "create churn")
			_, _ = s.Produce("churn", kv("a", "b"))
			_ = s.Commit("g0", "churn", map[int32]int64{0: 0})
			mustf(t, s.DeleteTopic("churn"), "delete churn")
		}
	})
	wg.Wait()
	var n int64
	for p := range int32(3) {
		l, _ := s.Log("c", p)
		n += l.EndOffset()
	}
	if n != 3*200*2 {
		t.Errorf("%d records, want %d", n, 3*200*2)
	}
}
