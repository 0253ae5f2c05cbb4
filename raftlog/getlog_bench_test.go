package raftlog

import (
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
)

// benchStore opens a durable Store on the real filesystem holding n
// entries of 1 KiB stored 64 per StoreLogs, as a leader writes them.
func benchStore(b *testing.B, n int) *Store {
	b.Helper()
	s, err := Open(b.TempDir(), Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	data := make([]byte, 1024)
	for i := 0; i < n; i += 64 {
		logs := make([]*raft.Log, 64)
		for j := range logs {
			logs[j] = &raft.Log{Index: uint64(i + j + 1), Term: 1, Data: data}
		}
		if err := s.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

const benchEntries = 64 * 800

// BenchmarkGetLogRandom reads uniformly random indexes, as raft does when
// a follower far behind is caught up or an FSM replays from a snapshot's
// index while others replicate.
func BenchmarkGetLogRandom(b *testing.B) {
	s := benchStore(b, benchEntries)
	rng := rand.New(rand.NewPCG(1, 2))
	idx := make([]uint64, 1<<16)
	for i := range idx {
		idx[i] = uint64(rng.IntN(benchEntries)) + 1
	}
	var l raft.Log
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if err := s.GetLog(idx[n&(len(idx)-1)], &l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetLogSequential reads in index order, as raft's replication
// does.
func BenchmarkGetLogSequential(b *testing.B) {
	s := benchStore(b, benchEntries)
	var l raft.Log
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if err := s.GetLog(uint64(n%benchEntries)+1, &l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetLogRandomCheckingCRC is the alternative to trusting a batch
// whose table was built: every random read reads its whole batch, checks
// its CRC and decodes its one entry (docs/raft.md, Reads, has the numbers
// that chose against it).
func BenchmarkGetLogRandomCheckingCRC(b *testing.B) {
	s := benchStore(b, benchEntries)
	rng := rand.New(rand.NewPCG(1, 2))
	var l raft.Log
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		off := int64(rng.IntN(benchEntries))
		bt, err := s.readBatchInto(off, &buf)
		if err != nil {
			b.Fatal(err)
		}
		if err := decodeAt(bt, off, &l); err != nil {
			b.Fatal(err)
		}
	}
}
