package index

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// TestSealUnsyncedSyncsThroughItsDescriptor: SealUnsynced trims without a
// sync, and SyncFile then syncs the trimmed file through the descriptor it
// kept, without looking the file up by name: the flusher's sync races
// retention's rename of a removed segment to .deleted (FuzzLog found a
// SyncFile that read the old name, then opened it after the rename).
func TestSealUnsyncedSyncsThroughItsDescriptor(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	var opens, syncs atomic.Int64
	var refuseOpens atomic.Bool
	fsys := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if !strings.HasSuffix(op.Path, ".index") && !strings.HasSuffix(op.Path, ".index.deleted") {
			return nil
		}
		switch op.Kind {
		case vfs.OpOpen:
			opens.Add(1)
			if refuseOpens.Load() {
				return syscall.ENOENT
			}
		case vfs.OpSync:
			syncs.Add(1)
		}
		return nil
	}))
	x := mustOffset(t, fsys, "/d/0.index", 0, Options{MaxBytes: 4096, Writable: true})
	defer x.Close()
	for i := range int64(10) {
		if err := x.Append(i*3+1, i*100); err != nil {
			t.Fatal(err)
		}
	}
	if err := mem.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if err := x.SealUnsynced(); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n != 0 {
		t.Fatalf("SealUnsynced synced %d times", n)
	}
	if got := len(readFile(t, mem.CrashClone(), "/d/0.index")); got == 80 {
		t.Fatal("the trim was durable before SyncFile")
	}
	if err := x.Rename("/d/0.index.deleted"); err != nil {
		t.Fatal(err)
	}
	refuseOpens.Store(true)
	before := opens.Load()
	if err := x.SyncFile(); err != nil {
		t.Fatalf("SyncFile after a rename: %v", err)
	}
	if opens.Load() != before || syncs.Load() != 1 {
		t.Fatalf("SyncFile opened the file %d times and synced %d: want 0 and 1", opens.Load()-before, syncs.Load())
	}
	if err := mem.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if got := len(readFile(t, mem.CrashClone(), "/d/0.index.deleted")); got != 80 {
		t.Fatalf("after SyncFile a power loss keeps %d bytes, want the 80 trimmed", got)
	}
	// Done once: a second SyncFile goes by the current name.
	if err := x.SyncFile(); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("second SyncFile with opens refused: %v", err)
	}
}
