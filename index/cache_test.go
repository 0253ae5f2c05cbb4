package index

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// makeSealed writes n sealed offset indexes with entries entries each and
// returns their paths and models.
func makeSealed(t *testing.T, fsys vfs.FS, dir string, n, entries int) ([]string, [][]OffsetPosition) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), uint64(entries)))
	var paths []string
	var models [][]OffsetPosition
	for i := 0; i < n; i++ {
		p := indexPath(dir, fmt.Sprintf("%020d.index", i*1000))
		x := mustOffset(t, fsys, p, int64(i*1000), Options{MaxBytes: 8 * entries, Writable: true})
		models = append(models, fillOffset(t, x, rng, entries))
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths, models
}

// TestLazyOpenMapsNothing opens sealed indexes and checks that nothing is
// mapped until the first lookup, while entry counts and last entries are
// already known.
func TestLazyOpenMapsNothing(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		paths, models := makeSealed(t, fsys, dir, 20, 30)
		cache := NewCache(0)
		var xs []*OffsetIndex
		for i, p := range paths {
			x := mustOffset(t, fsys, p, int64(i*1000), Options{MaxBytes: 1 << 20, Cache: cache})
			xs = append(xs, x)
			if x.Entries() != len(models[i]) || x.LastOffset() != models[i][len(models[i])-1].Offset {
				t.Fatalf("index %d: %d entries, last %d", i, x.Entries(), x.LastOffset())
			}
			if e, err := x.LastEntryErr(); err != nil || e != models[i][len(models[i])-1] {
				t.Fatalf("index %d: LastEntryErr() = %+v, %v", i, e, err)
			}
			if x.Writable() || !x.IsFull() {
				t.Fatal("a sealed index is writable or has free slots")
			}
		}
		// A time index's last entry is readable without mapping too.
		tp := indexPath(dir, "lazy.timeindex")
		tw := mustTime(t, fsys, tp, 0, Options{MaxBytes: 1200, Writable: true})
		for i := int64(1); i <= 5; i++ {
			if err := tw.MaybeAppend(i*100, i, false); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		ti := mustTime(t, fsys, tp, 0, Options{Cache: cache})
		if got := ti.LastEntry(); got != (TimestampOffset{500, 5}) || ti.Entries() != 5 {
			t.Fatalf("sealed time index: last %+v, %d entries", got, ti.Entries())
		}
		if s := cache.Stats(); s != (CacheStats{}) {
			t.Fatalf("stats after opening %+v, want nothing mapped", s)
		}
		for _, x := range xs {
			if mapped(&x.b) {
				t.Fatal("an index was mapped by opening it")
			}
		}
		if got, want := xs[3].Lookup(models[3][10].Offset), models[3][10]; got != want {
			t.Fatalf("Lookup = %+v, want %+v", got, want)
		}
		if s := cache.Stats(); s.Mapped != 1 || s.Maps != 1 || !mapped(&xs[3].b) {
			t.Fatalf("stats after one lookup %+v", s)
		}
		if ti.Lookup(250) != (TimestampOffset{200, 2}) || cache.Stats().Mapped != 2 {
			t.Fatalf("time lookup: %+v, stats %+v", ti.Lookup(250), cache.Stats())
		}
		for _, x := range xs {
			x.Close()
		}
		ti.Close()
		if s := cache.Stats(); s.Mapped != 0 {
			t.Fatalf("stats after Close %+v", s)
		}
	})
}

// TestCacheBound looks up 200 sealed indexes through a cache of 8 and checks
// the bound, the least-recently-used choice, and the answers.
func TestCacheBound(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		const n, bound = 200, 8
		paths, models := makeSealed(t, fsys, dir, n, 20)
		cache := NewCache(bound)
		xs := make([]*OffsetIndex, n)
		for i, p := range paths {
			xs[i] = mustOffset(t, fsys, p, int64(i*1000), Options{Cache: cache})
		}
		look := func(i int) {
			t.Helper()
			e := models[i][i%20]
			if got := xs[i].Lookup(e.Offset); got != e {
				t.Fatalf("index %d: Lookup(%d) = %+v, want %+v", i, e.Offset, got, e)
			}
		}
		countMapped := func() int {
			c := 0
			for _, x := range xs {
				if mapped(&x.b) {
					c++
				}
			}
			return c
		}
		for i := 0; i < bound; i++ {
			look(i)
		}
		look(0) // 0 is now the most recently used, 1 the least
		look(bound)
		if mapped(&xs[1].b) || !mapped(&xs[0].b) || !mapped(&xs[bound].b) {
			t.Fatalf("after LRU eviction: 0 mapped %v, 1 mapped %v", mapped(&xs[0].b), mapped(&xs[1].b))
		}
		if s := cache.Stats(); s.Mapped != bound || s.Evictions != 1 || s.Maps != bound+1 {
			t.Fatalf("stats %+v", s)
		}
		rng := rand.New(rand.NewPCG(15, 16))
		for k := 0; k < 3000; k++ {
			look(rng.IntN(n))
			if s := cache.Stats(); s.Mapped > bound || countMapped() != s.Mapped {
				t.Fatalf("stats %+v with %d indexes mapped", s, countMapped())
			}
		}
		// A writable index sharing the cache is not counted against it.
		w := mustOffset(t, fsys, indexPath(dir, "active.index"), 1<<20, Options{MaxBytes: 800, Writable: true, Cache: cache})
		if err := w.Append(1<<20+1, 0); err != nil {
			t.Fatal(err)
		}
		w.Lookup(1 << 21)
		if s := cache.Stats(); s.Mapped != bound {
			t.Fatalf("stats %+v after using a writable index", s)
		}
		if err := w.Seal(); err != nil {
			t.Fatal(err)
		}
		w.Lookup(1 << 21)
		if s := cache.Stats(); s.Mapped != bound || !mapped(&w.b) {
			t.Fatalf("stats %+v after using the sealed index", s)
		}
		// MakeWritable takes it out of the cache.
		if err := w.MakeWritable(); err != nil {
			t.Fatal(err)
		}
		if s := cache.Stats(); s.Mapped != bound-1 {
			t.Fatalf("stats %+v after MakeWritable", s)
		}
		w.Close()
		for _, x := range xs {
			x.Close()
		}
		if s := cache.Stats(); s.Mapped != 0 {
			t.Fatalf("stats %+v after closing everything", s)
		}
	})
}
