package store

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// Many partitions share the store's goroutines: opening a store of
// thousands of partitions starts a fixed number, not one per partition.
// (Descriptors are not bounded yet: docs/store.md, "Not done".)
func TestManyPartitionsBoundedGoroutines(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	cfg := smallConfig()
	for i := range 20 {
		mustf(t, s.CreateTopic(fmt.Sprintf("t%d", i), 100, cfg), "create")
	}
	mustf(t, s.Close(), "close")
	before := runtime.NumGoroutine()
	s = openStore(t, fs, clock)
	defer s.Close()
	if g := runtime.NumGoroutine() - before; g > 10 {
		t.Errorf("a store of 2,005 partitions runs %d goroutines", g)
	}
	for i := range 20 {
		_, err := s.Produce(fmt.Sprintf("t%d", i), kv("k", "v"))
		mustf(t, err, "produce")
	}
}
