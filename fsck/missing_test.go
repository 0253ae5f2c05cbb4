package fsck

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// missingLog writes a log of several segments in /p and returns the .log
// names and each segment's base offset.
func missingLog(t *testing.T) (vfs.FS, []string, []int64) {
	t.Helper()
	fsys := vfs.NewMem()
	writeLog(t, fsys, "/p", record.None, 120, 10)
	logs := logFiles(t, fsys, "/p")
	if len(logs) < 4 {
		t.Fatalf("%d segments, want at least 4", len(logs))
	}
	bases := make([]int64, len(logs))
	for i, l := range logs {
		_, bases[i], _ = FileKind(l)
	}
	return fsys, logs, bases
}

// missingProblem returns the missing-data problem of r, failing unless
// there is exactly one and it names offsets from-to at file, byte pos.
func missingProblem(t *testing.T, r *Report, file string, pos, from, to int64) Problem {
	t.Helper()
	var found []Problem
	for _, p := range r.Problems {
		if p.Kind == KindMissingData {
			found = append(found, p)
		}
	}
	want := fmt.Sprintf("data missing: offsets %d–%d", from, to)
	if len(found) != 1 || found[0].File != file || found[0].Position != pos || found[0].Severity != Error ||
		!strings.HasPrefix(found[0].Detail, want) {
		t.Fatalf("want one missing-data error %q at %s byte %d; got:%s", want, file, pos, dumpProblems(r))
	}
	return found[0]
}

// TestMissingMiddleSegment (issue 26 item 4): a middle segment emptied (:
// > its .log) or deleted with its three files, in a log never compacted,
// is missing data: fsck reports "data missing: offsets X–Y" (exit 4), and
// a repair neither fixes nor hides it: the emptied segment's index, the
// evidence, is not rebuilt, and a check after the repair reports the same
// range. Before, the emptied segment showed only index errors that repair
// "fixed" (then fsck said clean), and the deleted one passed as clean.
func TestMissingMiddleSegment(t *testing.T) {
	for _, how := range []string{"emptied", "deleted"} {
		t.Run(how, func(t *testing.T) {
			fsys, logs, bases := missingLog(t)
			file, pos := logs[1], int64(0)
			switch how {
			case "emptied":
				vfstest.WriteFile(t, fsys, "/p/"+logs[1], nil)
			case "deleted":
				for _, suf := range []string{".log", ".index", ".timeindex"} {
					if err := fsys.Remove("/p/" + layout.FileName(bases[1], suf)); err != nil {
						t.Fatal(err)
					}
				}
				file, pos = logs[0], int64(len(vfstest.ReadFile(t, fsys, "/p/"+logs[0])))
			}
			var index []byte
			if how == "emptied" {
				index = vfstest.ReadFile(t, fsys, "/p/"+layout.FileName(bases[1], ".index"))
			}
			r := mustCheck(t, fsys, "/p", Options{})
			p := missingProblem(t, r, file, pos, bases[1], bases[2]-1)
			if !strings.Contains(p.Detail, "never compacted") || !strings.Contains(p.Detail, "had synced them") {
				t.Errorf("detail does not say why: %s", p.Detail)
			}
			if r.ExitCode() != ExitUncorrected {
				t.Fatalf("exit %d, want 4", r.ExitCode())
			}
			rr, err := Repair(fsys, "/p", RepairOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := missingProblem(t, rr, file, pos, bases[1], bases[2]-1); got.Repaired || rr.ExitCode() != ExitUncorrected {
				t.Fatalf("repair: exit %d, missing data marked repaired %v:%s", rr.ExitCode(), got.Repaired, dumpProblems(rr))
			}
			if how == "emptied" && !bytes.Equal(vfstest.ReadFile(t, fsys, "/p/"+layout.FileName(bases[1], ".index")), index) {
				t.Fatal("repair rebuilt the index that is the evidence of the missing data")
			}
			after := mustCheck(t, fsys, "/p", Options{})
			missingProblem(t, after, file, pos, bases[1], bases[2]-1)
		})
	}
}

// TestMissingDataCompacted: compaction leaves gaps, so in a log with a
// cleaner-offset checkpoint (its own, or its log.dir's line) a gap between
// segments is not missing data; index entries pointing past the end of
// their .log still are, compacted or not.
func TestMissingDataCompacted(t *testing.T) {
	t.Run("own checkpoint, deleted", func(t *testing.T) {
		fsys, _, bases := missingLog(t)
		for _, suf := range []string{".log", ".index", ".timeindex"} {
			if err := fsys.Remove("/p/" + layout.FileName(bases[1], suf)); err != nil {
				t.Fatal(err)
			}
		}
		vfstest.WriteFile(t, fsys, "/p/cleaner-offset-checkpoint", []byte("0\n1\np 0 0\n"))
		if r := mustCheck(t, fsys, "/p", Options{}); !r.Clean() {
			t.Fatalf("a compacted log's gap reported:%s", dumpProblems(r))
		}
	})
	t.Run("own checkpoint, emptied", func(t *testing.T) {
		fsys, logs, bases := missingLog(t)
		vfstest.WriteFile(t, fsys, "/p/"+logs[1], nil)
		vfstest.WriteFile(t, fsys, "/p/cleaner-offset-checkpoint", []byte("0\n1\np 0 0\n"))
		r := mustCheck(t, fsys, "/p", Options{})
		ents, _, _ := DecodeIndex(vfstest.ReadFile(t, fsys, "/p/"+layout.FileName(bases[1], ".index")), bases[1], false)
		p := missingProblem(t, r, logs[1], 0, bases[1], ents[len(ents)-1].Offset)
		if strings.Contains(p.Detail, "never compacted") {
			t.Errorf("index evidence argued from compaction: %s", p.Detail)
		}
	})
	t.Run("log.dir line", func(t *testing.T) {
		fsys := vfs.NewMem()
		dir := "/kafka/t-0"
		writeLog(t, fsys, dir, record.None, 120, 10)
		logs := logFiles(t, fsys, dir)
		_, base1, _ := FileKind(logs[1])
		for _, suf := range []string{".log", ".index", ".timeindex"} {
			if err := fsys.Remove(filepath.Join(dir, layout.FileName(base1, suf))); err != nil {
				t.Fatal(err)
			}
		}
		vfstest.WriteFile(t, fsys, "/kafka/cleaner-offset-checkpoint", []byte("0\n1\nt 1 5\n")) // another partition's
		if r := mustCheck(t, fsys, dir, Options{}); !hasKind(r, KindMissingData) {
			t.Fatalf("another partition's cleaner line made the gap legitimate:%s", dumpProblems(r))
		}
		vfstest.WriteFile(t, fsys, "/kafka/cleaner-offset-checkpoint", []byte("0\n2\nt 1 5\nt 0 0\n"))
		if r := mustCheck(t, fsys, dir, Options{}); hasKind(r, KindMissingData) {
			t.Fatalf("a compacted partition's gap reported:%s", dumpProblems(r))
		}
	})
}

func hasKind(r *Report, k Kind) bool {
	for _, p := range r.Problems {
		if p.Kind == k {
			return true
		}
	}
	return false
}

// TestMissingDataBelowLogStart: offsets below the log start were deleted
// (DeleteRecords, retention), so a gap there is not missing data; a gap
// that reaches above it is reported from the log start on.
func TestMissingDataBelowLogStart(t *testing.T) {
	fsys, logs, bases := missingLog(t)
	for _, suf := range []string{".log", ".index", ".timeindex"} {
		if err := fsys.Remove("/p/" + layout.FileName(bases[1], suf)); err != nil {
			t.Fatal(err)
		}
	}
	vfstest.WriteFile(t, fsys, "/p/log-start-offset-checkpoint", []byte(fmt.Sprintf("0\n1\np 0 %d\n", bases[2])))
	if r := mustCheck(t, fsys, "/p", Options{}); hasKind(r, KindMissingData) {
		t.Fatalf("a gap below the log start reported:%s", dumpProblems(r))
	}
	start := bases[1] + 3
	vfstest.WriteFile(t, fsys, "/p/log-start-offset-checkpoint", []byte(fmt.Sprintf("0\n1\np 0 %d\n", start)))
	r := mustCheck(t, fsys, "/p", Options{})
	missingProblem(t, r, logs[0], int64(len(vfstest.ReadFile(t, fsys, "/p/"+logs[0]))), start, bases[2]-1)
}

// TestMissingDataTruncatedLastSegment: the last .log cut at a batch
// boundary leaves no damage to see, but its .index still points past the
// end: in a log that had synced it (clean shutdown) that is missing data,
// and the index is kept as evidence; in a crashed log whose recovery point
// lies below the lost batches, the index simply outlived unsynced data,
// and repair rebuilds it.
func TestMissingDataTruncatedLastSegment(t *testing.T) {
	cut := func(t *testing.T) (vfs.FS, string, int64, int64) {
		fsys, logs, _ := missingLog(t)
		last := logs[len(logs)-1]
		data := vfstest.ReadFile(t, fsys, "/p/"+last)
		starts := batchStarts(t, data)
		keep := starts[len(starts)/2]
		vfstest.WriteFile(t, fsys, "/p/"+last, data[:keep])
		first := record.Batch(data[keep:]).BaseOffset()
		return fsys, last, keep, first
	}
	t.Run("synced", func(t *testing.T) {
		fsys, last, keep, first := cut(t)
		idx := "/p/" + strings.TrimSuffix(last, ".log") + ".index"
		before := vfstest.ReadFile(t, fsys, idx)
		r := mustCheck(t, fsys, "/p", Options{})
		if p := problemAt(r, last, keep, KindMissingData); !strings.HasPrefix(p.Detail, fmt.Sprintf("data missing: offsets %d–", first)) {
			t.Fatalf("want missing data from offset %d at %s byte %d:%s", first, last, keep, dumpProblems(r))
		}
		if rr, err := Repair(fsys, "/p", RepairOptions{}); err != nil || rr.ExitCode() != ExitUncorrected {
			t.Fatalf("repair: %v, exit %d:%s", err, rr.ExitCode(), dumpProblems(rr))
		}
		if !bytes.Equal(vfstest.ReadFile(t, fsys, idx), before) {
			t.Fatal("repair rebuilt the index that is the evidence")
		}
		if after := mustCheck(t, fsys, "/p", Options{}); !hasKind(after, KindMissingData) {
			t.Fatalf("missing data no longer reported after repair:%s", dumpProblems(after))
		}
	})
	t.Run("unsynced", func(t *testing.T) {
		fsys, _, _, first := cut(t)
		crash(t, fsys, "/p", first)
		r := mustCheck(t, fsys, "/p", Options{})
		if hasKind(r, KindMissingData) || !hasKind(r, KindIndexEntry) {
			t.Fatalf("index entries at unsynced batches: want stale index entries, not missing data:%s", dumpProblems(r))
		}
		if rr, err := Repair(fsys, "/p", RepairOptions{}); err != nil || rr.ExitCode() != ExitRepaired {
			t.Fatalf("repair: %v, exit %d:%s", err, rr.ExitCode(), dumpProblems(rr))
		}
	})
}

// TestMissingDataInsideSegment: a batch cut out of the middle of a .log
// (a file edit) leaves a gap between two valid batches of one segment.
func TestMissingDataInsideSegment(t *testing.T) {
	fsys, logs, _ := missingLog(t)
	data := vfstest.ReadFile(t, fsys, "/p/"+logs[0])
	starts := batchStarts(t, data)
	a, b := starts[3], starts[4]
	gone := record.Batch(data[a:])
	vfstest.WriteFile(t, fsys, "/p/"+logs[0], append(bytes.Clone(data[:a]), data[b:]...))
	r := mustCheck(t, fsys, "/p", Options{})
	var p Problem
	for _, q := range r.Problems {
		if q.Kind == KindMissingData {
			p = q
		}
	}
	want := fmt.Sprintf("data missing: offsets %d–%d", gone.BaseOffset(), gone.LastOffset())
	if p.File != logs[0] || p.Position != a || !strings.HasPrefix(p.Detail, want) {
		t.Fatalf("want %q at %s byte %d:%s", want, logs[0], a, dumpProblems(r))
	}
	if _, err := Repair(fsys, "/p", RepairOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := mustCheck(t, fsys, "/p", Options{}); !strings.Contains(dumpProblems(after), want) {
		t.Fatalf("the gap is no longer reported after repair:%s", dumpProblems(after))
	}
}
