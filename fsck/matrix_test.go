package fsck_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// writeMatrixLog writes the log fscktest's cases damage, with the Log.
func writeMatrixLog(t testing.TB, fsys vfs.FS, dir string) []record.Record {
	t.Helper()
	clock := time.UnixMilli(1_700_000_000_000)
	l, err := seglog.Open(dir, seglog.Options{
		FS: fsys, LogConfig: seglog.LogConfig{
			SegmentBytes:       fscktest.SegmentBytes,
			IndexIntervalBytes: fscktest.IndexIntervalBytes,
			MaxIndexBytes:      fscktest.MaxIndexBytes,
		},
		Clock: testutil.NowFunc(func() time.Time { clock = clock.Add(time.Millisecond); return clock }),
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []record.Record
	for _, recs := range fscktest.Batches() {
		info, err := l.Append(recs...)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			r.Offset = info.FirstOffset + int64(i)
			all = append(all, r)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return all
}

// allRepaired reports whether every problem of r but its quarantine files
// was repaired: the valid batches a repair's cut would have deleted are
// kept in quarantine files, which stay listed until moved away.
func allRepaired(r *fsck.Report) bool {
	for _, p := range fscktest.Unquarantined(r.Problems) {
		if !p.Repaired {
			return false
		}
	}
	return true
}

func findProblem(r *fsck.Report, file string, pos int64, kind fsck.Kind) (fsck.Problem, bool) {
	for _, p := range r.Problems {
		if p.File == file && p.Position == pos && p.Kind == kind {
			return p, true
		}
	}
	return fsck.Problem{}, false
}

func listProblems(r *fsck.Report) string {
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// logRecords opens the directory with the Log and reads every record.
func logRecords(t testing.TB, fsys vfs.FS, dir string) []record.Record {
	t.Helper()
	l, err := seglog.Open(dir, seglog.Options{FS: fsys, LogConfig: seglog.LogConfig{SegmentBytes: fscktest.SegmentBytes, MaxIndexBytes: fscktest.MaxIndexBytes}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return testutil.ReadRecords(t, l, l.StartOffset())
}

// TestCorruptionMatrix damages a log in each of fscktest's ways, for damage
// in batches with the recovery point in each place, and checks that
//
//   - a check changes no byte of any file (the partition directory and its
//     parent) and reports the damage at its file and position;
//   - a repair of damage below the recovery point reports it and changes
//     no byte; with TruncateDamaged it cuts there and keeps every record
//     before the damage;
//   - a repair of damage past the recovery point cuts exactly there: the
//     earlier segments' files are unchanged, the damaged .log keeps its
//     bytes before the damage, the later segments are gone;
//   - a repair of anything else (indexes, leftovers, checkpoints) changes
//     no .log byte and keeps every record.
func TestCorruptionMatrix(t *testing.T) {
	const dir = "/data/p-0"
	template := vfs.NewMem()
	all := writeMatrixLog(t, template, dir)
	end := int64(len(all))
	for _, tc := range fscktest.Cases() {
		places := []fscktest.Placement{fscktest.Clean}
		if tc.Data {
			places = fscktest.Placements()
		}
		for _, pl := range places {
			t.Run(strings.ReplaceAll(tc.Name, " ", "_")+"/"+pl.String(), func(t *testing.T) {
				t.Parallel()
				fsys := vfs.NewMem()
				fscktest.CopyDir(t, template, fsys, dir)
				d := fscktest.NewDir(t, fsys, dir)
				dmg := tc.Inject(t, d)
				fscktest.Place(t, fsys, dir, pl, dmg, end)
				below := tc.Data && pl.Below(dmg, end)
				kind := tc.WantKind(below)
				opts := fsck.Options{Deep: tc.Deep}

				before := fscktest.TakeSnapshot(t, fsys, dir, "/data")
				r, err := fsck.Check(fsys, dir, opts)
				if err != nil {
					t.Fatal(err)
				}
				if diff := before.Diff(fscktest.TakeSnapshot(t, fsys, dir, "/data")); len(diff) > 0 {
					t.Fatalf("check changed files: %v", diff)
				}
				if _, ok := findProblem(r, dmg.File, dmg.Pos, kind); !ok {
					t.Fatalf("want %s at %s byte %d; got:%s", kind, dmg.File, dmg.Pos, listProblems(r))
				}
				if r.ExitCode() != fsck.ExitUncorrected {
					t.Fatalf("exit %d before repair, want 4", r.ExitCode())
				}
				if tc.Deep {
					shallow, err := fsck.Check(fsys, dir, fsck.Options{})
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := findProblem(shallow, dmg.File, dmg.Pos, kind); ok {
						t.Fatalf("a shallow check decoded records")
					}
				}

				repair := func(truncate bool) *fsck.Report {
					t.Helper()
					rr, err := fsck.Repair(fsys, dir, fsck.RepairOptions{Options: opts, TruncateDamaged: truncate, IndexIntervalBytes: fscktest.IndexIntervalBytes})
					if err != nil {
						t.Fatal(err)
					}
					return rr
				}
				switch {
				case below:
					rr := repair(false)
					if diff := before.Diff(fscktest.TakeSnapshot(t, fsys, dir, "/data")); len(diff) > 0 {
						t.Fatalf("repair changed files around damage below the recovery point: %v\nreport:%s", diff, listProblems(rr))
					}
					if p, ok := findProblem(rr, dmg.File, dmg.Pos, kind); !ok || p.Repaired || rr.ExitCode() != fsck.ExitUncorrected {
						t.Fatalf("damage below the recovery point: exit %d:%s", rr.ExitCode(), listProblems(rr))
					}
					if p, _ := findProblem(r, dmg.File, dmg.Pos, kind); !strings.Contains(p.Detail, "below the recovery point") {
						t.Errorf("detail does not say the damage is below the recovery point: %s", p.Detail)
					}
					// The explicit escape hatch cuts there.
					rr = repair(true)
					if p, ok := findProblem(rr, dmg.File, dmg.Pos, kind); !ok || !p.Repaired {
						t.Fatalf("TruncateDamaged did not cut the damage:%s", listProblems(rr))
					}
					checkCut(t, fsys, dir, before, d, dmg)
					if err := testutil.CompareRecords(logRecords(t, fsys, dir), all[:dmg.Keep]); err != nil {
						t.Fatal(err)
					}
				case tc.Data:
					rr := repair(false)
					if !allRepaired(rr) {
						t.Fatalf("exit %d after repair, want 1 (or 4 for quarantine files alone):%s", rr.ExitCode(), listProblems(rr))
					}
					fscktest.CheckQuarantined(t, fsys, dir, before, nil)
					checkCut(t, fsys, dir, before, d, dmg)
					if err := testutil.CompareRecords(logRecords(t, fsys, dir), all[:dmg.Keep]); err != nil {
						t.Fatal(err)
					}
				case tc.Unfixable:
					rr := repair(false)
					after, err := fsck.Check(fsys, dir, opts)
					if err != nil {
						t.Fatal(err)
					}
					if _, ok := findProblem(after, dmg.File, dmg.Pos, kind); rr.ExitCode() != fsck.ExitUncorrected || !ok {
						t.Fatalf("unfixable problem reported fixed: exit %d:%s", rr.ExitCode(), listProblems(rr))
					}
				default:
					rr := repair(false)
					if rr.ExitCode() != fsck.ExitRepaired {
						t.Fatalf("exit %d after repair, want 1:%s", rr.ExitCode(), listProblems(rr))
					}
					after := fscktest.TakeSnapshot(t, fsys, dir, "/data")
					for _, l := range d.Logs {
						p := filepath.Join(dir, l)
						if !bytes.Equal(after[p], d.Orig[l]) {
							t.Errorf("%s changed by a repair that must not touch batches", l)
						}
					}
					if err := testutil.CompareRecords(logRecords(t, fsys, dir), all); err != nil {
						t.Fatal(err)
					}
				}
				if tc.Unfixable {
					return
				}
				after, err := fsck.Check(fsys, dir, opts)
				if err != nil {
					t.Fatal(err)
				}
				if len(fscktest.Unquarantined(after.Problems)) > 0 {
					t.Fatalf("check after repair not clean:%s", listProblems(after))
				}
			})
		}
	}
}

// checkCut checks that a repair cut the log exactly at dmg: the segments
// before the damaged one unchanged (indexes included), the damaged .log
// holding exactly its bytes before the damage, the later segments gone.
func checkCut(t *testing.T, fsys vfs.FS, dir string, before fscktest.Snapshot, d *fscktest.Dir, dmg fscktest.Damage) {
	t.Helper()
	after := fscktest.TakeSnapshot(t, fsys, dir)
	stem := func(l string) string { return strings.TrimSuffix(l, ".log") }
	seen := false
	for _, l := range d.Logs {
		p := filepath.Join(dir, l)
		switch {
		case l == dmg.File:
			seen = true
			if got, want := after[p], before[p][:dmg.Pos]; !bytes.Equal(got, want) {
				t.Fatalf("%s: %d bytes after the cut, want its first %d bytes", l, len(got), dmg.Pos)
			}
		case !seen:
			for _, suf := range []string{".log", ".index", ".timeindex"} {
				q := filepath.Join(dir, stem(l)+suf)
				if !bytes.Equal(after[q], before[q]) {
					t.Fatalf("%s before the damage changed", q)
				}
			}
		default:
			for _, suf := range []string{".log", ".index", ".timeindex"} {
				if _, ok := after[filepath.Join(dir, stem(l)+suf)]; ok {
					t.Fatalf("%s%s after the cut segment still there", stem(l), suf)
				}
			}
		}
	}
}
