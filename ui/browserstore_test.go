package ui

import (
	"fmt"
	"testing"
	"time"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

func rec(key, value string) record.Record {
	return record.Record{Key: []byte(key), Value: []byte(value), Headers: []record.Header{
		{Key: "trace", Value: []byte("7f3a")}, {Key: "bin", Value: []byte{0, 1, 0xfe}}}}
}

// browserStore builds, on disk, the store the browser test looks at: two
// topics, one trimmed by size, and two groups, one far behind. It returns
// the writer and the store the UI reads, opened read-only beside it.
func browserStore(t *testing.T) (st, view *store.Store, fs vfs.FS) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(dir, store.Options{OffsetsPartitions: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	orders := smallTopic(7*24*time.Hour, -1)
	orders.SegmentBytes = 1500
	if err := st.CreateTopic("orders", 3, orders); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTopic("audit", 1, smallTopic(-1, 2000)); err != nil {
		t.Fatal(err)
	}
	for i := range 90 {
		if _, err := st.Produce("orders", rec(fmt.Sprintf("order-%d", i%25), fmt.Sprintf(`{"order":%d,"total":%d.50}`, i, 10+i%7))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		if _, err := st.Produce("audit", rec(fmt.Sprintf("user-%d", i%4), fmt.Sprintf("login #%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	commits := map[int32]int64{}
	for p := range int32(3) {
		l, _ := st.Log("orders", p)
		commits[p] = l.EndOffset()
	}
	if err := st.Commit("mailer", "orders", commits); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit("reports", "orders", map[int32]int64{0: 2, 1: 10, 2: 5}); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit("reports", "audit", map[int32]int64{0: 25}); err != nil {
		t.Fatal(err)
	}
	view, err = store.Open(dir, store.Options{ReadOnly: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := view.Close(); err != nil {
			t.Error(err)
		}
	})
	return st, view, vfs.Default
}

// refreshView makes the UI's store see the writer's appends.
func refreshView(t *testing.T, view *store.Store) {
	t.Helper()
	// The page's next poll calls Refresh too; calling it here as well
	// checks it succeeds beside the writer.
	if err := view.Refresh(); err != nil {
		t.Fatal(err)
	}
}
