package segment

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// BenchmarkScanRemnant measures the resynchronizing scan recovery runs over
// the bytes after damage, on what such bytes usually are: zeros (a hole a
// crash left), random bytes (garbage), and valid batches (the rest of a
// segment after a flipped byte).
func BenchmarkScanRemnant(b *testing.B) {
	const size = 16 << 20
	random := make([]byte, size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	var batches bytes.Buffer
	g := newGen(3, 0, 1000)
	for batches.Len() < size {
		batches.Write(g.batch(b).bytes)
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"zeros", make([]byte, size)}, {"random", random}, {"batches", batches.Bytes()}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				rem, err := scanRemnant(bytes.NewReader(c.data), "x.log", 0, int64(len(c.data)))
				if err != nil || (c.name == "batches") != rem.HoldsValid() {
					b.Fatalf("%+v, %v", rem, err)
				}
			}
		})
	}
}
