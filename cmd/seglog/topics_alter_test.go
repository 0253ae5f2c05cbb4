package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// topics alter is add-partitions under kafka-topics.sh's name: it grows a
// topic, and refuses to shrink it.
func TestTopicsAlterPartitions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", "create", dir, "t", "--partitions", "2")
	if r := mustInvoke(t, "", "topics", "alter", dir, "t", "--partitions", "3"); r.stdout != "Topic t now has 3 partitions.\n" {
		t.Errorf("alter: %q", r.stdout)
	}
	if r := mustInvoke(t, "", "topics", "describe", dir, "t"); !strings.Contains(r.stdout, "PartitionCount: 3") {
		t.Errorf("describe after alter:\n%s", r.stdout)
	}
	if r := invoke(t, "", "topics", "alter", dir, "t", "--partitions", "2"); r.code == 0 || !strings.Contains(r.stderr, "can only grow") {
		t.Errorf("shrink: exit %d, %q", r.code, r.stderr)
	}
}
