package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// Issue 26, item 4 of the store's loose ends: `seglog produce
// STORE/T-<N>` and `seglog clean STORE/T-<N>` for a partition the topic
// does not have are refused before the store is opened, and change
// nothing, mtimes included: before, the store's open rewrote the lock
// file (and, on a store not closed by this version, the marker and every
// offsets partition's indexes) and removed a stray directory of that name
// as the leftover of an add-partitions never acknowledged, and only then
// was the partition found unknown.
func TestUnknownPartitionOfStoreChangesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "3")
	mustInvoke(t, numberedLines(1, 10), "produce", dir, "--topic", "bookings")
	// A stray partition directory, as a copy or an unacknowledged
	// add-partitions leaves.
	stray := filepath.Join(dir, "bookings-9")
	vfstest.WriteFile(t, vfs.Default, filepath.Join(stray, layout.FileName(0, layout.LogSuffix)), nil)
	for _, args := range [][]string{
		{"produce", filepath.Join(dir, "bookings-7")},
		{"produce", stray},
		{"clean", stray, "--retention-ms", "0"},
	} {
		before := dirSnapshot(t, dir)
		r := invoke(t, "x\n", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "unknown partition") || !strings.Contains(r.stderr, "has 3 partitions") {
			t.Errorf("seglog %s: exit %d, stderr %q; want the partition refused", strings.Join(args, " "), r.code, r.stderr)
		}
		vfstest.Unchanged(t, "seglog "+strings.Join(args, " "), before, dirSnapshot(t, dir))
	}
	// The partitions the topic has still go through the store.
	mustInvoke(t, "y\n", "produce", filepath.Join(dir, "bookings-2"))
}
