package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// A commit past a partition's end (stored as Kafka stores it) is described
// plainly: a negative lag with a note, not counted in the total.
func TestGroupsDescribeCommitPastEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", "create", dir, "orders", "--partitions", "2")
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ProduceTo("orders", 1, record.Record{Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit("setter", "orders", map[int32]int64{0: 3, 1: 0}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustInvoke(t, "", "groups", "describe", dir, "setter")
	if !regexp.MustCompile(`(?m)^setter\s+orders\s+0\s+3\s+0\s+0\s+-3 \(committed past the log end\)$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^setter\s+orders\s+1\s+0\s+0\s+1\s+1$`).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "TOTAL LAG: 1\n") {
		t.Errorf("groups describe:\n%s", r.stdout)
	}
}
