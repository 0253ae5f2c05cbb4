package compaction

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// offsetMapModel is the oracle for OffsetMap: a plain Go map from key to
// the largest offset put, with the map's documented limits (its capacity
// from the size and load factor, offsets within MaxOffsetSpan of the first
// one put since the last Clear; a negative offset refused).
type offsetMapModel struct {
	m        map[string]int64
	capacity int
	base     int64
	latest   int64
}

func newOffsetMapModel(bytes int, loadFactor float64) *offsetMapModel {
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = DefaultLoadFactor
	}
	slots := max(bytes/(bucketSlots*slotBytes), 1) * bucketSlots
	// Up to loadFactor of the slots, at least one key, and one slot
	// always empty.
	capacity := min(max(int(float64(slots)*loadFactor), 1), slots-1)
	return &offsetMapModel{m: map[string]int64{}, capacity: capacity, base: -1, latest: -1}
}

func (o *offsetMapModel) put(key string, off int64) bool {
	if off < 0 {
		return false // no log offset is negative
	}
	if o.base < 0 {
		o.base = off
	}
	if d := off - o.base; d < 0 || d >= MaxOffsetSpan {
		return false
	}
	old, ok := o.m[key]
	if !ok && len(o.m) >= o.capacity {
		return false
	}
	if !ok || off > old {
		o.m[key] = off
	}
	o.latest = max(o.latest, off)
	return true
}

func (o *offsetMapModel) clear() {
	o.m = map[string]int64{}
	o.base, o.latest = -1, -1
}

// FuzzOffsetMap runs random sequences of Put, Get and Clear on an
// OffsetMap of a random size (one bucket up to a thousand) and load factor
// and on the model, and checks after every operation that they agree:
// what Put accepts or refuses (a full map refuses a new key and still
// updates a mapped one, an offset out of the span is refused), what Get
// returns for mapped and unmapped keys, Len, Full and LatestOffset.
func FuzzOffsetMap(f *testing.F) {
	f.Add([]byte{0, 0})
	f.Add([]byte{0, 50, 0, 1, 1, 0, 2, 1, 0, 3, 1, 0, 4, 1, 0, 5, 1, 2, 1, 0})                 // fill one bucket at 0.5
	f.Add([]byte{1, 99, 0, 1, 5, 0, 1, 250, 2, 1, 0, 4, 1, 0})                                 // an older offset does not win
	f.Add([]byte{0, 0, 0, 1, 1, 5, 2, 0, 0, 3, 0, 0, 0, 2, 0, 0})                              // beyond the span, clear
	f.Add([]byte{200, 90, 0, 9, 1, 0, 10, 1, 0, 11, 1, 0, 12, 1, 0, 9, 200, 2, 9, 0, 6, 0, 1}) // a bigger map
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		buckets := 1 + int(data[0])%32
		if data[0] >= 224 {
			buckets = 1 + int(data[0])*4
		}
		lf := float64(data[1]%101) / 100 // 0: the default
		bytes := buckets*bucketSlots*slotBytes + int(data[0]%3) - 1
		m := NewOffsetMap(bytes, lf)
		o := newOffsetMapModel(bytes, lf)
		off := int64(0)
		ops := data[2:]
		for step := 0; len(ops) >= 3 && step < 4096; step++ {
			op, k, arg := ops[0], ops[1], ops[2]
			ops = ops[3:]
			// Few keys, so puts hit mapped keys often; sometimes a key
			// of raw bytes, including the empty one.
			key := fmt.Sprintf("k%d", k%48)
			if k >= 240 {
				key = string(data[2 : 2+int(k-240)%len(data[2:])])
			}
			switch op % 8 {
			case 0, 1, 2, 3: // put at the next offset, or back, or far ahead
				switch {
				case arg < 200:
					off += int64(arg % 4)
				case arg < 250:
					off = max(off-int64(arg-199), 0)
				case arg == 250 && len(ops) >= 8:
					off += int64(binary.BigEndian.Uint64(ops) % (1 << 62))
					ops = ops[8:]
				default:
					off = max(o.base, 0) + MaxOffsetSpan - 2 + int64(arg-251)
				}
				got, want := m.Put([]byte(key), off), o.put(key, off)
				if got != want {
					t.Fatalf("step %d: Put(%q, %d) = %v, model %v (len %d, capacity %d, base %d)", step, key, off, got, want, len(o.m), o.capacity, o.base)
				}
			case 4, 5, 6: // get
				got, ok := m.Get([]byte(key))
				want, wok := o.m[key]
				if ok != wok || (ok && got != want) {
					t.Fatalf("step %d: Get(%q) = %d, %v; model %d, %v", step, key, got, ok, want, wok)
				}
			case 7:
				if arg%4 == 0 {
					m.Clear()
					o.clear()
				}
			}
			if m.Len() != len(o.m) || m.Full() != (len(o.m) >= o.capacity) || m.LatestOffset() != o.latest {
				t.Fatalf("step %d: Len %d Full %v Latest %d; model %d %v %d", step, m.Len(), m.Full(), m.LatestOffset(), len(o.m), len(o.m) >= o.capacity, o.latest)
			}
		}
		// Every mapped key is there with its offset, and the map's
		// fixed size was respected.
		for key, want := range o.m {
			if got, ok := m.Get([]byte(key)); !ok || got != want {
				t.Fatalf("at the end: Get(%q) = %d, %v; model %d", key, got, ok, want)
			}
		}
		if m.Bytes() != max(bytes/(bucketSlots*slotBytes), 1)*bucketSlots*slotBytes {
			t.Fatalf("a map of %d bytes has a %d-byte table", bytes, m.Bytes())
		}
	})
}

// TestOffsetMapRefusesNegativeOffsets: a negative offset is refused, also
// as the first put, and changes nothing mapped (it used to leave the base
// unset, so the next put moved it under every mapped offset).
func TestOffsetMapRefusesNegativeOffsets(t *testing.T) {
	m := NewOffsetMap(1<<16, 0)
	if m.Put([]byte("a"), -5) {
		t.Fatal("Put of a negative first offset accepted")
	}
	if !m.Put([]byte("a"), 100) || !m.Put([]byte("b"), 107) {
		t.Fatal("Put of valid offsets refused")
	}
	if m.Put([]byte("c"), -1) {
		t.Fatal("Put of a negative offset accepted")
	}
	for key, want := range map[string]int64{"a": 100, "b": 107} {
		if got, ok := m.Get([]byte(key)); !ok || got != want {
			t.Fatalf("Get(%q) = %d, %v; want %d", key, got, ok, want)
		}
	}
	if _, ok := m.Get([]byte("c")); ok || m.Len() != 2 {
		t.Fatalf("a refused put left a key: len %d", m.Len())
	}
}
