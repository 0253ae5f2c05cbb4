package fsck

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestEngineRecoveryGuard checks the guard around the engine's segment
// recovery: asked to rebuild indexes only (floor = the file size), a
// segment whose tail the engine would cut comes back as ErrDisagree with
// the .log unchanged; with the floor at the damage, the engine cuts there.
func TestEngineRecoveryGuard(t *testing.T) {
	fsys := vfs.NewMem()
	writeLog(t, fsys, "/p", record.None, 30, 2)
	logs := logFiles(t, fsys, "/p")
	last := filepath.Join("/p", logs[len(logs)-1])
	data := readAll(t, fsys, last)
	starts := batchStarts(t, data)
	cut := starts[len(starts)-1]
	torn := data[:cut+20]
	writeFile(t, fsys, last, torn)

	var base int64
	if k, b, ok := FileKind(logs[len(logs)-1]); !ok || k != ".log" {
		t.Fatalf("bad log name %s", logs[len(logs)-1])
	} else {
		base = b
	}
	r := &repairer{fs: fsys, dir: "/p", opts: RepairOptions{}}
	size := int64(len(torn))
	if _, err := r.recoverSegment(base, size, size); !errors.Is(err, ErrDisagree) {
		t.Fatalf("engine cut under a floor at the file size: %v, want ErrDisagree", err)
	}
	if got := readAll(t, fsys, last); len(got) != len(torn) {
		t.Fatalf("the guarded recovery changed the .log: %d bytes, want %d", len(got), len(torn))
	}
	res, err := r.recoverSegment(base, cut, size)
	if err != nil {
		t.Fatal(err)
	}
	if res.ValidBytes != cut || int64(len(readAll(t, fsys, last))) != cut {
		t.Fatalf("engine recovery kept %d bytes, want %d", res.ValidBytes, cut)
	}
}
