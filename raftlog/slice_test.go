package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// termEntries are entries whose data names their term and index, so a
// reader can tell an entry of one history from the other's.
func termEntries(from, to, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: term, Data: fmt.Appendf(nil, "term %d index %d %s", term, i, bytes.Repeat([]byte{'x'}, int(i%40)))})
	}
	return out
}

// TestSuffixTruncationUnderSlice: a follower's suffix delete (one cutting
// inside a batch, which rewrites it, and one at a batch boundary) while a
// reader holds a Slice over the removed range, then new entries at the
// same indexes. The Slice fails with ErrSliceTruncated or returns exactly
// the bytes it covered before: never the new history's bytes.
func TestSuffixTruncationUnderSlice(t *testing.T) {
	for _, cut := range []uint64{25, 21} { // inside the batch 21..30; its first index
		t.Run(fmt.Sprintf("from %d", cut), func(t *testing.T) {
			s := openT(t, vfs.NewMem(), "/raft")
			defer s.Close()
			for from := uint64(1); from <= 40; from += 10 {
				if err := s.StoreLogs(termEntries(from, from+9, 1)); err != nil {
					t.Fatal(err)
				}
			}
			sl, err := s.Log().Read(toOffset(21), 1<<20, seglog.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sl.Close()
			before := make([]byte, sl.Len())
			if _, err := sl.ReadAt(before, 0); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteRange(cut, 40); err != nil {
				t.Fatal(err)
			}
			if err := s.StoreLogs(termEntries(cut, 40, 2)); err != nil {
				t.Fatal(err)
			}
			after := make([]byte, sl.Len())
			_, err = sl.ReadAt(after, 0)
			switch {
			case errors.Is(err, seglog.ErrSliceTruncated):
			case err != nil:
				t.Fatalf("ReadAt: %v, want ErrSliceTruncated or success", err)
			case !bytes.Equal(after, before):
				t.Fatal("the slice returned bytes it did not cover when made")
			}
			var buf bytes.Buffer
			if _, err := sl.WriteTo(&buf); err != nil && !errors.Is(err, seglog.ErrSliceTruncated) {
				t.Fatalf("WriteTo: %v", err)
			} else if err == nil && !bytes.Equal(buf.Bytes(), before) {
				t.Fatal("WriteTo sent bytes the slice did not cover when made")
			}
			// The Store serves the new history.
			for i := cut; i <= 40; i++ {
				var l raft.Log
				if err := s.GetLog(i, &l); err != nil || l.Term != 2 {
					t.Fatalf("GetLog(%d) = term %d, %v; want term 2", i, l.Term, err)
				}
			}
		})
	}
}

// TestSuffixTruncationRace: readers take and read slices while a follower
// truncates and rewrites its tail again and again. Every slice that reads
// without error holds whole, valid batches of one history each: no batch
// mixes entries of two terms, and every batch's CRC holds.
func TestSuffixTruncationRace(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/raft")
	defer s.Close()
	if err := s.StoreLogs(termEntries(1, 30, 1)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, truncated atomic.Int64
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				runtime.Gosched() // leave the truncating writer its share of 2 cores
				off := int64(10 + (i+r)%20)
				sl, err := s.Log().Read(off, 4096, seglog.ReadOptions{})
				if err != nil {
					if errors.Is(err, seglog.ErrOffsetOutOfRange) || errors.Is(err, seglog.ErrTruncated) {
						continue
					}
					t.Errorf("Read(%d): %v", off, err)
					return
				}
				buf := make([]byte, sl.Len())
				_, err = sl.ReadAt(buf, 0)
				sl.Close()
				if errors.Is(err, seglog.ErrSliceTruncated) {
					truncated.Add(1)
					continue
				}
				if err != nil {
					t.Errorf("ReadAt: %v", err)
					return
				}
				if err := checkBatches(buf); err != nil {
					t.Errorf("slice at %d: %v", off, err)
					return
				}
				reads.Add(1)
			}
		}()
	}
	for term := uint64(2); term < 25; term++ {
		cut := 10 + term%15
		last, _ := s.LastIndex()
		if err := s.DeleteRange(cut, last); err != nil {
			t.Fatal(err)
		}
		if err := s.StoreLogs(termEntries(cut, 30, term)); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("no slice was read whole")
	}
	t.Logf("%d slices read whole, %d cut by a truncation", reads.Load(), truncated.Load())
}

// checkBatches validates every batch in b and that each holds entries of
// its own term only.
func checkBatches(b []byte) error {
	for len(b) > 0 {
		size, _, err := record.PeekEntry(b)
		if err != nil || size > len(b) {
			return fmt.Errorf("bad batch framing: %v", err)
		}
		batch := record.Batch(b[:size])
		if err := batch.Validate(); err != nil {
			return err
		}
		want := fmt.Sprintf("term %d ", batch.PartitionLeaderEpoch())
		for r, err := range batch.Records() {
			if err != nil {
				return err
			}
			if !bytes.HasPrefix(r.Value, []byte(want)) {
				return fmt.Errorf("batch of term %d holds %q", batch.PartitionLeaderEpoch(), r.Value)
			}
		}
		b = b[size:]
	}
	return nil
}
