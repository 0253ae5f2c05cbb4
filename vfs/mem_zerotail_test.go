package vfs

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestMemZeroTailAgainstModel drives one MemFS file through random
// writes, truncations (down and up), preallocations, writable mappings
// with stores anywhere in them (zero stores over non-zero bytes too),
// flushes, unmaps and syncs, and after every step compares what ReadAt
// returns, and what a crash would keep, with a plain model of the bytes.
// MemFS copies only the bytes below the point past which a file is known
// to be zero (growth, the room made before a mapping, a mapping's flush):
// a store that point missed would be lost by one of those copies, and a
// stale byte past it would reappear after a shrink and regrow.
func TestMemZeroTailAgainstModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		m, f := memWith(t, "f", "")
		if err := m.SyncDir("/d"); err != nil {
			t.Fatal(err)
		}
		var data, durable []byte // the model: current and crash-surviving bytes
		var mp Mapping
		var mapLen int
		fill := func(n int) []byte {
			p := make([]byte, n)
			for i := range p {
				if rng.IntN(4) != 0 {
					p[i] = byte(1 + rng.IntN(255))
				}
			}
			return p
		}
		resize := func(b []byte, n int) []byte {
			if n <= len(b) {
				return b[:n]
			}
			return append(b, make([]byte, n-len(b))...)
		}
		const maxSize = 96 << 10
		for step := range 400 {
			var op string
			switch r := rng.IntN(10); {
			case r < 3:
				op = "write"
				off := rng.IntN(maxSize)
				p := fill(1 + rng.IntN(9000))
				if mp != nil && off+len(p) > len(data) {
					break // a mapped file may not grow past its room
				}
				if _, err := f.WriteAt(p, int64(off)); err != nil {
					t.Fatal(err)
				}
				data = resize(data, max(len(data), off+len(p)))
				copy(data[off:], p)
			case r < 5:
				op = "truncate"
				n := rng.IntN(maxSize)
				if mp != nil && n > mapLen {
					n = rng.IntN(mapLen + 1) // the test keeps stores inside the file
				}
				if err := f.Truncate(int64(n)); err != nil {
					t.Fatal(err)
				}
				data = resize(data, n)
			case r < 6:
				op = "preallocate"
				if mp != nil {
					break
				}
				n := 1 + rng.IntN(maxSize)
				if err := f.Preallocate(0, int64(n)); err != nil {
					t.Fatal(err)
				}
				data = resize(data, max(len(data), n))
			case r < 8:
				if mp == nil {
					op = "map"
					if len(data) == 0 {
						break
					}
					mapLen = 1 + rng.IntN(len(data))
					var err error
					if mp, err = f.Map(mapLen, true); err != nil {
						t.Fatal(err)
					}
					break
				}
				op = "store"
				buf := mp.Bytes()
				end := min(mapLen, len(data))
				if end == 0 {
					break
				}
				off := rng.IntN(end)
				if rng.IntN(3) == 0 {
					off = end - 1 - rng.IntN(min(end, 16)) // near the end
				}
				p := fill(1 + rng.IntN(min(end-off, 300)))
				if rng.IntN(5) == 0 {
					clear(p) // zeros over what may not be zero
				}
				copy(buf[off:], p)
				copy(data[off:], p)
			case r < 9:
				if mp == nil {
					op = "sync"
					if err := f.Sync(); err != nil {
						t.Fatal(err)
					}
					durable = bytes.Clone(data)
					break
				}
				op = "flush"
				if err := mp.Flush(); err != nil {
					t.Fatal(err)
				}
				l := min(mapLen, len(data))
				durable = resize(durable, max(len(durable), l))
				copy(durable, data[:l])
			default:
				op = "unmap"
				if mp == nil {
					break
				}
				if err := mp.Unmap(); err != nil {
					t.Fatal(err)
				}
				mp = nil
			}
			got := make([]byte, len(data))
			if n, _ := f.ReadAt(got, 0); n != len(data) || !bytes.Equal(got, data) {
				t.Fatalf("seed %d step %d (%s): ReadAt differs from the model (%d of %d bytes read)", seed, step, op, n, len(data))
			}
			if size, _ := f.Size(); size != int64(len(data)) {
				t.Fatalf("seed %d step %d (%s): size %d, model %d", seed, step, op, size, len(data))
			}
			if op == "sync" || op == "flush" {
				if kept, _ := contents(t, m.CrashClone(), "/d/f"); kept != string(durable) {
					t.Fatalf("seed %d step %d (%s): a crash keeps %d bytes that differ from the model's %d durable ones", seed, step, op, len(kept), len(durable))
				}
			}
		}
		if mp != nil {
			mp.Unmap()
		}
		f.Close()
	}
}
