package seglog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestTruncateLowersCleanerCheckpoint: a truncation below the cleaner
// checkpoint brings it to at most the truncation offset (and to the end
// actually reached), durably, for every crash image taken during the
// truncation: a reopened log never has a checkpoint above records it may
// append anew. Also for a truncation below the log start.
func TestTruncateLowersCleanerCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		start  int64 // DeleteBefore first, when > 0
		offset int64
	}{
		{"inside", 0, 50},
		{"midbatch", 0, 58}, // batches of 4: the cut is at 56
		{"belowstart", 40, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			var mu sync.Mutex
			recording := false
			var images []*vfs.MemFS
			rng := rand.New(rand.NewPCG(7, uint64(tc.offset)))
			fsys := vfs.Inject(mem, vfs.InjectorFunc(func(vfs.Op) error {
				mu.Lock()
				defer mu.Unlock()
				if recording {
					images = append(images, mem.CrashClone(), mem.CrashCloneWith(vfs.CrashOptions{
						Rand: rng, KeepUnsynced: 0.5, KeepUnsyncedEntries: 0.5,
					}))
				}
				return nil
			}))
			l := swapTestLog(t, fsys, 120)
			if tc.start > 0 {
				if _, err := l.DeleteBefore(tc.start); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.SetCleanerCheckpoint(100); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			recording = true
			mu.Unlock()
			if err := l.TruncateTo(tc.offset); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			recording = false
			images = append(images, mem.CrashClone())
			mu.Unlock()
			end := l.EndOffset()
			if end > tc.offset {
				t.Fatalf("end %d after truncating to %d", end, tc.offset)
			}
			if cp, ok, err := l.CleanerCheckpoint(); err != nil || !ok || cp > end {
				t.Fatalf("checkpoint %d (ok %v, err %v) after truncating to %d (end %d)", cp, ok, err, tc.offset, end)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if len(images) < 4 {
				t.Fatalf("only %d operations recorded", len(images))
			}
			truncated := 0
			for i, img := range images {
				l, err := Open("/log", Options{FS: img, LogConfig: LogConfig{MaxIndexBytes: 4 << 10}})
				if err != nil {
					t.Fatalf("image %d: open: %v", i, err)
				}
				cp, ok, err := l.CleanerCheckpoint()
				if err != nil || !ok {
					t.Fatalf("image %d: checkpoint: ok %v, %v", i, ok, err)
				}
				if e := l.EndOffset(); e < 120 {
					// Some of the truncated records are gone: the
					// checkpoint must already be at most offset.
					truncated++
					if cp > tc.offset {
						t.Fatalf("image %d of %d: end %d, checkpoint %d above the truncation offset %d",
							i, len(images), e, cp, tc.offset)
					}
				} else if cp != 100 && cp > tc.offset {
					t.Fatalf("image %d: checkpoint %d, neither the old one nor lowered", i, cp)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if truncated == 0 {
				t.Fatalf("no crash image showed the truncation")
			}
		})
	}
}

// TestSetCleanerCheckpointClampsToEnd: a round that finished after a
// truncation cannot raise the checkpoint past the log's end.
func TestSetCleanerCheckpointClampsToEnd(t *testing.T) {
	l := swapTestLog(t, vfs.NewMem(), 40)
	defer l.Close()
	if err := l.TruncateTo(20); err != nil {
		t.Fatal(err)
	}
	if err := l.SetCleanerCheckpoint(36); err != nil {
		t.Fatal(err)
	}
	if cp, ok, err := l.CleanerCheckpoint(); err != nil || !ok || cp != 20 {
		t.Fatalf("checkpoint %d (ok %v, err %v), want 20", cp, ok, err)
	}
}

// TestTruncatedBelow: a compaction learns of a truncation under what it mapped,
// and only of one.
func TestTruncatedBelow(t *testing.T) {
	l := swapTestLog(t, vfs.NewMem(), 120)
	defer l.Close()
	run := l.acquireSealed(0, 60)
	defer run.Release()
	if l.truncatedBelow(run, 100) {
		t.Fatal("truncated before any truncation")
	}
	if err := l.TruncateTo(100); err != nil {
		t.Fatal(err)
	}
	if l.truncatedBelow(run, 100) {
		t.Fatal("a truncation at 100 reported below 100")
	}
	if !l.truncatedBelow(run, 101) {
		t.Fatal("a truncation at 100 not reported below 101")
	}
}

// TestDependsThrough: a truncation above a run but below the offsets its
// rewrite was decided from makes ReplaceSegments refuse the swap, checked
// under the lock truncation takes; without DependsThrough the same swap
// goes ahead, since the run's own segments are intact.
func TestDependsThrough(t *testing.T) {
	for _, depends := range []bool{false, true} {
		t.Run(fmt.Sprint("depends=", depends), func(t *testing.T) {
			l := swapTestLog(t, vfs.NewMem(), 200)
			defer l.Close()
			run := l.acquireSealed(0, l.EndOffset())
			defer run.Release()
			if run.Len() < 3 {
				t.Fatalf("run of %d segments, want several", run.Len())
			}
			sub := run.Sub(0, 1)
			w := rewriteEvens(t, l, sub)
			if depends {
				sub.DependsThrough(l.EndOffset())
			}
			if err := l.TruncateTo(190); err != nil {
				t.Fatal(err)
			}
			err := l.replaceSegments(sub, []*segment.Cleaned{w})
			if depends && !errors.Is(err, ErrSegmentsChanged) {
				t.Fatalf("swap after a truncation below the depended-on end: %v, want ErrSegmentsChanged", err)
			}
			if !depends && err != nil {
				t.Fatalf("swap of an intact run: %v", err)
			}
		})
	}
}

// TestTruncateWithMalformedCleanerCheckpoint: a cleaner checkpoint that
// does not parse is replaced by the log start (any value at most the lost
// one is safe), never by the truncation offset, which may lie above it.
func TestTruncateWithMalformedCleanerCheckpoint(t *testing.T) {
	fsys := vfs.NewMem()
	l := swapTestLog(t, fsys, 120)
	defer l.Close()
	if _, err := l.DeleteBefore(10); err != nil {
		t.Fatal(err)
	}
	vfstest.WriteFile(t, fsys, "/log/"+CleanerOffsetFile, []byte("not a checkpoint\n"))
	if err := l.TruncateTo(100); err != nil {
		t.Fatal(err)
	}
	cp, ok, err := l.CleanerCheckpoint()
	if err != nil || !ok || cp != l.StartOffset() {
		t.Fatalf("checkpoint %d (ok %v, err %v), want the log start %d", cp, ok, err, l.StartOffset())
	}
}
