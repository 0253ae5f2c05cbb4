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

// cleanButQuarantines reports whether r's only problems are quarantine
// files: what a repair that kept valid batches it cut leaves.
func cleanButQuarantines(r *Report) bool {
	for _, p := range r.Problems {
		if p.Kind != KindQuarantine {
			return false
		}
	}
	return true
}

// TestQuarantineListed: fsck lists a quarantine file as a warning naming
// it, its size, where its bytes came from, the valid batches and records
// fsck's own scanner finds in it, and the command that reads it; repair
// leaves it, and the exit status says a problem is left.
func TestQuarantineListed(t *testing.T) {
	fsys := vfs.NewMem()
	dir := "/p"
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	var batches [][]byte
	for i := range 4 {
		b := record.NewBuilder(record.None)
		b.SetBaseOffset(int64(10 + 3*i))
		for j := range 3 {
			if err := b.Add(record.Record{Offset: int64(10 + 3*i + j), Value: []byte(fmt.Sprint("v", j))}); err != nil {
				t.Fatal(err)
			}
		}
		out, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, bytes.Clone(out))
	}
	data := append([]byte("damaged bytes first"), bytes.Join(batches, nil)...)
	name := layout.QuarantineName(0, 4242, 0)
	vfstest.WriteFile(t, fsys, filepath.Join(dir, layout.FileName(0, layout.LogSuffix)), nil)
	vfstest.WriteFile(t, fsys, filepath.Join(dir, name), data)
	r := mustCheck(t, fsys, dir, Options{})
	var found *Problem
	for i, p := range r.Problems {
		if p.Kind == KindQuarantine {
			found = &r.Problems[i]
		}
	}
	if found == nil || found.File != name || found.Severity != Warning {
		t.Fatalf("quarantine not listed as a warning:%s", dumpProblems(r))
	}
	for _, want := range []string{fmt.Sprintf("%d bytes", len(data)), "byte 4242", "4 valid batches with 12 records", "offsets 10-21",
		"seglog dump " + filepath.Join(dir, name)} {
		if !strings.Contains(found.Detail, want) {
			t.Errorf("detail %q does not say %q", found.Detail, want)
		}
	}
	if r.ExitCode() != ExitUncorrected {
		t.Fatalf("exit %d with a quarantine file, want %d", r.ExitCode(), ExitUncorrected)
	}
	rr, err := Repair(fsys, dir, RepairOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.ExitCode() != ExitUncorrected || !bytes.Equal(vfstest.ReadFile(t, fsys, filepath.Join(dir, name)), data) {
		t.Fatalf("repair: exit %d, or the quarantine file changed", rr.ExitCode())
	}
}
