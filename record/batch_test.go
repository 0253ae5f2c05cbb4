package record

import "testing"

// TestEqualUnstamped: batches that differ only in the fields a broker
// stamps outside the CRC compare equal; any other byte, or a length, makes
// them differ.
func TestEqualUnstamped(t *testing.T) {
	bld := NewBuilder(None)
	if err := bld.Add(Record{Timestamp: 1, Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	a, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	a = Batch(append([]byte(nil), a...))
	b := Batch(append([]byte(nil), a...))
	b.SetBaseOffset(12345)
	b.SetPartitionLeaderEpoch(7)
	if !EqualUnstamped(a, b) {
		t.Fatal("batches differing only in base offset and epoch compare unequal")
	}
	for _, i := range []int{offBatchLength + 3, offMagic, offCRC, len(a) - 1} {
		c := Batch(append([]byte(nil), b...))
		c[i] ^= 1
		if EqualUnstamped(a, c) {
			t.Fatalf("a change at byte %d is not seen", i)
		}
	}
	if EqualUnstamped(a, a[:len(a)-1]) || EqualUnstamped(a[:HeaderSize-1], a[:HeaderSize-1]) {
		t.Fatal("a shorter batch, or one shorter than a header, compares equal")
	}
}
