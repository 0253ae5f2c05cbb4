package compaction

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestCrashDuringRound loses power before every filesystem operation of a
// round over many groups (whose commits run while the next group is
// rewritten), keeping none or a random part of what was not synced: every
// image reopens, fsck finds it clean, every record read was written at its
// offset, and the latest record of every key is there.
func TestCrashDuringRound(t *testing.T) {
	mem := vfs.NewMem()
	var mu sync.Mutex
	recording := false
	var images []*vfs.MemFS
	rng := rand.New(rand.NewPCG(3, 4))
	fsys := vfs.Inject(mem, vfs.InjectorFunc(func(vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if recording {
			// Exactly what was synced, or (one time in three, to keep the
			// test short) random parts of what was not as well.
			images = append(images, mem.CrashClone())
			if rng.IntN(3) == 0 {
				images = append(images, mem.CrashCloneWith(vfs.CrashOptions{
					Rand: rng, KeepUnsynced: 0.5, KeepUnsyncedEntries: 0.5,
				}))
			}
		}
		return nil
	}))
	o := testOptions(fsys)
	o.SegmentBytes = 1 << 10
	l, err := seglog.Open("/log", o)
	if err != nil {
		t.Fatal(err)
	}
	latest := map[string]int64{}
	for i := range 150 {
		key := fmt.Sprintf("k%d", rng.IntN(20))
		if _, err := l.Append(record.Record{Key: []byte(key), Value: valueAt(int64(i))}); err != nil {
			t.Fatal(err)
		}
		latest[key] = int64(i)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	end := l.EndOffset()
	mu.Lock()
	recording = true
	mu.Unlock()
	res, err := Clean(l, NewOffsetMap(1<<16, 0), 0, end, Options{SegmentBytes: 2 << 10})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	recording = false
	images = append(images, mem.CrashClone())
	mu.Unlock()
	if res.SegmentsWritten < 3 {
		t.Fatalf("only %d groups: %+v", res.SegmentsWritten, res)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d crash images", len(images))
	for i, img := range images {
		r, err := seglog.Open("/log", testOptions(img))
		if err != nil {
			t.Fatalf("image %d: open: %v", i, err)
		}
		seen := map[string]int64{}
		prev := int64(-1)
		for rec, err := range r.Records(0) {
			if err != nil {
				t.Fatalf("image %d: %v", i, err)
			}
			if rec.Offset <= prev || string(rec.Value) != string(valueAt(rec.Offset)) {
				t.Fatalf("image %d: record at %d after %d, value %q", i, rec.Offset, prev, rec.Value)
			}
			prev = rec.Offset
			seen[string(rec.Key)] = rec.Offset
		}
		for k, off := range latest {
			if seen[k] != off {
				t.Fatalf("image %d: key %s's latest record %d lost (last read %d)", i, k, off, seen[k])
			}
		}
		if r.EndOffset() != end {
			t.Fatalf("image %d: end %d, want %d", i, r.EndOffset(), end)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		fscktest.CheckClean(t, img, "/log")
	}
}
