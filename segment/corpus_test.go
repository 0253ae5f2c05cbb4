package segment

import (
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestKafkaClientCorpus loads the log an in-process Kafka broker stored for
// a real client (every codec, transaction markers for zstd) as a segment:
// recovery must accept all of it, and lookups by offset and by time must
// agree with a brute-force walk of its records.
func TestKafkaClientCorpus(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			raw := readFile(t, vfs.OS(), "../testdata/kafka-client/"+codec+".broker-log")
			m := &model{base: 0}
			var it record.Iterator
			for pos := 0; pos < len(raw); {
				b := record.Batch(raw[pos:])
				b = b[:b.Size()]
				if err := b.Validate(); err != nil {
					t.Fatalf("corpus batch at %d: %v", pos, err)
				}
				mb := mbatch{pos: int64(pos), size: int64(len(b)), base: b.BaseOffset(), last: b.LastOffset(), maxTS: b.MaxTimestamp(), bytes: b}
				if err := it.Reset(b); err != nil {
					t.Fatal(err)
				}
				for it.Next() {
					mb.recs = append(mb.recs, rec{it.Record().Offset, it.Record().Timestamp})
				}
				if it.Err() != nil {
					t.Fatal(it.Err())
				}
				m.batches = append(m.batches, mb)
				pos += len(b)
			}
			e := env{"mem", vfs.NewMem(), "/seg"}
			if err := e.fs.MkdirAll(e.dir); err != nil {
				t.Fatal(err)
			}
			opts := Options{IndexIntervalBytes: 1024, MaxIndexBytes: smallIdx}
			s, res := recoverFrom(t, e, 0, opts, raw)
			defer s.Close()
			if res.Reason != nil || res.ValidBytes != int64(len(raw)) || res.Batches != len(m.batches) {
				t.Fatalf("Recover = %+v", res)
			}
			checkState(t, s, m)
			checkFind(t, s, m)
			lo, hi := int64(1<<62), int64(-1)
			for _, b := range m.batches {
				for _, r := range b.recs {
					lo, hi = min(lo, r.ts), max(hi, r.ts)
				}
			}
			step := max((hi-lo)/200, 1)
			for ts := lo - 1; ts <= hi+1; ts += step {
				got, ok, err := s.FindOffsetForTime(ts)
				want, wok := m.offsetForTime(ts, 0)
				if err != nil || ok != wok || (ok && got != want) {
					t.Fatalf("FindOffsetForTime(%d) = %d, %v, %v; want %d, %v", ts, got, ok, err, want, wok)
				}
			}
		})
	}
}
