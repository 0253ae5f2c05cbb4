package store

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// benchRecords is 100 keyed 1 KiB records, as one producer batch.
func benchRecords() []record.Record {
	recs := make([]record.Record, 100)
	val := make([]byte, 1024)
	for i := range recs {
		recs[i] = record.Record{Key: fmt.Appendf(nil, "booking-%d", i), Value: val, Timestamp: 1}
	}
	return recs
}

// BenchmarkProduce appends keyed 1 KiB records over 12 partitions through
// the store (partitioned and batched per partition), and, as its baseline
// in the same run, the same batches appended to 12 Logs directly.
func BenchmarkProduce(b *testing.B) {
	recs := benchRecords()
	b.Run("store", func(b *testing.B) {
		s, err := Open(b.TempDir(), Options{OffsetsPartitions: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		if err := s.CreateTopic("t", 12, DefaultTopicConfig()); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(recs)) * 1024)
		for b.Loop() {
			if _, err := s.Produce("t", recs...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("logs", func(b *testing.B) {
		dir := b.TempDir()
		var logs []*seglog.Log
		for p := range 12 {
			l, err := seglog.Open(filepath.Join(dir, fmt.Sprintf("t-%d", p)), seglog.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			logs = append(logs, l)
		}
		// The same split the store makes, computed once: the baseline
		// pays only for the appends.
		byPart := make([][]record.Record, 12)
		for _, r := range recs {
			p := PartitionForKey(r.Key, 12)
			byPart[p] = append(byPart[p], r)
		}
		b.SetBytes(int64(len(recs)) * 1024)
		for b.Loop() {
			for p, rs := range byPart {
				if len(rs) > 0 {
					if _, err := logs[p].Append(rs...); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	})
}

// BenchmarkCommit1000Groups commits one offset for each of 1,000 groups.
func BenchmarkCommit1000Groups(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateTopic("t", 1, DefaultTopicConfig()); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Produce("t", benchRecords()...); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for g := range 1000 {
			if err := s.Commit(fmt.Sprint("group-", g), "t", map[int32]int64{0: int64(g % 100)}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
