package bench

import (
	"context"
	"errors"
	iofs "io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs/vfstest"
)

// TestRunDirNeedsParent: a run refuses a parent directory that does not
// exist, or is a file, and creates nothing; an existing one gets the run's
// own directory, which the run removes.
func TestRunDirNeedsParent(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "mnt", "nvme")
	if _, err := MakeRunDir(missing, "write"); !errors.Is(err, iofs.ErrNotExist) || !strings.Contains(err.Error(), "create it first") {
		t.Fatalf("missing parent: %v", err)
	}
	file := filepath.Join(base, "file")
	vfstest.WriteFile(t, fs, file, []byte("x"))
	if _, err := MakeRunDir(file, "write"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("file as parent: %v", err)
	}
	if _, err := RunWrite(context.Background(), Env{Dir: missing}, WriteConfig{Records: 10}); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("RunWrite below a missing directory: %v", err)
	}
	if names, err := fs.List(base); err != nil || len(names) != 1 || names[0] != "file" {
		t.Fatalf("the refusals left %v (%v)", names, err)
	}
	dir, err := MakeRunDir(base, "write")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != base || !strings.HasPrefix(filepath.Base(dir), "seglog-bench-write-") {
		t.Fatalf("run directory %s", dir)
	}
}
