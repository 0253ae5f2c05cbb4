// Package fscktest lets tests of other packages check, when they end, that
// the log directory they wrote is consistent (CheckClean), and gives them
// fsck's corruption matrix to open the same damaged directories with
// other code (the Log, read-only or read-write):
//
//	// write the log with the Log: SegmentBytes, IndexIntervalBytes,
//	// MaxIndexBytes, a clock advancing 1 ms per call, Batches() appended
//	for _, tc := range fscktest.Cases() {
//		places := []fscktest.Placement{fscktest.Clean}
//		if tc.Data {
//			places = fscktest.Placements()
//		}
//		for _, pl := range places {
//			// copy the written directory to a fresh vfs.NewMem()
//			dmg := tc.Inject(t, fscktest.NewDir(t, fsys, dir))
//			fscktest.Place(t, fsys, dir, pl, dmg, end)
//			before := fscktest.TakeSnapshot(t, fsys, dir, parent)
//			// ... open, read, close ...
//			diff := before.Diff(fscktest.TakeSnapshot(t, fsys, dir, parent))
//		}
//	}
//
// pl.Below(dmg, end) says whether a Data case's damage lies in synced data
// (nothing may be cut: a *CorruptionError at dmg.File, near dmg.Pos) or
// past the recovery point (a cut at dmg.Pos, dmg.Keep records kept).
// fsck's own run of it is TestCorruptionMatrix in package fsck_test.
package fscktest

import (
	"errors"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// CheckClean runs a deep fsck of every partition directory at or below
// dir (fsck.PartitionDirs: dir itself when it is a log's directory) and
// fails the test, listing every problem, unless the check finds none; a
// dir holding no partition fails it too (fsck.ErrNoPartition), unless it
// is empty (an empty log). Call it
// after the Log writing dir was closed; beside an open Log the active
// segment may show as torn while an append is in flight.
func CheckClean(t testing.TB, fsys vfs.FS, dir string) {
	t.Helper()
	dirs, err := fsck.PartitionDirs(fsys, dir)
	if errors.Is(err, fsck.ErrNoPartition) {
		if c, cerr := layout.ReadContents(fsys, dir); cerr == nil && c.Kind() == layout.DirEmpty {
			return // an empty log: nothing to check
		}
	}
	if err != nil {
		t.Fatalf("fsck %s: %v", dir, err)
	}
	for _, d := range dirs {
		r, err := fsck.Check(fsys, d, fsck.Options{Deep: true})
		if err != nil {
			t.Fatalf("fsck %s: %v", d, err)
		}
		for _, p := range r.Problems {
			t.Errorf("fsck %s: %s", d, p)
		}
	}
}

// CheckCleanAtEnd registers CheckClean to run when the test ends (after
// cleanups registered later, such as closing the Log, have run).
func CheckCleanAtEnd(t testing.TB, fsys vfs.FS, dir string) {
	t.Helper()
	t.Cleanup(func() { CheckClean(t, fsys, dir) })
}
