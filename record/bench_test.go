package record

import (
	"fmt"
	"hash/crc32"
	"math/rand"
	"testing"
	"time"
)

// benchRecords makes n records with 8-byte keys and size-byte values of
// compressible text, like the client corpus.
func benchRecords(n, size int) []Record {
	rng := rand.New(rand.NewSource(1))
	recs := make([]Record, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = 'a' + byte(rng.Intn(8))
		}
		recs[i] = Record{Offset: int64(i), Timestamp: 1_700_000_000_000 + int64(i), Key: fmt.Appendf(nil, "key-%04d", i%64), Value: v}
	}
	return recs
}

var benchSizes = []struct {
	name string
	size int
}{{"100B", 100}, {"1KiB", 1024}}

// BenchmarkCRC32C is the baseline: CRC-32C over the bytes of an
// uncompressed batch of 100 records of each size.
func BenchmarkCRC32C(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			bld := NewBuilder(None)
			for _, r := range benchRecords(100, s.size) {
				if err := bld.Add(r); err != nil {
					b.Fatal(err)
				}
			}
			batch, _ := bld.Build()
			tab := crc32.MakeTable(crc32.Castagnoli)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				crc32.Checksum(batch[crcStart:], tab)
			}
		})
	}
}

// BenchmarkBuild builds a batch of 100 records into a reused builder.
// Bytes are the uncompressed batch size.
func BenchmarkBuild(b *testing.B) {
	for _, c := range Codecs {
		for _, s := range benchSizes {
			b.Run(c.String()+"/"+s.name, func(b *testing.B) {
				recs := benchRecords(100, s.size)
				bld := NewBuilder(c)
				build := func() {
					bld.Reset()
					for _, r := range recs {
						if err := bld.Add(r); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := bld.Build(); err != nil {
						b.Fatal(err)
					}
				}
				build()
				b.SetBytes(int64(bld.UncompressedSize()))
				b.ReportAllocs()
				for b.Loop() {
					build()
				}
				b.ReportMetric(float64(testing.AllocsPerRun(10, build))/100, "allocs/record")
			})
		}
	}
}

// BenchmarkParse validates a batch of 100 records (CRC included),
// decompresses it and iterates every record, with a reused Iterator.
// Bytes are the uncompressed batch size, so codecs compare on the same
// payload.
func BenchmarkParse(b *testing.B) {
	for _, c := range Codecs {
		for _, s := range benchSizes {
			b.Run(c.String()+"/"+s.name, func(b *testing.B) {
				bld := NewBuilder(c)
				for _, r := range benchRecords(100, s.size) {
					if err := bld.Add(r); err != nil {
						b.Fatal(err)
					}
				}
				raw := bld.UncompressedSize()
				built, _ := bld.Build()
				batch := append(Batch(nil), built...)
				var it Iterator
				var sum int
				b.SetBytes(int64(raw))
				b.ReportAllocs()
				for b.Loop() {
					if err := batch.Validate(); err != nil {
						b.Fatal(err)
					}
					if err := it.Reset(batch); err != nil {
						b.Fatal(err)
					}
					for it.Next() {
						sum += len(it.Record().Value)
					}
					if it.Err() != nil {
						b.Fatal(it.Err())
					}
				}
				if sum == 0 {
					b.Fatal("no records")
				}
			})
		}
	}
}

// BenchmarkParseVsCRC interleaves the CRC-32C baseline and parse + iterate
// of the same uncompressed batch in every iteration and times each, so the
// reported ratio (parse throughput ÷ CRC throughput) is measured under the
// same machine load even on a busy shared host.
func BenchmarkParseVsCRC(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			bld := NewBuilder(None)
			for _, r := range benchRecords(100, s.size) {
				if err := bld.Add(r); err != nil {
					b.Fatal(err)
				}
			}
			built, _ := bld.Build()
			batch := append(Batch(nil), built...)
			tab := crc32.MakeTable(crc32.Castagnoli)
			var it Iterator
			var crcTime, parseTime time.Duration
			var sink uint32
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				sink += crc32.Checksum(batch[crcStart:], tab)
				t1 := time.Now()
				if err := batch.Validate(); err != nil {
					b.Fatal(err)
				}
				it.Reset(batch)
				for it.Next() {
					sink += uint32(len(it.Record().Value))
				}
				t2 := time.Now()
				crcTime += t1.Sub(t0)
				parseTime += t2.Sub(t1)
			}
			n := float64(b.N) * float64(len(batch))
			b.ReportMetric(n/crcTime.Seconds()/1e6, "crc-MB/s")
			b.ReportMetric(n/parseTime.Seconds()/1e6, "parse-MB/s")
			b.ReportMetric(crcTime.Seconds()/parseTime.Seconds(), "ratio")
			if sink == 0 {
				b.Fatal("no work")
			}
		})
	}
}

// benchAddRecords makes 100 records like those Log.Append is given: no
// key, no headers, size-byte values, a timestamp set.
func benchAddRecords(size int) []Record {
	recs := make([]Record, 100)
	val := make([]byte, size)
	for i := range val {
		val[i] = byte(i)
	}
	for i := range recs {
		recs[i] = Record{Timestamp: 1_700_000_000_000, Value: val}
	}
	return recs
}

// benchAdd times Reset, fill and Build of an uncompressed batch of 100
// records into a reused builder, and reports the cost per record. fill
// gets the whole batch so that its per-record call is a direct one, as in
// Log.Append, which Add is inlined into.
func benchAdd(b *testing.B, fill func(bld *Builder, recs []Record, now int64) error) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			recs := benchAddRecords(s.size)
			bld := NewBuilder(None)
			b.ReportAllocs()
			for b.Loop() {
				bld.Reset()
				if err := fill(bld, recs, 1); err != nil {
					b.Fatal(err)
				}
				if _, err := bld.Build(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
		})
	}
}

// BenchmarkBuilderAdd is the cost per record of building a batch with
// Add, Build and its CRC included, called as Log.Append calls it: with a
// copy of each record given its offset and default timestamp.
func BenchmarkBuilderAdd(b *testing.B) {
	benchAdd(b, func(bld *Builder, recs []Record, now int64) error {
		for i, r := range recs {
			r.Offset = int64(i)
			if r.Timestamp == 0 {
				r.Timestamp = now
			}
			if err := bld.Add(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkBuilderAddAt is BenchmarkBuilderAdd with AddAt, which takes
// the offset and timestamp apart and so needs no copy of the record.
func BenchmarkBuilderAddAt(b *testing.B) {
	benchAdd(b, func(bld *Builder, recs []Record, now int64) error {
		for i := range recs {
			ts := recs[i].Timestamp
			if ts == 0 {
				ts = now
			}
			if err := bld.AddAt(int64(i), ts, &recs[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkBuilderAddReference is BenchmarkBuilderAdd with the encoder
// Add had before (refAdd), for comparison in the same run.
func BenchmarkBuilderAddReference(b *testing.B) {
	benchAdd(b, func(bld *Builder, recs []Record, now int64) error {
		for i, r := range recs {
			r.Offset = int64(i)
			if r.Timestamp == 0 {
				r.Timestamp = now
			}
			if err := refAdd(bld, r); err != nil {
				return err
			}
		}
		return nil
	})
}
