package fsck

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// legacyV1 encodes a Kafka v1 message entry at offset off with a null key.
func legacyV1(off int64, value string) []byte {
	body := []byte{1, 0}                                   // magic 1, attributes
	body = binary.BigEndian.AppendUint64(body, 1000)       // timestamp
	body = binary.BigEndian.AppendUint32(body, 0xffffffff) // null key
	body = binary.BigEndian.AppendUint32(body, uint32(len(value)))
	body = append(body, value...)
	e := binary.BigEndian.AppendUint64(nil, uint64(off))
	e = binary.BigEndian.AppendUint32(e, uint32(4+len(body)))
	e = binary.BigEndian.AppendUint32(e, crc32.ChecksumIEEE(body))
	return append(e, body...)
}

// TestLegacyEntries checks that v0/v1 entries in old Kafka segments are
// recognized, CRC-32 checked and skipped by size, with offsets continuing
// into the v2 batches after them.
func TestLegacyEntries(t *testing.T) {
	bld := record.NewBuilder(record.None)
	if err := bld.AddRecord(0, 0, nil, []byte("v2"), nil); err != nil {
		t.Fatal(err)
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	b.SetBaseOffset(2)
	data := append(append(legacyV1(0, "old"), legacyV1(1, "older")...), b...)

	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/k/t-0"); err != nil {
		t.Fatal(err)
	}
	name := layout.FileName(0, ".log")
	vfstest.WriteFile(t, fsys, "/k/t-0/"+name, data)
	if _, err := Repair(fsys, "/k/t-0", RepairOptions{}); err != nil { // build the indexes
		t.Fatal(err)
	}
	r := mustCheck(t, fsys, "/k/t-0", Options{Deep: true})
	if !r.Clean() || r.Stats.LegacyEntries != 2 || r.Stats.Batches != 3 || r.Stats.LastOffset != 2 {
		t.Fatalf("stats %+v, problems:%s", r.Stats, dumpProblems(r))
	}
	second := int64(len(legacyV1(0, "old")))
	data[second+30] ^= 1 // inside the second entry's value
	vfstest.WriteFile(t, fsys, "/k/t-0/"+name, data)
	r = mustCheck(t, fsys, "/k/t-0", Options{})
	if !hasProblem(r, name, second, KindCRC) {
		t.Fatalf("legacy CRC damage not found at %d:%s", second, dumpProblems(r))
	}
}
