package compaction

import (
	"hash/maphash"
	"math/bits"
)

// DefaultMapBytes is the offset map's default size, Kafka's
// log.cleaner.dedupe.buffer.size (128 MiB).
const DefaultMapBytes = 128 << 20

// DefaultLoadFactor is how full the map may get before a round stops
// mapping, Kafka's log.cleaner.io.buffer.load.factor.
const DefaultLoadFactor = 0.9

// The table is made of 64-byte buckets, one cache line each, of four
// 16-byte slots. A slot is two words: the key's first 64-bit hash (never
// 0, which marks an empty slot), then 24 bits of a second hash above the
// offset's distance from the map's base offset (40 bits). So a key's hash
// is 87 bits, against Kafka's 128 (MD5 in a 24-byte slot): two keys of a
// round of 10 million collide with a probability of about 3e-13. A lookup
// reads one cache line, rarely the next, where Kafka's probe sequence
// jumps to a new random line on every collision; the slots are also a
// third smaller, so a map of a given size holds 1.5 times the keys.
const (
	slotBytes   = 16
	bucketSlots = 4
	bucketWords = 2 * bucketSlots
	offsetBits  = 40
	offsetMask  = 1<<offsetBits - 1
)

// MaxOffsetSpan (2^40) is how far past the first offset Put into a map
// (since Clear) a later offset may lie: a map refuses (as if full) an
// offset at or beyond the first plus MaxOffsetSpan, or below the first, and
// the round continues from there the next time.
const MaxOffsetSpan = 1 << offsetBits

// seeds are fixed for the process: a map lives for one round, so its hash
// need not be stable across runs, only within one.
var seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// OffsetMap maps the hash of a key to the latest offset seen for it. It is
// one flat table allocated once (open addressing by cache-line buckets,
// no deletes), so its memory is fixed whatever the log's size; keys are
// not stored, so two keys whose hashes collide count as one (Kafka
// accepts the same risk with MD5). It is not safe for concurrent use.
type OffsetMap struct {
	table      []uint64
	buckets    uint64
	slots      int
	maxEntries int
	entries    int
	latest     int64
	base       int64 // offsets are stored as their distance from it
	fresh      bool  // the table is all zero: Clear has nothing to do
	sink       uint64
}

// NewOffsetMap allocates a map of at most bytes bytes (at least one
// bucket of four slots) that accepts keys until it is loadFactor full (0
// means DefaultLoadFactor).
func NewOffsetMap(bytes int, loadFactor float64) *OffsetMap {
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = DefaultLoadFactor
	}
	buckets := max(bytes/(bucketSlots*slotBytes), 1)
	slots := buckets * bucketSlots
	table := make([]uint64, buckets*bucketWords)
	// Take the memory now, as Kafka's cleaner does when it allocates its
	// buffer: a fresh table's pages are not there until written, and a
	// round would otherwise fault them in one at a time, in random order.
	for i := 0; i < len(table); i += 4096 / 8 {
		table[i] = 0
	}
	return &OffsetMap{
		table:   table,
		buckets: uint64(buckets),
		slots:   slots,
		// One slot always stays empty, so a probe for a missing key ends.
		maxEntries: min(max(int(float64(slots)*loadFactor), 1), slots-1),
		latest:     -1,
		base:       -1,
		fresh:      true,
	}
}

// Bytes is the size of the table.
func (m *OffsetMap) Bytes() int { return 8 * len(m.table) }

// Len is the number of distinct key hashes stored.
func (m *OffsetMap) Len() int { return m.entries }

// Full reports whether the map accepts no new key.
func (m *OffsetMap) Full() bool { return m.entries >= m.maxEntries }

// Fill is the fraction of the usable entries taken, for metrics.
func (m *OffsetMap) Fill() float64 { return float64(m.entries) / float64(m.maxEntries) }

// LatestOffset is the largest offset Put so far, -1 if none.
func (m *OffsetMap) LatestOffset() int64 { return m.latest }

// Clear empties the map for the next round, keeping the table.
func (m *OffsetMap) Clear() {
	if !m.fresh {
		clear(m.table)
	}
	m.fresh = true
	m.entries, m.latest, m.base = 0, -1, -1
}

// keyHash is a key's place in the map, computed once for a lookup and its
// prefetch.
type keyHash struct {
	tag    uint64 // the first hash, never 0
	tag2   uint64 // the second hash's top 24 bits, in place above the offset
	bucket uint64
}

func (m *OffsetMap) hash(key []byte) keyHash {
	h1 := maphash.Bytes(seeds[0], key)
	h2 := maphash.Bytes(seeds[1], key)
	b, _ := bits.Mul64(h1, m.buckets)
	return keyHash{tag: h1 | 1, tag2: h2 &^ offsetMask, bucket: b}
}

// prefetch reads the first bucket of each hash. The loads do not depend on
// one another, so the processor overlaps their cache misses, and the
// lookups that follow find the lines in cache: with keys spread over a
// table of 128 MiB, nearly every lookup would otherwise wait for memory
// on its own.
func (m *OffsetMap) prefetch(hs []keyHash) {
	s := m.sink
	for i := range hs {
		s += m.table[hs[i].bucket*bucketWords]
	}
	m.sink = s
}

// find returns the index in table of h's slot, or of the empty slot where
// it would go (found false).
func (m *OffsetMap) find(h keyHash) (int, bool) {
	b := h.bucket
	for {
		i := int(b * bucketWords)
		bucket := m.table[i : i+bucketWords : i+bucketWords]
		for s := 0; s < bucketWords; s += 2 {
			switch w := bucket[s]; {
			case w == 0:
				return i + s, false
			case w == h.tag && bucket[s+1]&^offsetMask == h.tag2:
				return i + s, true
			}
		}
		if b++; b == m.buckets {
			b = 0
		}
	}
}

// Put records offset as the latest for key, unless a larger offset is
// recorded for it (so puts after the first may come in any order within
// the span). It returns false, storing nothing, when key is new and the map
// is full, or offset is negative or out of the span the map can hold: below
// the first offset Put since Clear, or MaxOffsetSpan or more past it. The
// round must stop mapping there.
func (m *OffsetMap) Put(key []byte, offset int64) bool { return m.put(m.hash(key), offset) }

func (m *OffsetMap) put(h keyHash, offset int64) bool {
	if offset < 0 {
		// No log offset is negative; taken as the first one, it would
		// leave the base unset (negative) and the next put would move it,
		// changing every offset already mapped (FuzzOffsetMap's finding).
		return false
	}
	if m.base < 0 {
		m.base = offset
	}
	d := offset - m.base
	if d < 0 || d >= MaxOffsetSpan {
		return false
	}
	i, ok := m.find(h)
	if !ok {
		if m.entries >= m.maxEntries {
			return false
		}
		m.table[i] = h.tag
		m.entries++
		m.fresh = false
	}
	if !ok || uint64(d) > m.table[i+1]&offsetMask {
		m.table[i+1] = h.tag2 | uint64(d)
	}
	m.latest = max(m.latest, offset)
	return true
}

// Get returns the latest offset recorded for key.
func (m *OffsetMap) Get(key []byte) (int64, bool) { return m.get(m.hash(key)) }

func (m *OffsetMap) get(h keyHash) (int64, bool) {
	i, ok := m.find(h)
	if !ok {
		return 0, false
	}
	return m.base + int64(m.table[i+1]&offsetMask), true
}
