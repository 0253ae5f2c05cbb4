package compaction

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
)

func TestOffsetMapLatestWins(t *testing.T) {
	m := NewOffsetMap(1<<16, 0)
	for i := range 1000 {
		if !m.Put(fmt.Appendf(nil, "k%d", i%100), int64(i)) {
			t.Fatalf("put %d refused", i)
		}
	}
	if m.Len() != 100 {
		t.Fatalf("Len = %d, want 100", m.Len())
	}
	for k := range 100 {
		got, ok := m.Get(fmt.Appendf(nil, "k%d", k))
		if want := int64(900 + k); !ok || got != want {
			t.Fatalf("Get(k%d) = %d, %v; want %d", k, got, ok, want)
		}
	}
	if _, ok := m.Get([]byte("absent")); ok {
		t.Fatal("absent key found")
	}
	if m.LatestOffset() != 999 {
		t.Fatalf("LatestOffset = %d", m.LatestOffset())
	}
	m.Clear()
	if _, ok := m.Get([]byte("k1")); ok || m.Len() != 0 || m.LatestOffset() != -1 {
		t.Fatal("Clear left entries")
	}
}

func TestOffsetMapFullRefusesNewKeys(t *testing.T) {
	m := NewOffsetMap(2*bucketSlots*slotBytes, 0.5) // 8 slots, 4 usable
	n := 0
	for i := 0; ; i++ {
		if !m.Put(fmt.Appendf(nil, "k%d", i), int64(i)) {
			break
		}
		n++
	}
	if n != 4 || !m.Full() || m.Fill() != 1 {
		t.Fatalf("accepted %d keys, Full %v, Fill %v; want 4, true, 1", n, m.Full(), m.Fill())
	}
	// A known key is still updated when the map is full.
	if !m.Put([]byte("k0"), 100) {
		t.Fatal("update of a mapped key refused")
	}
	if got, _ := m.Get([]byte("k0")); got != 100 {
		t.Fatalf("k0 = %d", got)
	}
	// Missing keys are answered even in a map at its limit.
	if _, ok := m.Get([]byte("nope")); ok {
		t.Fatal("absent key found")
	}
}

func TestOffsetMapTinyTableTerminates(t *testing.T) {
	m := NewOffsetMap(1, 1)
	if !m.Put([]byte("a"), 1) || !m.Put([]byte("b"), 2) || !m.Put([]byte("c"), 3) || m.Put([]byte("d"), 4) {
		t.Fatal("a one-bucket map must take exactly three keys")
	}
	if _, ok := m.Get([]byte("d")); ok {
		t.Fatal("d found")
	}
}

// TestOffsetMapSpan: offsets are kept as their distance from the first
// one Put, up to MaxOffsetSpan; beyond it the map refuses, as when full.
func TestOffsetMapSpan(t *testing.T) {
	m := NewOffsetMap(1<<12, 0)
	const base = 1 << 50
	if !m.Put([]byte("a"), base) || !m.Put([]byte("b"), base+MaxOffsetSpan-1) {
		t.Fatal("offsets within the span refused")
	}
	if m.Put([]byte("c"), base+MaxOffsetSpan) || m.Put([]byte("a"), base+MaxOffsetSpan) {
		t.Fatal("an offset past the span accepted")
	}
	if got, ok := m.Get([]byte("b")); !ok || got != base+MaxOffsetSpan-1 {
		t.Fatalf("Get(b) = %d, %v", got, ok)
	}
	m.Clear()
	if !m.Put([]byte("a"), 5) || m.LatestOffset() != 5 {
		t.Fatal("a cleared map keeps the old base")
	}
	if got, _ := m.Get([]byte("a")); got != 5 {
		t.Fatalf("Get(a) = %d after Clear", got)
	}
	if _, ok := m.Get([]byte("b")); ok {
		t.Fatal("Clear kept b")
	}
}

// TestOffsetMapManyKeys fills a map to its limit and reads every key back
// (no key is lost to the bucket probing at high load).
func TestOffsetMapManyKeys(t *testing.T) {
	m := NewOffsetMap(1<<16, 0.9)
	var keys [][]byte
	for i := 0; ; i++ {
		k := strconv.AppendInt([]byte("key-"), int64(i), 10)
		if !m.Put(k, int64(i)) {
			break
		}
		keys = append(keys, k)
	}
	if want := (1 << 16 / slotBytes) * 9 / 10; len(keys) != want {
		t.Fatalf("took %d keys", len(keys))
	}
	hs := make([]keyHash, len(keys))
	for i, k := range keys {
		hs[i] = m.hash(k)
	}
	m.prefetch(hs)
	for i := range keys {
		if got, ok := m.get(hs[i]); !ok || got != int64(i) {
			t.Fatalf("key %d: %d, %v", i, got, ok)
		}
	}
}

// TestOffsetMapMemoryBounded measures that filling a map with many more
// keys than it holds allocates nothing beyond the table.
func TestOffsetMapMemoryBounded(t *testing.T) {
	const size = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := NewOffsetMap(size, 0)
	key := make([]byte, 0, 32)
	for i := range 200_000 {
		key = strconv.AppendInt(append(key[:0], "key-"...), int64(i), 10)
		m.Put(key, int64(i))
	}
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	if grew > size+64<<10 {
		t.Fatalf("allocated %d bytes for a %d-byte map", grew, size)
	}
	if !m.Full() {
		t.Fatal("200,000 keys should fill a 1 MiB map")
	}
	runtime.KeepAlive(m)
}

// TestOffsetMapKeepsLargest: a put of an older offset (transactional data
// mapped after the markers are known) does not lower a key's latest.
func TestOffsetMapKeepsLargest(t *testing.T) {
	m := NewOffsetMap(1<<12, 0)
	if !m.Put([]byte("k"), 10) || !m.Put([]byte("k"), 20) || !m.Put([]byte("k"), 15) {
		t.Fatal("put refused")
	}
	if got, _ := m.Get([]byte("k")); got != 20 {
		t.Fatalf("Get = %d, want 20", got)
	}
}
