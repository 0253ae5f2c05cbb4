// Package seglogtest holds test helpers over seglog's own types, which
// internal/testutil cannot import (the root package's tests use it):
// reading a partition back batch by batch, as stored, for tests that
// compare replicas or copies byte for byte.
package seglogtest

import (
	"math"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// Batches returns every batch of v from its start to its end, whole and
// as stored (stamps and gaps included). A read error, or bytes that do
// not frame a batch, fails the test.
func Batches(tb testing.TB, v seglog.View) [][]byte {
	tb.Helper()
	var out [][]byte
	for off := v.StartOffset(); off < v.EndOffset(); {
		sl, err := v.Read(off, math.MaxInt32, seglog.ReadOptions{})
		if err != nil {
			tb.Fatalf("%s: reading at offset %d: %v", v.Dir(), off, err)
		}
		data := make([]byte, sl.Len())
		_, err = sl.ReadAt(data, 0)
		sl.Close()
		if err != nil {
			tb.Fatalf("%s: reading at offset %d: %v", v.Dir(), off, err)
		}
		if len(data) == 0 {
			tb.Fatalf("%s: nothing read at offset %d, the log ends at %d", v.Dir(), off, v.EndOffset())
		}
		for len(data) > 0 {
			if len(data) < record.HeaderSize {
				tb.Fatalf("%s: %d bytes at offset %d, less than a batch header", v.Dir(), len(data), off)
			}
			b := record.Batch(data)
			size := b.Size()
			if size < record.HeaderSize || size > len(data) {
				tb.Fatalf("%s: a batch of %d bytes in %d at offset %d", v.Dir(), size, len(data), off)
			}
			out = append(out, data[:size:size])
			off = b.NextOffset()
			data = data[size:]
		}
	}
	return out
}
