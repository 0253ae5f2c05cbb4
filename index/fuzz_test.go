package index

import (
	"encoding/binary"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// FuzzOffsetFile opens arbitrary bytes as a sealed .index: nothing may
// panic, and when SanityCheck accepts the file every lookup must agree with
// a brute-force scan of the decoded entries.
func FuzzOffsetFile(f *testing.F) {
	f.Add([]byte{}, int64(0), int64(5))
	f.Add(offsetBytes([2]int32{1, 0}, [2]int32{5, 100}), int64(1000), int64(1003))
	f.Add(offsetBytes([2]int32{0, 0}, [2]int32{0, 0}), int64(7), int64(7))
	f.Add(append(offsetBytes([2]int32{3, 9}), 1, 2, 3), int64(0), int64(3))
	f.Fuzz(func(t *testing.T, raw []byte, base, target int64) {
		if len(raw) > 1<<16 || base < 0 {
			return
		}
		m := vfs.NewMem()
		writeFile(t, m, "/f.index", raw)
		x, err := OpenOffset(m, "/f.index", base, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if x.Entries() != len(raw)/8 {
			t.Fatalf("%d entries from %d bytes", x.Entries(), len(raw))
		}
		got := x.Lookup(target)
		for i := 0; i < x.Entries(); i++ {
			x.Entry(i)
		}
		x.LastOffset()
		if x.SanityCheck() != nil {
			return
		}
		var model []OffsetPosition
		for p := 0; p+8 <= len(raw); p += 8 {
			model = append(model, OffsetPosition{
				Offset:   base + int64(int32(binary.BigEndian.Uint32(raw[p:]))),
				Position: int64(binary.BigEndian.Uint32(raw[p+4:])),
			})
		}
		if want := modelOffsetLookup(model, base, target); got != want {
			t.Fatalf("Lookup(%d) = %+v, want %+v", target, got, want)
		}
	})
}

// FuzzTimeFile is FuzzOffsetFile for .timeindex files.
func FuzzTimeFile(f *testing.F) {
	f.Add([]byte{}, int64(0), int64(5))
	f.Add(timeBytes(rawTime{1000, 0}, rawTime{1005, 3}), int64(50), int64(1004))
	f.Add(timeBytes(rawTime{0, 0}, rawTime{0, 0}), int64(7), int64(0))
	f.Add(append(timeBytes(rawTime{-5, 2}), 9), int64(0), int64(-5))
	f.Fuzz(func(t *testing.T, raw []byte, base, ts int64) {
		if len(raw) > 1<<16 || base < 0 {
			return
		}
		m := vfs.NewMem()
		writeFile(t, m, "/f.timeindex", raw)
		x, err := OpenTime(m, "/f.timeindex", base, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		got := x.Lookup(ts)
		for i := 0; i < x.Entries(); i++ {
			x.Entry(i)
		}
		x.LastEntry()
		if x.SanityCheck() != nil {
			return
		}
		var model []TimestampOffset
		for p := 0; p+12 <= len(raw); p += 12 {
			model = append(model, TimestampOffset{
				Timestamp: int64(binary.BigEndian.Uint64(raw[p:])),
				Offset:    base + int64(int32(binary.BigEndian.Uint32(raw[p+8:]))),
			})
		}
		if want := modelTimeLookup(model, base, ts); got != want {
			t.Fatalf("Lookup(%d) = %+v, want %+v", ts, got, want)
		}
	})
}
