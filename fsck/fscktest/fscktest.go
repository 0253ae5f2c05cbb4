// Package fscktest lets tests of other packages check, when they end, that
// the log directory they wrote is consistent.
package fscktest

import (
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/vfs"
)

// CheckClean runs a deep fsck of dir (a partition directory) and fails the
// test, listing every problem, unless the check finds none. Call it after
// the Log writing dir was closed; beside an open Log the active segment
// may show as torn while an append is in flight.
func CheckClean(t testing.TB, fsys vfs.FS, dir string) {
	t.Helper()
	r, err := fsck.Check(fsys, dir, fsck.Options{Deep: true})
	if err != nil {
		t.Fatalf("fsck %s: %v", dir, err)
	}
	for _, p := range r.Problems {
		t.Errorf("fsck %s: %s", dir, p)
	}
}

// CheckCleanAtEnd registers CheckClean to run when the test ends (after
// cleanups registered later, such as closing the Log, have run).
func CheckCleanAtEnd(t testing.TB, fsys vfs.FS, dir string) {
	t.Helper()
	t.Cleanup(func() { CheckClean(t, fsys, dir) })
}
