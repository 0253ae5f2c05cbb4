package fsck

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestRepairLossBelowLogStartKeepsLaterSegments: a cut whose loss lies at
// or below the log start (the next segment begins at or below it) lost
// only records already deleted, so the Log's Open sets no later segment
// aside (a crash in the middle of RestartAt past the end leaves exactly
// this). Repair follows the same rule: it cuts the torn tail and keeps
// every later segment in the log, as Open does.
func TestRepairLossBelowLogStartKeepsLaterSegments(t *testing.T) {
	const dir = "/p"
	build := func() (vfs.FS, []string) {
		fsys := vfs.NewMem()
		writeLog(t, fsys, dir, record.None, 400, 2)
		logs := logFiles(t, fsys, dir)
		if len(logs) < 3 {
			t.Fatalf("%d segments, want 3 or more", len(logs))
		}
		second, err := strconv.ParseInt(strings.TrimSuffix(logs[1], layout.LogSuffix), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		crash(t, fsys, dir, 0)
		vfstest.WriteFile(t, fsys, filepath.Join(dir, layout.LogStartOffsetFile), []byte(fmt.Sprintf("0\n1\np 0 %d\n", second)))
		first := filepath.Join(dir, logs[0])
		torn := append(vfstest.ReadFile(t, fsys, first), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		vfstest.WriteFile(t, fsys, first, torn)
		return fsys, logs
	}
	quarantines := func(fsys vfs.FS) []string {
		names, err := fsys.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range names {
			if layout.IsQuarantine(n) {
				out = append(out, n)
			}
		}
		return out
	}

	// What Open makes of it.
	opened, logs := build()
	// Set field by field: the same code whether the sizes are Options'
	// own fields or an embedded config's.
	opts := seglog.Options{FS: opened}
	opts.SegmentBytes, opts.MaxIndexBytes = 16<<10, 16<<10
	l, err := seglog.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	n := l.NumSegments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n != len(logs) || len(quarantines(opened)) != 0 {
		t.Fatalf("Open: %d segments of %d, quarantines %v: the rule this test holds repair to changed", n, len(logs), quarantines(opened))
	}
	want := readRecords(t, opened, dir)

	// Repair agrees.
	repaired, _ := build()
	if _, err := Repair(repaired, dir, RepairOptions{}); err != nil {
		t.Fatal(err)
	}
	if q := quarantines(repaired); len(q) != 0 || len(logFiles(t, repaired, dir)) != len(logs) {
		t.Fatalf("repair set segments aside after a loss below the log start: segments %v, quarantines %v", logFiles(t, repaired, dir), q)
	}
	got := readRecords(t, repaired, dir)
	if len(got) != len(want) || len(got) == 0 || got[0].Offset != want[0].Offset || got[len(got)-1].Offset != want[len(want)-1].Offset {
		t.Fatalf("after repair the log holds %d records, after Open %d", len(got), len(want))
	}
}
