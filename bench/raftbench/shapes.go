package raftbench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/raft"
)

// Shape is one measured workload. Setup (untimed, may be nil) prepares a
// fresh store; Op runs the i-th operation on it (i counts from 0, the
// first few calls untimed warm-up). A Cluster shape has neither: it runs
// a 3-node cluster of the peer (ClusterRate).
type Shape struct {
	Name    string
	Setup   func(s Store) error
	Op      func(s Store, i int) error
	Cluster bool
}

// Payload sizes of the shapes issue 29 asks for.
const (
	small = 128
	large = 1024
	// ReadEntries is how many 1 KiB entries the GetLog shapes store (64
	// per call, as a leader's MaxAppendEntries batches them) before
	// reading: 50 MiB, more than any store caches by shape alone.
	ReadEntries = 64 * 800
)

// Shapes returns every shape, in the order a run measures them; the
// cluster applies commands 1 KiB commands.
func Shapes(commands int) []Shape {
	var ts []Shape
	for _, size := range []int{small, large} {
		for _, n := range []int{1, 16, 128} {
			ts = append(ts, storeLogsShape(n, size))
		}
	}
	ts = append(ts,
		Shape{Name: "GetLog sequential, 1 KiB entries stored 64 per call", Setup: fillLog, Op: func(s Store, i int) error {
			var l raft.Log
			return s.GetLog(uint64(i%ReadEntries)+1, &l)
		}},
		getLogRandom(),
		Shape{Name: "Set (8-byte value, one key)", Op: func(s Store, i int) error {
			return s.Set(keyVote, binary.BigEndian.AppendUint64(nil, uint64(i)))
		}},
		Shape{Name: "SetUint64 (one key)", Op: func(s Store, i int) error {
			return s.SetUint64(keyTerm, uint64(i)+1)
		}},
		Shape{Name: "Get (one of two keys set)", Setup: func(s Store) error {
			if err := s.Set(keyVote, []byte("node-1")); err != nil {
				return err
			}
			return s.SetUint64(keyTerm, 7)
		}, Op: func(s Store, i int) error {
			v, err := s.Get(keyVote)
			if err == nil && len(v) != len("node-1") {
				err = fmt.Errorf("the vote read back as %q", v)
			}
			return err
		}},
		Shape{Name: fmt.Sprintf("3-node cluster, %d applied 1 KiB commands", commands), Cluster: true},
	)
	return ts
}

// The keys raft itself stores (raft/api.go: keyCurrentTerm, keyLastVoteCand).
var (
	keyTerm = []byte("CurrentTerm")
	keyVote = []byte("LastVoteCand")
)

// storeLogsShape appends n contiguous entries of size bytes per call, the
// way raft's leader and followers call StoreLogs, from index 1 of a fresh
// store. The entries are built before the op runs; only StoreLogs is
// timed beyond a loop that stamps indexes.
func storeLogsShape(n, size int) Shape {
	name := fmt.Sprintf("StoreLogs %d × %d B", n, size)
	if size == large {
		name = fmt.Sprintf("StoreLogs %d × 1 KiB", n)
	}
	data := payload(size, uint64(size))
	logs := make([]*raft.Log, n)
	for i := range logs {
		logs[i] = &raft.Log{Term: 1, Data: data, AppendedAt: time.Now()}
	}
	return Shape{Name: name, Op: func(s Store, i int) error {
		for j, l := range logs {
			l.Index = uint64(i*n+j) + 1
		}
		return s.StoreLogs(logs)
	}}
}

// fillLog stores ReadEntries 1 KiB entries, 64 per call, from index 1.
func fillLog(s Store) error {
	data := payload(large, 3)
	logs := make([]*raft.Log, 64)
	for i := 0; i < ReadEntries; i += len(logs) {
		for j := range logs {
			logs[j] = &raft.Log{Index: uint64(i+j) + 1, Term: 1, Data: data, AppendedAt: time.Now()}
		}
		if err := s.StoreLogs(logs); err != nil {
			return err
		}
	}
	return nil
}

// getLogRandom reads entries at indexes drawn from a fixed-seed generator
// (the same sequence for every store and round), as a follower catching
// up from an arbitrary point or a leader answering a lagging peer does.
func getLogRandom() Shape {
	idx := make([]uint64, 1<<16)
	rng := rand.New(rand.NewPCG(29, 29))
	for i := range idx {
		idx[i] = uint64(rng.IntN(ReadEntries)) + 1
	}
	return Shape{Name: "GetLog random, 1 KiB entries stored 64 per call", Setup: fillLog, Op: func(s Store, i int) error {
		var l raft.Log
		want := idx[i%len(idx)]
		if err := s.GetLog(want, &l); err != nil {
			return err
		}
		if l.Index != want || len(l.Data) != large {
			return fmt.Errorf("GetLog(%d) returned index %d with %d bytes", want, l.Index, len(l.Data))
		}
		return nil
	}}
}

// payload returns size bytes of hex digits from a fixed-seed generator:
// the same for every store, incompressible enough, made before anything
// is timed.
func payload(size int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = "0123456789abcdef"[rng.IntN(16)]
	}
	return buf
}

// TimeOps runs op on s, after a few untimed warm-up calls, until at least
// d has passed (and at least 16 timed calls), and returns the nanoseconds
// per call.
func TimeOps(s Store, op func(s Store, i int) error, d time.Duration) (float64, error) {
	i := 0
	for ; i < 4; i++ {
		if err := op(s, i); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	n := 0
	for {
		if err := op(s, i); err != nil {
			return 0, err
		}
		i++
		n++
		// Reading the clock every call would be a visible share of a Get.
		if n%16 == 0 {
			if el := time.Since(start); el >= d {
				return float64(el.Nanoseconds()) / float64(n), nil
			}
		}
	}
}
