package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
)

func openLogs(s *Store) int {
	s.lru.mu.Lock()
	defer s.lru.mu.Unlock()
	return s.lru.open
}

// The budget of open Logs: idle partitions are closed past MaxOpenLogs and
// reopen when used; a Log from Store.Log stays open under its caller until
// Close; one from AcquireLog stays open until released, and may be closed
// after.
func TestOpenLogBudget(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock) // MaxOpenLogs: testMaxOpenLogs
	defer func() { s.Close() }()
	before := openLogs(s)
	mustf(t, s.CreateTopic("t", 8, smallConfig()), "create")
	if n := openLogs(s); n != before {
		t.Fatalf("creating a topic opened %d Logs", n-before)
	}
	kept, err := s.Log("t", 0)
	mustf(t, err, "log")
	held, release, err := s.AcquireLog("t", 1)
	mustf(t, err, "acquire")
	for round := range 5 {
		for p := range int32(8) {
			_, err := s.ProduceTo("t", p, kv("k", fmt.Sprint(round)))
			mustf(t, err, "produce")
			if n := openLogs(s); n > testMaxOpenLogs+2 {
				t.Fatalf("%d Logs open, budget %d plus the two in use", n, testMaxOpenLogs)
			}
		}
	}
	// Neither was closed under its holder.
	for name, v := range map[string]seglog.View{"Log": kept, "AcquireLog": held} {
		if v.EndOffset() != 5 {
			t.Errorf("%s's view ends at %d, want 5", name, v.EndOffset())
		}
		if n := len(testutil.ReadRecords(t, v, 0)); n != 5 {
			t.Errorf("%s's view read %d records, want 5", name, n)
		}
	}
	for p, v := range []seglog.View{kept, held} {
		_, err := s.ProduceTo("t", int32(p), kv("k", "more"))
		mustf(t, err, "produce more")
		if v.EndOffset() != 6 {
			t.Errorf("partition %d's view ends at %d after an append, want 6", p, v.EndOffset())
		}
	}
	release()
	release() // twice is harmless
	for p := int32(2); p < 8; p++ {
		_, err := s.ProduceTo("t", p, kv("k", "x"))
		mustf(t, err, "produce")
	}
	// The released view's partition was closed past the budget: its
	// reads say so instead of reading the closed Log as empty.
	if sl, err := held.Read(0, 1<<20, seglog.ReadOptions{}); !errors.Is(err, seglog.ErrClosed) {
		t.Errorf("a released idle partition past the budget is still open: %v, %v", sl, err)
	}
	var last error
	for _, err := range held.Records(0) {
		last = err
	}
	if !errors.Is(last, seglog.ErrClosed) {
		t.Errorf("Records of a released view ended with %v, want ErrClosed", last)
	}
	if held.EndOffset() != 6 {
		t.Errorf("a closed view ends at %d, want 6, its last end", held.EndOffset())
	}
	_, err = s.ProduceTo("t", 0, kv("k", "still"))
	mustf(t, err, "produce to 0")
	if kept.EndOffset() != 7 {
		t.Errorf("Store.Log's partition was closed: its view ends at %d after an append, want 7", kept.EndOffset())
	}
	// AcquireLog again: the partition reopened, with everything written.
	again, release, err := s.AcquireLog("t", 1)
	mustf(t, err, "acquire again")
	if n := len(testutil.ReadRecords(t, again, 0)); n != 6 {
		t.Errorf("partition 1 reopened holds %d records, want 6", n)
	}
	release()
	if n := openLogs(s); n > testMaxOpenLogs+1 {
		t.Errorf("%d Logs open, budget %d plus the one from Log", n, testMaxOpenLogs)
	}
	// Reopened on use, with everything written.
	want := map[int32]int{0: 7, 1: 6}
	for p := int32(2); p < 8; p++ {
		want[p] = 6
	}
	for p, n := range want {
		if got := len(partitionRecords(t, s, "t", p, 0)); got != n {
			t.Errorf("partition %d holds %d records, want %d", p, got, n)
		}
	}
	mustf(t, s.Close(), "close")
	s = openStore(t, fs, clock)
	for p, n := range want {
		if got := len(partitionRecords(t, s, "t", p, 0)); got != n {
			t.Errorf("after reopen partition %d holds %d records, want %d", p, got, n)
		}
	}
}

// Producers, readers and committers on many partitions with a budget of
// three open Logs: the budget closes and reopens partitions under
// concurrent use without losing a record (run with -race).
func TestOpenLogBudgetConcurrent(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	defer func() { s.Close() }()
	mustf(t, s.CreateTopic("t", 10, smallConfig()), "create")
	var wg sync.WaitGroup
	const writers, perWriter = 4, 60
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				if _, err := s.Produce("t", kv(fmt.Sprintf("w%d-%d", w, i), "v")); err != nil {
					t.Error(err)
					return
				}
				p := int32((w + i) % 10)
				l, release, err := s.AcquireLog("t", p)
				if err != nil {
					t.Error(err)
					return
				}
				end := l.EndOffset()
				for _, err := range l.Records(0) {
					if err != nil {
						t.Error(err)
						break
					}
				}
				release()
				if err := s.Commit(fmt.Sprintf("g%d", w), "t", map[int32]int64{p: end}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	info, err := s.DescribeTopic("t")
	mustf(t, err, "describe")
	total := int64(0)
	for _, p := range info.Partitions {
		total += p.EndOffset
	}
	if total != writers*perWriter {
		t.Errorf("%d records, want %d", total, writers*perWriter)
	}
}
