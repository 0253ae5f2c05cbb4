package segment

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/record"
)

// TestConcurrentReaders runs one appending writer and eight readers that
// check every answer against what was published: a reader that sees offset
// o below NextOffset must find the whole, valid batch holding it.
func TestConcurrentReaders(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		const base = 10
		s := mustCreate(t, e, base, Options{IndexIntervalBytes: 150, MaxIndexBytes: smallIdx})
		defer s.Close()
		m := &model{base: base}
		g := newGen(60, base, 60)
		batches := 1500
		if testing.Short() {
			batches = 300
		}
		var done atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for r := 0; r < 8; r++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(seed, 1))
				buf := make([]byte, 0, 4096)
				fail := func(msg string) {
					select {
					case errs <- msg:
					default:
					}
				}
				for !done.Load() {
					next := s.NextOffset()
					if next == base {
						continue
					}
					off := base + rnd.Int64N(next-base)
					bp, ok, err := s.FindPosition(off)
					if err != nil || !ok {
						fail("FindPosition of a published offset failed")
						return
					}
					if bp.LastOffset < off || bp.BaseOffset > bp.LastOffset || bp.Position+bp.Size > s.Size() {
						fail("FindPosition returned an inconsistent batch")
						return
					}
					buf = buf[:bp.Size]
					if n, err := s.ReadAt(buf, bp.Position); err != nil || int64(n) != bp.Size {
						fail("ReadAt of a published batch failed")
						return
					}
					b := record.Batch(buf)
					if b.Validate() != nil || b.BaseOffset() != bp.BaseOffset || b.LastOffset() != bp.LastOffset {
						fail("published batch bytes are not the batch")
						return
					}
					n := 0
					for b, err := range s.Batches(bp.Position, bp.Position+bp.Size) {
						if err != nil || b.BaseOffset() != bp.BaseOffset {
							fail("Batches over a published batch failed")
							return
						}
						n++
					}
					if n != 1 {
						fail("Batches over one batch did not yield it")
						return
					}
					if _, _, err := s.FindOffsetForTime(1_000_000 + rnd.Int64N(20_000)); err != nil {
						fail("FindOffsetForTime failed: " + err.Error())
						return
					}
					_ = s.MaxTimestamp()
				}
			}(uint64(r))
		}
		appendN(t, s, m, g, batches)
		done.Store(true)
		wg.Wait()
		close(errs)
		for msg := range errs {
			t.Fatal(msg)
		}
		checkState(t, s, m)
		checkFind(t, s, m)
	})
}
