package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/seglog/seglog"
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
	for name, l := range map[string]*seglog.Log{"Log": kept, "AcquireLog": held} {
		if l.EndOffset() != 5 {
			t.Errorf("%s's Log ends at %d, want 5", name, l.EndOffset())
		}
		if _, err := l.Append(kv("k", "more")); err != nil {
			t.Errorf("%s's Log was closed under its holder: %v", name, err)
		}
	}
	release()
	release() // twice is harmless
	for p := int32(2); p < 8; p++ {
		_, err := s.ProduceTo("t", p, kv("k", "x"))
		mustf(t, err, "produce")
	}
	if _, err := held.Append(kv("k", "late")); !errors.Is(err, seglog.ErrClosed) {
		t.Errorf("a released idle Log past the budget is still open: %v", err)
	}
	if _, err := kept.Append(kv("k", "still")); err != nil {
		t.Errorf("Store.Log's Log was closed: %v", err)
	}
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
