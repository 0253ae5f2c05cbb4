package replica

import (
	"testing"

	"github.com/hashicorp/raft"
)

// BenchmarkStoreLogs64 stores calls of 64 one-record command entries, as
// a follower's AppendEntries brings them, on the real filesystem: each
// entry is a batch appended and synced on its own (see the package doc).
func BenchmarkStoreLogs64(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := producerBatch(b, 1, 1, 1_700_000_000_000)
	next := uint64(1)
	b.SetBytes(64 * int64(len(batch)))
	for b.Loop() {
		ls := make([]*raft.Log, 64)
		for i := range ls {
			ls[i] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: batch}
			next++
		}
		if err := s.StoreLogs(ls); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetLog reads entries at random from a log of 10,000 batches
// through the anchors' tables.
func BenchmarkGetLog(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Logger: quiet, SegmentBytes: 256 << 10})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := producerBatch(b, 1, 1, 1_700_000_000_000)
	const n = 10_000
	ls := make([]*raft.Log, 0, n)
	for i := uint64(1); i <= n; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: batch})
	}
	if err := s.StoreLogs(ls); err != nil {
		b.Fatal(err)
	}
	var l raft.Log
	i := uint64(0)
	for b.Loop() {
		i = (i*7919 + 1) % n
		if err := s.GetLog(i+1, &l); err != nil {
			b.Fatal(err)
		}
	}
}
