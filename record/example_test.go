package record_test

import (
	"fmt"

	"github.com/seglog/seglog/record"
)

// Build a compressed batch, then read it back with a reusable Iterator.
func Example() {
	bld := record.NewBuilder(record.Zstd)
	bld.Add(record.Record{Offset: 0, Timestamp: 1000, Key: []byte("k"), Value: []byte("hello")})
	bld.Add(record.Record{Offset: 1, Timestamp: 1005, Key: nil, Value: nil}) // null key, tombstone
	batch, err := bld.Build()
	if err != nil {
		panic(err)
	}

	// A broker stores it at offset 42 under leader epoch 3.
	batch.AssignOffsets(42, 3)
	if err := batch.Validate(); err != nil {
		panic(err)
	}

	var it record.Iterator
	if err := it.Reset(batch); err != nil {
		panic(err)
	}
	for it.Next() {
		r := it.Record()
		fmt.Printf("offset %d ts %d key %q null value %v\n", r.Offset, r.Timestamp, r.Key, r.Value == nil)
	}
	if err := it.Err(); err != nil {
		panic(err)
	}
	fmt.Println("next offset", batch.NextOffset(), "codec", batch.Codec())
	// Output:
	// offset 42 ts 1000 key "k" null value false
	// offset 43 ts 1005 key "" null value true
	// next offset 44 codec zstd
}
