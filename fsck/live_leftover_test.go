package fsck

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestLiveCheckpointTmpNotALeftover: a checkpoint's .tmp listed with the
// directory but renamed away before the check ends (a live Log finishing
// its checkpoint write) is not reported; one still there at the end is.
func TestLiveCheckpointTmpNotALeftover(t *testing.T) {
	for _, vanishes := range []bool{true, false} {
		mem := vfs.NewMem()
		dir := "/log"
		writeLog(t, mem, dir, record.None, 20, 5)
		tmp := layout.RecoveryPointFile + layout.CheckpointTmpSuffix
		if err := vfs.WriteFileAtomic(mem, filepath.Join(dir, tmp), []byte("0\n1\n0\n")); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		fsys := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
			// The writer's rename lands once fsck, having listed the
			// directory, reads the first segment.
			if vanishes && op.Kind == vfs.OpOpen && strings.HasSuffix(op.Path, ".log") {
				once.Do(func() {
					if err := mem.Rename(filepath.Join(dir, tmp), filepath.Join(dir, layout.RecoveryPointFile)); err != nil {
						t.Error(err)
					}
				})
			}
			return nil
		}))
		r := mustCheck(t, fsys, dir, Options{})
		if got := hasProblem(r, tmp, 0, KindLeftover); got == vanishes {
			t.Fatalf("tmp vanished %v: reported as a leftover %v; problems:%s", vanishes, got, dumpProblems(r))
		}
	}
}
