package index

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// fullOffsetIndex returns a full 10 MiB active offset index on the real
// filesystem (1,310,720 entries, offsets 2 apart) and its entries.
func fullOffsetIndex(b *testing.B) (*OffsetIndex, []OffsetPosition) {
	b.Helper()
	x := mustOffset(b, vfs.Default, indexPath(b.TempDir(), "bench.index"), 0, Options{Writable: true})
	entries := make([]OffsetPosition, 0, x.MaxEntries())
	for i := int64(1); !x.IsFull(); i++ {
		if err := x.Append(2*i, 100*i); err != nil {
			b.Fatal(err)
		}
		entries = append(entries, OffsetPosition{2 * i, 100 * i})
	}
	b.Cleanup(func() { x.Delete() })
	return x, entries
}

func randomTargets(n int, last int64) []int64 {
	rng := rand.New(rand.NewPCG(1, 1))
	t := make([]int64, n)
	for i := range t {
		t[i] = rng.Int64N(last + 1)
	}
	return t
}

// BenchmarkOffsetLookup compares the index's lookup of a random offset in a
// full, warm 10 MiB index (the mapping is in the page cache after the
// appends) with sort.Search over an in-memory slice of the same entries.
func BenchmarkOffsetLookup(b *testing.B) {
	x, entries := fullOffsetIndex(b)
	targets := randomTargets(1<<16, entries[len(entries)-1].Offset)
	b.Run("index/random", func(b *testing.B) {
		b.ReportAllocs()
		var sink int64
		for i := 0; b.Loop(); i++ {
			sink += x.Lookup(targets[i&(len(targets)-1)]).Position
		}
		_ = sink
	})
	b.Run("sort.Search/random", func(b *testing.B) {
		b.ReportAllocs()
		var sink int64
		for i := 0; b.Loop(); i++ {
			t := targets[i&(len(targets)-1)]
			j := sort.Search(len(entries), func(j int) bool { return entries[j].Offset > t }) - 1
			if j >= 0 {
				sink += entries[j].Position
			}
		}
		_ = sink
	})
	// Tail lookups, what followers and tailing consumers do: the warm
	// section only.
	last := entries[len(entries)-1].Offset
	tail := randomTargets(1<<16, 2000)
	b.Run("index/tail", func(b *testing.B) {
		b.ReportAllocs()
		var sink int64
		for i := 0; b.Loop(); i++ {
			sink += x.Lookup(last - tail[i&(len(tail)-1)]).Position
		}
		_ = sink
	})
	b.Run("sort.Search/tail", func(b *testing.B) {
		b.ReportAllocs()
		var sink int64
		for i := 0; b.Loop(); i++ {
			t := last - tail[i&(len(tail)-1)]
			j := sort.Search(len(entries), func(j int) bool { return entries[j].Offset > t }) - 1
			if j >= 0 {
				sink += entries[j].Position
			}
		}
		_ = sink
	})
}

// BenchmarkOffsetAppend measures appends into a mapped active index
// (bytes per op: one 8-byte entry).
func BenchmarkOffsetAppend(b *testing.B) {
	x := mustOffset(b, vfs.Default, indexPath(b.TempDir(), "append.index"), 0, Options{Writable: true})
	defer x.Delete()
	b.SetBytes(OffsetEntrySize)
	b.ReportAllocs()
	off := int64(0)
	for b.Loop() {
		if x.IsFull() {
			b.StopTimer()
			if err := x.Reset(); err != nil {
				b.Fatal(err)
			}
			off = 0
			b.StartTimer()
		}
		off++
		if err := x.Append(off, off); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSealedLookupCached measures lookups spread over 64 sealed
// indexes through a cache that holds all of them (the LRU bookkeeping).
func BenchmarkSealedLookupCached(b *testing.B) {
	fsys := vfs.Default
	dir := b.TempDir()
	cache := NewCache(64)
	var xs []*OffsetIndex
	for i := 0; i < 64; i++ {
		p := indexPath(dir, "s"+string(rune('a'+i%26))+string(rune('a'+i/26))+".index")
		w := mustOffset(b, fsys, p, 0, Options{MaxBytes: 8 * 1000, Writable: true})
		for k := int64(1); k <= 1000; k++ {
			if err := w.Append(k, k); err != nil {
				b.Fatal(err)
			}
		}
		w.Close()
		xs = append(xs, mustOffset(b, fsys, p, 0, Options{Cache: cache}))
	}
	b.ReportAllocs()
	var sink int64
	for i := 0; b.Loop(); i++ {
		sink += xs[i&63].Lookup(int64(i % 1000)).Position
	}
	_ = sink
	for _, x := range xs {
		x.Close()
	}
}
