package fsck

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestEngineRecoveryGuard checks how repair holds the engine's segment
// recovery to fsck's cut: asked to rebuild indexes only (floor = the file
// size) on a segment whose tail the engine would cut, or to cut where the
// engine sees synced data, it fails with ErrDisagree and changes no file;
// with the floor at the damage and nothing synced, the engine cuts there.
func TestEngineRecoveryGuard(t *testing.T) {
	fsys := vfs.NewMem()
	writeLog(t, fsys, "/p", record.None, 30, 2)
	logs := logFiles(t, fsys, "/p")
	last := filepath.Join("/p", logs[len(logs)-1])
	data := vfstest.ReadFile(t, fsys, last)
	starts := batchStarts(t, data)
	cut := starts[len(starts)-1]
	torn := data[:cut+20]
	vfstest.WriteFile(t, fsys, last, torn)

	_, base, ok := FileKind(logs[len(logs)-1])
	if !ok {
		t.Fatalf("bad log name %s", logs[len(logs)-1])
	}
	r := &repairer{fs: fsys, dir: "/p", opts: RepairOptions{}}
	size := int64(len(torn))
	before := map[string][]byte{}
	for _, n := range mustList(t, fsys, "/p") {
		before[n] = vfstest.ReadFile(t, fsys, filepath.Join("/p", n))
	}
	for _, tc := range []struct {
		name          string
		floor, synced int64
	}{
		{"floor at the file size", size, 0},
		{"the tail is synced", cut, 60},
	} {
		if _, err := r.recoverSegment(base, tc.floor, size, segment.RecoverOptions{Synced: tc.synced}); !errors.Is(err, ErrDisagree) {
			t.Fatalf("%s: %v, want ErrDisagree", tc.name, err)
		}
		for n, b := range before {
			if got := vfstest.ReadFile(t, fsys, filepath.Join("/p", n)); string(got) != string(b) {
				t.Fatalf("%s: the refused recovery changed %s", tc.name, n)
			}
		}
	}
	res, err := r.recoverSegment(base, cut, size, segment.RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ValidBytes != cut || int64(len(vfstest.ReadFile(t, fsys, last))) != cut {
		t.Fatalf("engine recovery kept %d bytes, want %d", res.ValidBytes, cut)
	}
}

func mustList(t testing.TB, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}
