package compaction

import (
	"encoding/binary"
	"hash/maphash"
)

// DefaultMapBytes is the offset map's default size, Kafka's
// log.cleaner.dedupe.buffer.size (128 MiB).
const DefaultMapBytes = 128 << 20

// DefaultLoadFactor is how full the map may get before a round stops
// mapping, Kafka's log.cleaner.io.buffer.load.factor.
const DefaultLoadFactor = 0.9

// slotBytes is one entry: a 16-byte key hash and an 8-byte offset, as in
// Kafka's SkimpyOffsetMap.
const (
	hashBytes = 16
	slotBytes = hashBytes + 8
)

// seeds are fixed for the process: a map lives for one round, so its hash
// need not be stable across runs, only within one.
var seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// OffsetMap maps the hash of a key to the latest offset seen for it. It is
// one flat byte table allocated once (open addressing, no deletes), so its
// memory is fixed whatever the log's size; keys are not stored, so two
// keys whose 128-bit hashes collide count as one (Kafka accepts the same
// risk with MD5). It is not safe for concurrent use.
type OffsetMap struct {
	table      []byte
	slots      int
	maxEntries int
	entries    int
	latest     int64
}

// NewOffsetMap allocates a map of at most bytes bytes (at least one slot)
// that accepts keys until it is loadFactor full (0 means
// DefaultLoadFactor).
func NewOffsetMap(bytes int, loadFactor float64) *OffsetMap {
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = DefaultLoadFactor
	}
	// One slot always stays empty, so a probe for a missing key ends.
	slots := max(bytes/slotBytes, 2)
	return &OffsetMap{
		table:      make([]byte, slots*slotBytes),
		slots:      slots,
		maxEntries: min(max(int(float64(slots)*loadFactor), 1), slots-1),
		latest:     -1,
	}
}

// Bytes is the size of the table.
func (m *OffsetMap) Bytes() int { return len(m.table) }

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
	clear(m.table)
	m.entries, m.latest = 0, -1
}

func hashKey(key []byte, h *[hashBytes]byte) {
	binary.BigEndian.PutUint64(h[0:], maphash.Bytes(seeds[0], key))
	binary.BigEndian.PutUint64(h[8:], maphash.Bytes(seeds[1], key))
	// An all-zero hash would read as an empty slot.
	h[0] |= 1
}

// slot returns the table position of probe attempt i for h, Kafka's
// sequence: 13 positions taken from the hash, then linear probing.
func (m *OffsetMap) slot(h *[hashBytes]byte, i int) int {
	p := int64(int32(binary.BigEndian.Uint32(h[min(i, 12):])))
	p += int64(max(0, i-12))
	if p < 0 {
		p = -p
	}
	return int(p%int64(m.slots)) * slotBytes
}

// Put records offset as the latest for key. It returns false, storing
// nothing, when key is new and the map is full: the round must stop
// mapping there.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	var h [hashBytes]byte
	hashKey(key, &h)
	for i := 0; ; i++ {
		pos := m.slot(&h, i)
		s := m.table[pos : pos+slotBytes]
		if s[0] == 0 { // stored hashes never start with 0
			if m.entries >= m.maxEntries {
				return false
			}
			copy(s, h[:])
			binary.BigEndian.PutUint64(s[hashBytes:], uint64(offset))
			m.entries++
			m.latest = max(m.latest, offset)
			return true
		}
		if [hashBytes]byte(s[:hashBytes]) == h {
			binary.BigEndian.PutUint64(s[hashBytes:], uint64(offset))
			m.latest = max(m.latest, offset)
			return true
		}
	}
}

// Get returns the latest offset recorded for key.
func (m *OffsetMap) Get(key []byte) (int64, bool) {
	var h [hashBytes]byte
	hashKey(key, &h)
	for i := 0; ; i++ {
		pos := m.slot(&h, i)
		s := m.table[pos : pos+slotBytes]
		if s[0] == 0 { // stored hashes never start with 0
			return 0, false
		}
		if [hashBytes]byte(s[:hashBytes]) == h {
			return int64(binary.BigEndian.Uint64(s[hashBytes:])), true
		}
	}
}
