package seglog

import (
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestCleanReopenKilledBeforeMarkerRemoved: opening a cleanly closed log
// grows the active segment's indexes back to their preallocated size. If
// that happened before the clean-shutdown marker was gone, a process
// killed in between left a marker vouching for indexes that now look full
// of entries (every zero byte counted), and the next open trusted them:
// CI's TestKillDuringAppends then failed its Close with "index: full". The
// marker goes first now, durably, so a failure (or a kill) at any step of
// the open leaves either the files as Close wrote them or no marker.
func TestCleanReopenKilledBeforeMarkerRemoved(t *testing.T) {
	mem := vfs.NewMem()
	w := crashWorkload{sync: SyncNone}
	l, err := Open("/log", w.options(mem))
	if err != nil {
		t.Fatal(err)
	}
	for l.NumSegments() < 3 {
		if _, err := l.Append(record.Record{Value: crashValue(l.EndOffset(), 100)}); err != nil {
			t.Fatal(err)
		}
	}
	end := l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A process killed at any operation of a clean reopen: the page cache
	// survives a kill, so every clone keeps unsynced bytes and entries
	// (a random prefix of each file's unsynced tail, all of it or some).
	var images []*vfs.MemFS
	rng := rand.New(rand.NewPCG(5, 6))
	recording := vfs.Inject(mem, vfs.InjectorFunc(func(vfs.Op) error {
		for range 4 {
			images = append(images, mem.CrashCloneWith(vfs.CrashOptions{Rand: rng, KeepUnsynced: 1, KeepUnsyncedEntries: 1}))
		}
		return nil
	}))
	l, err = Open("/log", w.options(recording))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, img := range images {
		l, err := Open("/log", w.options(img))
		if err != nil {
			t.Fatalf("image %d: reopen: %v", i, err)
		}
		if l.EndOffset() != end {
			t.Fatalf("image %d: end %d, want %d", i, l.EndOffset(), end)
		}
		for range 20 {
			if _, err := l.Append(record.Record{Value: crashValue(l.EndOffset(), 100)}); err != nil {
				t.Fatalf("image %d: append after reopen: %v", i, err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatalf("image %d: close after reopen: %v", i, err)
		}
		fscktest.CheckClean(t, img, "/log")
	}
}
