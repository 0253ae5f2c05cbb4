package record

import (
	"bytes"
	"testing"
)

// TestCloneOutlivesIterator: records kept with Clone keep their own key,
// value and headers after the iterator moves on and after the batch's
// bytes are overwritten, with null apart from empty.
func TestCloneOutlivesIterator(t *testing.T) {
	want := []Record{
		{Key: nil, Value: []byte{}, Headers: []Header{{Key: "a", Value: []byte("1")}, {Key: "n", Value: nil}}},
		{Key: []byte{}, Value: nil, Headers: []Header{{Key: "b", Value: []byte("22")}}},
		{Key: []byte("k"), Value: []byte("v"), Headers: []Header{{Key: "c", Value: []byte{}}}},
	}
	bld := NewBuilder(None)
	for i := range want {
		want[i].Offset, want[i].Timestamp = int64(i), 1_700_000_000_000+int64(i)
		if err := bld.AddAt(want[i].Offset, want[i].Timestamp, &want[i]); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	b = Batch(bytes.Clone(b))
	var kept []Record
	for r, err := range b.Records() {
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, r.Clone())
	}
	for i := range b {
		b[i] = 0xff
	}
	if len(kept) != len(want) {
		t.Fatalf("%d records, want %d", len(kept), len(want))
	}
	for i, r := range kept {
		w := want[i]
		if r.Offset != w.Offset || r.Timestamp != w.Timestamp || !sameBytes(r.Key, w.Key) || !sameBytes(r.Value, w.Value) || len(r.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %+v, want %+v", i, r, w)
		}
		for j, h := range r.Headers {
			if h.Key != w.Headers[j].Key || !sameBytes(h.Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d: %+v, want %+v", i, j, h, w.Headers[j])
			}
		}
	}
}

// sameBytes is bytes.Equal that also tells null from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
