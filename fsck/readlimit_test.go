package fsck

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestEntryAboveReadLimit checks that an entry the file holds but that is
// larger than the read limit is reported as read-limit at its position,
// not as damage: the entries after it are still checked, and a repair, with
// the recovery point anywhere, changes no byte. Raising the limit checks
// it clean.
func TestEntryAboveReadLimit(t *testing.T) {
	fsys := vfs.NewMem()
	const dir = "/big-0"
	l, err := seglog.Open(dir, seglog.Options{FS: fsys, LogConfig: seglog.LogConfig{MaxBatchBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		v := []byte("small")
		if i == 1 {
			v = bytes.Repeat([]byte("x"), 200<<10)
		}
		if _, err := l.Append(record.Record{Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logs := logFiles(t, fsys, dir)
	data := vfstest.ReadFile(t, fsys, filepath.Join(dir, logs[0]))
	starts := batchStarts(t, data)
	big := starts[1]
	// The entry after the big one is damaged, to show the scan goes on.
	data[starts[2]+record.HeaderSize] ^= 1
	vfstest.WriteFile(t, fsys, filepath.Join(dir, logs[0]), data)
	crash(t, fsys, dir, 0) // nothing synced: a cut would be allowed anywhere

	opts := Options{MaxEntryBytes: 64 << 10}
	r := mustCheck(t, fsys, dir, opts)
	p := problemAt(r, logs[0], big, KindReadLimit)
	if p.Kind == "" || !strings.Contains(p.Detail, "raise --max-entry-bytes") {
		t.Fatalf("want read-limit at byte %d naming the flag; got:%s", big, dumpProblems(r))
	}
	if !hasProblem(r, logs[0], starts[2], KindCRC) {
		t.Fatalf("the entry after the big one was not checked:%s", dumpProblems(r))
	}
	for _, q := range r.Problems {
		if q.Position == big && q.Kind != KindReadLimit {
			t.Fatalf("the big entry is reported as %s", q.Kind)
		}
	}

	// The old option name still sets the limit.
	if old := mustCheck(t, fsys, dir, Options{MaxBatchBytes: 64 << 10}); !hasProblem(old, logs[0], big, KindReadLimit) {
		t.Fatalf("Options.MaxBatchBytes no longer sets the read limit:%s", dumpProblems(old))
	}

	// Repair cuts at the damage after the big entry (past the recovery
	// point) but leaves the big entry, which it could not verify.
	rr, err := Repair(fsys, dir, RepairOptions{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if got := vfstest.ReadFile(t, fsys, filepath.Join(dir, logs[0])); !bytes.Equal(got, data[:starts[2]]) {
		t.Fatalf("repair left %d bytes, want the %d before the damage", len(got), starts[2])
	}
	if q := problemAt(rr, logs[0], big, KindReadLimit); q.Kind == "" || q.Repaired {
		t.Fatalf("read-limit problem after repair:%s", dumpProblems(rr))
	}

	// Nor does it rebuild the segment's indexes, which the engine would
	// have to read the big entry for: they still name the cut batch.
	if q := problemAt(rr, "00000000000000000000.index", 0, KindIndexEntry); q.Kind == "" || q.Repaired {
		t.Fatalf("index of the over-limit segment reported rebuilt:%s", dumpProblems(rr))
	}

	// With the limit raised the big entry is verified and the indexes
	// rebuilt.
	if hi := mustCheck(t, fsys, dir, Options{}); hasProblem(hi, logs[0], big, KindReadLimit) {
		t.Fatalf("default limit:%s", dumpProblems(hi))
	}
	if rr, err := Repair(fsys, dir, RepairOptions{}); err != nil || rr.ExitCode() != ExitRepaired {
		t.Fatalf("repair with the default limit: %v:%s", err, dumpProblems(rr))
	}
	if hi := mustCheck(t, fsys, dir, Options{Deep: true}); !hi.Clean() {
		t.Fatalf("after repair with the default limit:%s", dumpProblems(hi))
	}
}
