package bench

import (
	"math/rand/v2"
	"time"

	"github.com/seglog/seglog/record"
)

// poolBytes is the size of the value pool records are cut from: larger
// than any CPU cache, so building a batch reads memory as a real producer's
// would.
const poolBytes = 8 << 20

// valuePool returns poolBytes+size bytes of random hexadecimal text (it
// compresses about 2:1, so codecs have work that resembles real payloads),
// from a fixed seed so every run writes the same bytes.
func valuePool(size int, seed uint64) []byte {
	const hex = "0123456789abcdef"
	rng := rand.New(rand.NewPCG(seed, 0x5e9109))
	p := make([]byte, poolBytes+size)
	for i := range p {
		p[i] = hex[rng.IntN(16)]
	}
	return p
}

// valueCursor hands out record values from the pool, each starting where
// the previous ended (wrapping), so consecutive records differ.
type valueCursor struct {
	pool []byte
	size int
	pos  int
}

func (c *valueCursor) next() []byte {
	if c.pos+c.size > len(c.pool) {
		c.pos = 0
	}
	v := c.pool[c.pos : c.pos+c.size : c.pos+c.size]
	c.pos += c.size + 1 // +1 shifts each pass so values do not repeat in step
	return v
}

// batchesPerWriter is the fewest distinct pre-built batches each writer
// cycles through (for the baseline and for producer batches).
const batchesPerWriter = 16

// batchesFor is how many distinct pre-built batches each of writers cycles
// through for batches of batch records of size bytes: at least
// batchesPerWriter, and enough that together they span as many bytes as
// the value pool. The engine's Append reads its values from the pool, so a
// baseline writing a few batches that stay in the CPU cache would compare
// a write from cache against a write from memory: about 10 µs of the 35 µs
// a 100 KiB append costs here.
func batchesFor(writers, batch, size int) int {
	per := poolBytes / max(1, writers*batch*(size+1))
	return max(batchesPerWriter, per+1)
}

// buildBatches builds n producer batches (base offset 0) of batch records
// each, compressed with codec, from cur. They are what a Kafka producer
// sends, and what the engine stores for the same records, so the write
// baseline writes exactly them.
func buildBatches(cur *valueCursor, n, batch int, codec record.Codec) ([][]byte, error) {
	bld := record.NewBuilder(codec)
	now := time.Now().UnixMilli()
	out := make([][]byte, n)
	for i := range out {
		bld.Reset()
		for j := range batch {
			if err := bld.Add(record.Record{Offset: int64(j), Timestamp: now, Value: cur.next()}); err != nil {
				return nil, err
			}
		}
		b, err := bld.Build()
		if err != nil {
			return nil, err
		}
		out[i] = append([]byte(nil), b...)
	}
	return out, nil
}
