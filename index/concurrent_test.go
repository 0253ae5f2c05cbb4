package index

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// TestConcurrentLookups runs one appender and 8 lookup goroutines on an
// active offset and time index, then seals them while the readers go on,
// and makes the readers also hit sealed indexes through a small cache so
// evictions happen under them. Run with -race.
func TestConcurrentLookups(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		const base, n = 5000, 6000
		paths, models := makeSealed(t, fsys, dir, 12, 50)
		cache := NewCache(3)
		sealed := make([]*OffsetIndex, len(paths))
		for i, p := range paths {
			sealed[i] = mustOffset(t, fsys, p, int64(i*1000), Options{Cache: cache})
		}
		ox := mustOffset(t, fsys, indexPath(dir, "hot.index"), base, Options{MaxBytes: 8 * n, Writable: true, Cache: cache})
		tx := mustTime(t, fsys, indexPath(dir, "hot.timeindex"), base, Options{MaxBytes: 12 * n, Writable: true, Cache: cache})

		// Entry i is offset base+2(i+1) at position 10(i+1), and timestamp
		// 100(i+1) at that offset, so every answer can be checked alone.
		var done atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan string, 16)
		report := func(s string) {
			select {
			case errs <- s:
			default:
			}
		}
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, 99))
				for !done.Load() {
					published := int64(ox.Entries())
					target := base + rng.Int64N(2*n+10)
					got := ox.Lookup(target)
					// Entries published before the lookup must be seen.
					want := min((target-base)/2, published)
					if got.Offset > target || got.Position != 5*(got.Offset-base) || got.Offset < base+2*want {
						report("offset lookup inconsistent")
					}
					tp := int64(tx.Entries())
					ts := rng.Int64N(100*n + 200)
					te := tx.Lookup(ts)
					if te.Timestamp == NoTimestamp {
						if te.Offset != base || (ts >= 100 && tp > 0) {
							report("time lookup missed published entries")
						}
					} else if te.Timestamp > ts || te.Offset != base+te.Timestamp/50 || te.Timestamp < 100*min(ts/100, tp) {
						report("time lookup inconsistent")
					}
					i := rng.IntN(len(sealed))
					e := models[i][rng.IntN(50)]
					if sealed[i].Lookup(e.Offset) != e {
						report("sealed lookup wrong")
					}
				}
			}(uint64(g))
		}
		for i := int64(1); i <= n; i++ {
			if err := ox.Append(base+2*i, 10*i); err != nil {
				t.Fatal(err)
			}
			if err := tx.MaybeAppend(100*i, base+2*i, true); err != nil {
				t.Fatal(err)
			}
			if i%1000 == 0 {
				if err := ox.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := ox.Seal(); err != nil {
			t.Fatal(err)
		}
		if err := tx.Seal(); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 200; k++ {
			ox.Lookup(base + int64(k)) // readers now map the sealed hot index lazily
		}
		done.Store(true)
		wg.Wait()
		close(errs)
		for s := range errs {
			t.Error(s)
		}
		if s := cache.Stats(); s.Mapped > 3+8 {
			t.Errorf("stats %+v: far over the bound", s)
		}
		for _, x := range sealed {
			x.Close()
		}
		ox.Close()
		tx.Close()
	})
}
