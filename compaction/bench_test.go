package compaction

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// BenchmarkClean is one round over 1,000,000 uncompressed records of
// 100-byte values, as `seglog bench compact` writes them, for profiling
// (-benchtime=1x: a round compacts the log it measures).
func BenchmarkClean(b *testing.B) {
	for _, keys := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				l, err := seglog.Open(b.TempDir(), seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: 64 << 20, Sync: seglog.SyncNone}})
				if err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(uint64(keys), 1))
				value := make([]byte, 100)
				for i := range value {
					value[i] = byte('a' + rng.IntN(26))
				}
				recs := make([]record.Record, 100)
				for n := 0; n < 1_000_000; n += len(recs) {
					for i := range recs {
						recs[i] = record.Record{Key: fmt.Appendf(nil, "key-%09d", rng.IntN(keys)), Value: value}
					}
					if _, err := l.Append(recs...); err != nil {
						b.Fatal(err)
					}
				}
				if err := l.Roll(); err != nil {
					b.Fatal(err)
				}
				size := l.Size()
				m := NewOffsetMap(DefaultMapBytes, 0)
				b.SetBytes(size)
				b.StartTimer()
				if _, err := Clean(l, m, 0, l.EndOffset(), Options{SegmentBytes: 64 << 20}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				l.Close()
			}
		})
	}
}
