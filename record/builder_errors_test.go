package record

import (
	"errors"
	"testing"
)

// TestBuilderOffsetErrors: every offset a batch cannot hold matches
// ErrOffsetOrder, from Add, AddAt and AddRecord alike, and adds nothing.
func TestBuilderOffsetErrors(t *testing.T) {
	b := NewBuilder(None)
	b.SetBaseOffset(100)
	if err := b.Add(Record{Offset: 105}); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"below the base":     b.Add(Record{Offset: 99}),
		"repeated":           b.Add(Record{Offset: 105}),
		"backwards":          b.AddAt(104, 0, &Record{}),
		"past 2^31-1":        b.AddAt(100+1<<31, 0, &Record{}),
		"AddRecord repeated": b.AddRecord(5, 0, nil, nil, nil),
	} {
		if !errors.Is(err, ErrOffsetOrder) {
			t.Errorf("%s: %v, want ErrOffsetOrder", name, err)
		}
	}
	if b.NumRecords() != 1 {
		t.Fatalf("%d records after the refusals, want 1", b.NumRecords())
	}
}
