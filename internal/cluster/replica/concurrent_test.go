package replica

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestReadsBesideWrites: GetLog runs beside appends, a follower's suffix
// deletes (which re-use offsets for entries of a newer term) and prefix
// deletes. Every read answers the entry at the index it asked for, with
// the term its batch carries, or raft.ErrLogNotFound itself; never
// another entry's bytes, never another error.
func TestReadsBesideWrites(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/data/t-0")
	defer s.Close()
	if err := s.StoreLogs(entries(t, 1, 20, 1)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads, hits atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 2))
			for !stop.Load() {
				first, _ := s.FirstIndex()
				last, _ := s.LastIndex()
				if last == 0 {
					continue
				}
				i := first + rng.Uint64N(last-first+3) // a little past the end too
				var l raft.Log
				err := s.GetLog(i, &l)
				reads.Add(1)
				if err == raft.ErrLogNotFound { //nolint:errorlint // the sentinel itself
					continue
				}
				if err == nil {
					err = checkRead(i, &l)
				}
				if err != nil {
					errs <- fmt.Errorf("GetLog(%d): %w", i, err)
					return
				}
				hits.Add(1)
			}
		}()
	}
	term := uint64(1)
	next := uint64(21)
	rng := rand.New(rand.NewPCG(9, 9))
	for round := 0; round < 150 && len(errs) == 0; round++ {
		switch rng.IntN(6) {
		case 0: // a conflict: drop a suffix, go on in a newer term
			first, _ := s.FirstIndex()
			last, _ := s.LastIndex()
			if last-first < 4 {
				break
			}
			cut := last - rng.Uint64N(4)
			if err := s.DeleteRange(cut, last); err != nil {
				t.Fatal(err)
			}
			term++
			next = cut
		case 1:
			first, _ := s.FirstIndex()
			last, _ := s.LastIndex()
			if last-first > 30 {
				if err := s.DeleteRange(first, first+5); err != nil {
					t.Fatal(err)
				}
			}
		default:
			n := 1 + rng.Uint64N(5)
			if err := s.StoreLogs(entries(t, next, next+n-1, term)); err != nil {
				t.Fatal(err)
			}
			next += n
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if hits.Load() == 0 {
		t.Fatalf("none of %d reads found an entry", reads.Load())
	}
}

// checkRead checks that l is an entry entries made for index i.
func checkRead(i uint64, l *raft.Log) error {
	if l.Index != i {
		return fmt.Errorf("entry %d", l.Index)
	}
	if l.Type != raft.LogCommand {
		if want := entries(nil, i, i, l.Term)[0]; l.Type != want.Type {
			return fmt.Errorf("type %v, want %v", l.Type, want.Type)
		}
		return nil
	}
	b := record.Batch(l.Data)
	if err := b.Validate(); err != nil {
		return err
	}
	if uint64(b.PartitionLeaderEpoch()) != l.Term {
		return fmt.Errorf("term %d, batch epoch %d", l.Term, b.PartitionLeaderEpoch())
	}
	for r, err := range b.Records() {
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(r.Value), fmt.Sprintf("entry %d record", i)) {
			return fmt.Errorf("holds %q", r.Value)
		}
	}
	return nil
}

// TestReadOvertakenByConflict: a suffix delete and the append of a newer
// term that land between GetLog finding an entry's offset and reading its
// batch (the entries before it now take other offsets) make it read
// again: it answers the new entry, not the bytes at the old offset.
func TestReadOvertakenByConflict(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/data/t-0")
	defer s.Close()
	if err := s.StoreLogs(entries(t, 1, 20, 1)); err != nil {
		t.Fatal(err)
	}
	newer := entries(t, 10, 20, 2)
	once := false
	testHookLocated = func() {
		if once {
			return
		}
		once = true
		if err := s.DeleteRange(10, 20); err != nil {
			t.Error(err)
		}
		if err := s.StoreLogs(newer); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookLocated = nil }()
	var got raft.Log
	if err := s.GetLog(15, &got); err != nil {
		t.Fatal(err)
	}
	if !once {
		t.Fatal("the hook did not run")
	}
	if err := sameEntry(&got, newer[5]); err != nil {
		t.Fatal(err)
	}
}
