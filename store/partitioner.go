package store

import (
	"math/rand/v2"
	"sync"
)

// Murmur2 is Kafka's Utils.murmur2, the hash of its default partitioner,
// bit for bit (Java's signed int arithmetic is two's complement, as Go's
// uint32 arithmetic reinterpreted).
func Murmur2(data []byte) int32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	n := len(data)
	h := uint32(seed) ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// PartitionForKey is Kafka's default partitioner for a keyed record:
// toPositive(murmur2(key)) % partitions, where toPositive clears the sign
// bit (Utils.toPositive).
func PartitionForKey(key []byte, partitions int) int32 {
	return int32(uint32(Murmur2(key)) & 0x7fffffff % uint32(partitions))
}

// stickyTable holds each topic's sticky partition for keyless records.
// Kafka's sticky partitioner sends keyless records to one partition until
// a batch is full; a Produce call is one batch per partition, so all of a
// call's keyless records go to one partition and the next call moves on.
// Moving on is round robin from a random first partition rather than
// Kafka's random pick weighted by queue sizes (a store has no queues): the
// spread over calls is even and deterministic given the start.
type stickyTable struct {
	mu sync.Mutex
}

// next returns the partition for a call's keyless records.
func (st *stickyTable) next(t *topic) int32 {
	st.mu.Lock()
	defer st.mu.Unlock()
	if t.rotate < 0 || t.rotate >= len(t.parts) {
		t.rotate = rand.IntN(len(t.parts))
	}
	p := t.rotate
	t.rotate = (t.rotate + 1) % len(t.parts)
	return int32(p)
}
