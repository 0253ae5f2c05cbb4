package cleaner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

func deletedFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, segment.DeletedSuffix) {
			out = append(out, n)
		}
	}
	return out
}

// TestReaderHoldsSliceThroughRetention: a Slice taken before retention
// deletes its segment still delivers every byte, and the files go only
// when both the reader and file.delete.delay.ms are done.
func TestReaderHoldsSliceThroughRetention(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprint(delay), func(t *testing.T) {
			fs, clock := vfs.NewMem(), newFakeClock()
			l := openLog(t, fs, "/a", clock)
			defer l.Close()
			segmentsOf(t, l, clock, 72*time.Hour, 72*time.Hour, time.Minute)
			sl, err := l.Read(0, 1<<20, seglog.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer sl.Close()
			want := make([]byte, sl.Len())
			if _, err := sl.ReadAt(want, 0); err != nil {
				t.Fatal(err)
			}
			c := New(Options{Clock: clock})
			p := retention(time.Hour)
			p.FileDeleteDelay = delay
			if err := c.Add(Wrap(l), p); err != nil {
				t.Fatal(err)
			}
			if err := c.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			if l.StartOffset() != 10 {
				t.Fatalf("start %d, want 10", l.StartOffset())
			}
			if _, err := l.Read(0, 100, seglog.ReadOptions{}); !errors.Is(err, seglog.ErrOffsetOutOfRange) {
				t.Fatalf("new read below the start: %v", err)
			}
			// Segment 5 went with no reader: at once without a delay,
			// after it with one.
			wantLeft := 3
			if delay > 0 {
				wantLeft = 6
			}
			if got := deletedFiles(t, fs, "/a"); len(got) != wantLeft {
				t.Fatalf(".deleted files %v, want %d", got, wantLeft)
			}
			var got bytes.Buffer
			if _, err := sl.WriteTo(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("slice bytes changed under retention: %d bytes, want %d", got.Len(), len(want))
			}
			clock.Advance(delay)
			if err := c.RunOnce(context.Background()); err != nil { // expires the delay
				t.Fatal(err)
			}
			if got := deletedFiles(t, fs, "/a"); len(got) != 3 {
				t.Fatalf("after the delay, the reader's segment only: %v", got)
			}
			sl.Close()
			if got := deletedFiles(t, fs, "/a"); len(got) != 0 {
				t.Fatalf("after the reader let go: %v", got)
			}
		})
	}
}

// TestCrashDuringDeletionPass simulates a power loss before every
// filesystem operation of a pass (and after it), keeping none or a random
// part of what was not synced: the log reopens, fsck finds it consistent,
// its start is not lower than before the pass, nothing below the start is
// readable and nothing above it is lost; and the next pass removes any
// segment the crash left wholly below the start. The log's start is not
// 0 before the pass (an earlier DeleteRecords), so a crash that lost the
// checkpoint's rewrite and brought the start back would show.
func TestCrashDuringDeletionPass(t *testing.T) {
	// The sealed segments expire; or every segment does, so the pass
	// rolls the active one and deletes it too (the start reaches the end).
	t.Run("sealed", func(t *testing.T) { crashDuringDeletionPass(t, 0, 15) })
	t.Run("active", func(t *testing.T) { crashDuringDeletionPass(t, 2*time.Hour, 23) })
}

// crashDuringDeletionPass runs TestCrashDuringDeletionPass's pass, the
// clock advanced by advance, which moves the start from 2 to after.
func crashDuringDeletionPass(t *testing.T, advance time.Duration, after int64) {
	mem, clock := vfs.NewMem(), newFakeClock()
	// The Log's background flusher may touch the FS too: the recorder is
	// safe for concurrent use.
	var recording atomic.Bool
	var mu sync.Mutex
	var clones []*vfs.MemFS
	rng := rand.New(rand.NewPCG(1, 2))
	fs := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if recording.Load() {
			mu.Lock()
			defer mu.Unlock()
			clones = append(clones, mem.CrashClone(),
				mem.CrashCloneWith(vfs.CrashOptions{Rand: rng, KeepUnsynced: 0.5, KeepUnsyncedEntries: 0.5}))
		}
		return nil
	}))
	l := openLog(t, fs, "/a", clock)
	segmentsOf(t, l, clock, 72*time.Hour, 72*time.Hour, 72*time.Hour, time.Minute)
	appendAt(t, l, clock.Now().UnixMilli(), 3)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	// An earlier DeleteRecords moved the start into the first segment:
	// the pass under test must never bring it back below.
	const before = 2
	if _, err := l.DeleteBefore(before); err != nil {
		t.Fatal(err)
	}
	end := l.EndOffset()
	want := map[int64]string{}
	for r, err := range l.Records(before) {
		if err != nil {
			t.Fatal(err)
		}
		want[r.Offset] = string(r.Value)
	}
	clock.Advance(advance)
	c := New(Options{Clock: clock})
	if err := c.Add(Wrap(l), retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	recording.Store(true)
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	recording.Store(false)
	clones = append(clones, mem.CrashClone())
	if l.StartOffset() != after || l.EndOffset() != end {
		t.Fatalf("the pass moved the start to %d (end %d), want %d (end %d)", l.StartOffset(), l.EndOffset(), after, end)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(clones) < 10 {
		t.Fatalf("only %d crash points", len(clones))
	}
	starts := map[int64]int{}
	quiet := slog.New(slog.DiscardHandler) // recovery warns of the leftovers it resolves
	for i, clone := range clones {
		r, err := seglog.Open("/a", seglog.Options{FS: clone, LogConfig: seglog.LogConfig{SegmentBytes: 1 << 10, MaxIndexBytes: 1 << 10}, Clock: clock, Logger: quiet})
		if err != nil {
			t.Fatalf("crash %d: reopen: %v", i, err)
		}
		start := r.StartOffset()
		starts[start]++
		if start < before || start > after || r.EndOffset() != end {
			t.Fatalf("crash %d: start %d end %d; want start in [%d, %d], end %d", i, start, r.EndOffset(), before, after, end)
		}
		if _, err := r.Read(start-1, 100, seglog.ReadOptions{}); !errors.Is(err, seglog.ErrOffsetOutOfRange) {
			t.Fatalf("crash %d: offset %d below the start %d is readable: %v", i, start-1, start, err)
		}
		next := start
		for rec, err := range r.Records(start) {
			if err != nil {
				t.Fatalf("crash %d: %v", i, err)
			}
			if rec.Offset != next || string(rec.Value) != want[next] {
				t.Fatalf("crash %d: record at %d is offset %d", i, next, rec.Offset)
			}
			next++
		}
		if next != end {
			t.Fatalf("crash %d: records [%d, %d) readable, want up to %d", i, start, next, end)
		}
		// The crash may have come after the start was checkpointed and
		// before every segment below it was removed: the next pass removes
		// them by the start-offset rule alone (retention.ms forever here),
		// as Kafka's next pass does, or they would fill the disk for good.
		again := New(Options{Clock: clock})
		if err := again.Add(Wrap(r), retention(Forever)); err != nil {
			t.Fatal(err)
		}
		if err := again.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if m := again.Metrics(); m.Failures != 0 {
			t.Fatalf("crash %d: the pass after reopening failed: %v", i, m.Logs[0].Err)
		}
		segs := r.Segments()
		for k := 0; k+1 < len(segs); k++ {
			if segs[k+1].BaseOffset <= start {
				t.Fatalf("crash %d: segment %d wholly below the start %d kept after a pass (%d segments)", i, segs[k].BaseOffset, start, len(segs))
			}
		}
		if r.StartOffset() != start {
			t.Fatalf("crash %d: the pass after reopening moved the start from %d to %d", i, start, r.StartOffset())
		}
		if left := deletedFiles(t, clone, "/a"); len(left) != 0 {
			t.Fatalf("crash %d: .deleted files after the pass: %v", i, left)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("crash %d: close: %v", i, err)
		}
		fscktest.CheckClean(t, clone, "/a")
	}
	if starts[before] == 0 || starts[after] == 0 {
		t.Fatalf("crash points saw starts %v: want both before and after the pass", starts)
	}
}
