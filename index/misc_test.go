package index

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/vfs"
)

func TestUpperBoundOffset(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		rng := rand.New(rand.NewPCG(17, 18))
		x := mustOffset(t, fsys, indexPath(dir, "u.index"), 0, Options{MaxBytes: 8 * 500, Writable: true})
		defer x.Close()
		model := fillOffset(t, x, rng, 400)
		for k := 0; k < 2000; k++ {
			pos := rng.Int64N(model[len(model)-1].Position + 100)
			off, ok, err := x.UpperBoundOffset(pos)
			if err != nil {
				t.Fatal(err)
			}
			i := sort.Search(len(model), func(i int) bool { return model[i].Position >= pos })
			if ok != (i < len(model)) || ok && off != model[i].Offset {
				t.Fatalf("UpperBoundOffset(%d) = %d, %v; want entry %d", pos, off, ok, i)
			}
		}
	})
}

func TestUseAfterClose(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		p := indexPath(dir, "c.index")
		x := mustOffset(t, fsys, p, 0, Options{MaxBytes: 80, Writable: true})
		if err := x.Append(1, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := x.EntryErr(1); err == nil {
			t.Fatal("EntryErr(1) of 1 entry succeeded")
		} else {
			wantErr(t, err, ErrOutOfRange, p, 8)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		wantErr(t, x.Seal(), ErrClosed, p, -1)
		wantErr(t, x.TruncateTo(0), ErrClosed, p, -1)
		wantErr(t, x.Reset(), ErrClosed, p, -1)
		wantErr(t, x.MakeWritable(), ErrClosed, p, -1)
		wantErr(t, x.Flush(), ErrClosed, p, -1)
		wantErr(t, x.Rename(p+".x"), ErrClosed, p, -1)
		tp := indexPath(dir, "c.timeindex")
		y := mustTime(t, fsys, tp, 0, Options{MaxBytes: 120, Writable: true})
		if err := y.Close(); err != nil {
			t.Fatal(err)
		}
		wantErr(t, y.MaybeAppend(5, 5, true), ErrClosed, tp, -1)
		if got := y.Lookup(5); got != (TimestampOffset{NoTimestamp, 0}) {
			t.Fatalf("Lookup after Close = %+v", got)
		}
	})
}

// TestConcurrentTruncate has the writer truncate and re-append (structural
// changes under the exclusive lock) while readers look up; every answer
// must be an entry the writer could have written, or the "none" answer.
func TestConcurrentTruncate(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		x := mustOffset(t, fsys, indexPath(dir, "ct.index"), 0, Options{MaxBytes: 8 * 2000, Writable: true})
		defer x.Close()
		var done atomic.Bool
		var bad atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, 7))
				for !done.Load() {
					target := rng.Int64N(4100)
					e := x.Lookup(target)
					if e.Offset > target || e.Position != 3*e.Offset || (e.Offset != 0 && e.Offset%2 != 0) {
						bad.Add(1)
					}
				}
			}(uint64(g))
		}
		rng := rand.New(rand.NewPCG(1, 9))
		last := int64(0)
		for round := 0; round < 200; round++ {
			for k := 0; k < 20 && !x.IsFull(); k++ {
				last += 2
				if err := x.Append(last, 3*last); err != nil {
					t.Fatal(err)
				}
			}
			if rng.IntN(3) == 0 || x.IsFull() {
				to := rng.Int64N(last + 1)
				if err := x.TruncateTo(to); err != nil {
					t.Fatal(err)
				}
				last = x.LastOffset()
			}
		}
		done.Store(true)
		wg.Wait()
		if n := bad.Load(); n > 0 {
			t.Fatalf("%d inconsistent lookups", n)
		}
	})
}

// TestTailLookupStaysWarm checks the point of the warm-section search: a
// lookup at or after the entry 8 KiB before the end reads only the last
// 8 KiB. Every entry before that is poisoned with a key larger than any
// target; a search that strayed there (a plain binary search's midpoint)
// would return a wrong slot.
func TestTailLookupStaysWarm(t *testing.T) {
	const n = 5000
	ob := make([]byte, n*OffsetEntrySize)
	tb := make([]byte, n*TimeEntrySize)
	firstHotO := int64(n - 1 - warmBytes/OffsetEntrySize)
	firstHotT := int64(n - 1 - warmBytes/TimeEntrySize)
	for i := int64(0); i < n; i++ {
		ko, kt := int64(10*i), int64(10*i)
		if i < firstHotO {
			ko = math.MaxInt32
		}
		if i < firstHotT {
			kt = math.MaxInt64
		}
		binary.BigEndian.PutUint32(ob[i*OffsetEntrySize:], uint32(ko))
		binary.BigEndian.PutUint64(tb[i*TimeEntrySize:], uint64(kt))
	}
	for target := 10*firstHotO + 1; target < 10*n+20; target += 3 {
		want := min((target)/10, n-1)
		if got := searchOffset(ob, n, int32(target)); got != want {
			t.Fatalf("offset search for %d = slot %d, want %d", target, got, want)
		}
	}
	for target := 10*firstHotT + 1; target < 10*n+20; target += 3 {
		want := min(target/10, n-1)
		if got := searchTime(tb, n, target); got != want {
			t.Fatalf("time search for %d = slot %d, want %d", target, got, want)
		}
	}
}
