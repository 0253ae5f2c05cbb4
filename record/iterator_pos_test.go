package record

import (
	"encoding/binary"
	"testing"
)

// TestIteratorPos checks that Pos gives each record's start in the batch:
// the record's own length varint, read at that position, ends exactly
// where the next record starts, and the last ends at the batch's end. A
// compressed batch, and a batch Reset refused, have no positions.
func TestIteratorPos(t *testing.T) {
	for _, c := range Codecs {
		t.Run(c.String(), func(t *testing.T) {
			bld := NewBuilder(c)
			for i := range 9 {
				r := Record{Offset: int64(i), Timestamp: int64(1000 + i), Key: []byte{byte(i)}, Value: make([]byte, 10*i)}
				if i%3 == 0 {
					r.Headers = []Header{{Key: "h", Value: []byte("v")}}
				}
				if err := bld.Add(r); err != nil {
					t.Fatal(err)
				}
			}
			b, err := bld.Build()
			if err != nil {
				t.Fatal(err)
			}
			var it Iterator
			if err := it.Reset(b); err != nil {
				t.Fatal(err)
			}
			if c != None {
				if p := it.Pos(); p != -1 {
					t.Fatalf("Pos of a %v batch = %d, want -1", c, p)
				}
				return
			}
			p := it.Pos()
			if p != HeaderSize {
				t.Fatalf("Pos after Reset = %d, want %d", p, HeaderSize)
			}
			n := 0
			for it.Next() {
				length, w := binary.Varint(b[p:])
				if w <= 0 {
					t.Fatalf("record %d: no length varint at Pos %d", n, p)
				}
				next := it.Pos()
				if want := p + w + int(length); next != want {
					t.Fatalf("record %d at %d: Pos after it %d, want %d", n, p, next, want)
				}
				p = next
				n++
			}
			if it.Err() != nil || n != 9 {
				t.Fatalf("%d records, err %v", n, it.Err())
			}
			if p != len(b) {
				t.Fatalf("Pos at the end = %d, want the batch's %d bytes", p, len(b))
			}
			if err := it.Reset(b[:HeaderSize-1]); err == nil {
				t.Fatal("Reset accepted a short batch")
			}
			if p := it.Pos(); p != -1 {
				t.Fatalf("Pos after a failed Reset = %d, want -1", p)
			}
		})
	}
}
