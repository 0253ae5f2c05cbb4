package seglog

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// legacyV0 frames a v0 message (as an old Kafka broker stored it) at off.
func legacyV0(off int64, value []byte) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(off))
	b = binary.BigEndian.AppendUint32(b, 0) // size, set below
	b = binary.BigEndian.AppendUint32(b, 0) // crc, set below
	b = append(b, 0, 0)                     // magic 0, attributes
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
	b = append(b, value...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

// v2Batch builds a v2 batch holding offsets first..last.
func v2Batch(t *testing.T, first, last int64) []byte {
	t.Helper()
	bld := record.NewBuilder(record.None)
	bld.SetBaseOffset(first)
	for off := first; off <= last; off++ {
		if err := bld.Add(record.Record{Offset: off, Timestamp: 1000 + off, Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRecordsOverLegacyEntries: a segment that mixes legacy (v0/v1)
// entries, which Records skips, with v2 batches is iterated to its end
// without reporting the healthy file corrupt (the iteration's byte
// position used to leave the skipped entries out and land inside a batch).
func TestRecordsOverLegacyEntries(t *testing.T) {
	mem := vfs.NewMem()
	var data []byte
	data = append(data, legacyV0(0, []byte("old"))...)
	data = append(data, v2Batch(t, 1, 3)...)
	data = append(data, legacyV0(4, []byte("old too"))...)
	data = append(data, v2Batch(t, 5, 6)...)
	if err := mem.MkdirAll("/legacy"); err != nil {
		t.Fatal(err)
	}
	vfstest.WriteFile(t, mem, "/legacy/00000000000000000000.log", data)
	l, err := Open("/legacy", Options{FS: mem, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for from, want := range map[int64][]int64{0: {1, 2, 3, 5, 6}, 2: {2, 3, 5, 6}, 5: {5, 6}} {
		var got []int64
		for r, err := range l.Records(from) {
			if err != nil {
				t.Fatalf("Records(%d) after %v: %v", from, got, err)
			}
			got = append(got, r.Offset)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Records(%d) = %v, want %v", from, got, want)
		}
	}
}
