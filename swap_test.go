package seglog

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/sealed"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// swapTestLog opens a log on fsys with small segments and appends n
// records in batches of 4, then rolls so every batch is sealed.
func swapTestLog(t *testing.T, fsys vfs.FS, n int) *Log {
	t.Helper()
	l, err := Open("/log", Options{FS: fsys, LogConfig: LogConfig{SegmentBytes: 4 << 10, Sync: SyncNone, IndexIntervalBytes: 256, MaxIndexBytes: 4 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < n; off += 4 {
		if _, err := l.Append(recordsAt(int64(off), 4)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	return l
}

// rewriteEvens writes the run as one cleaned segment in which every batch
// keeps only its records at even offsets (its base offset and last offset
// delta unchanged, an empty header where none is left): a stand-in for
// compaction whose result is told from the original by the odd offsets.
func rewriteEvens(t *testing.T, l *Log, run *sealed.Run) *segment.Cleaned {
	t.Helper()
	w, err := l.newCleaned(run.Info(0).BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	bld := record.NewBuilder(record.None)
	for i := range run.Len() {
		for b, err := range run.Batches(i) {
			if err != nil {
				t.Fatal(err)
			}
			bld.Reset()
			bld.SetBaseOffset(b.BaseOffset())
			bld.SetLastOffsetDelta(b.LastOffsetDelta())
			for r, err := range b.Records() {
				if err != nil {
					t.Fatal(err)
				}
				if r.Offset%2 == 0 {
					if err := bld.AddAt(r.Offset, r.Timestamp, &r); err != nil {
						t.Fatal(err)
					}
				}
			}
			nb, err := bld.Build()
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Append(nb); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return w
}

// checkSwapState reads the whole log: below swapEnd either every record
// (old segments) or exactly the even ones (new segments), above it every
// record, and values as written.
func checkSwapState(l *Log, end, swapEnd int64) (swapped bool, err error) {
	next := int64(0)
	sawOdd, sawGap := false, false
	for r, err := range l.Records(0) {
		if err != nil {
			return false, err
		}
		if r.Offset < next {
			return false, fmt.Errorf("offset %d after %d", r.Offset, next-1)
		}
		for skip := next; skip < r.Offset; skip++ {
			if skip >= swapEnd || skip%2 == 0 {
				return false, fmt.Errorf("record %d lost", skip)
			}
			sawGap = true
		}
		if r.Offset < swapEnd && r.Offset%2 == 1 {
			sawOdd = true
		}
		if string(r.Value) != string(crashValue(r.Offset, len(r.Value))) {
			return false, fmt.Errorf("offset %d holds a value never written", r.Offset)
		}
		next = r.Offset + 1
	}
	if next != end {
		return false, fmt.Errorf("read to %d, want %d", next, end)
	}
	if sawOdd && sawGap {
		return false, errors.New("old and new segments mixed")
	}
	return sawGap, nil
}

func TestReplaceSegments(t *testing.T) {
	fsys := vfs.NewMem()
	l := swapTestLog(t, fsys, 200)
	before := l.NumSegments()
	run := l.acquireSealed(0, l.EndOffset())
	if run.Len() < 3 {
		t.Fatalf("run of %d segments, want several", run.Len())
	}
	sub := run.Sub(0, 3)
	swapEnd := sub.Info(2).NextOffset
	w := rewriteEvens(t, l, sub)
	if err := l.replaceSegments(sub, []*segment.Cleaned{w}); err != nil {
		t.Fatal(err)
	}
	if got := l.NumSegments(); got != before-2 {
		t.Fatalf("%d segments after merging 3 into 1, want %d", got, before-2)
	}
	if swapped, err := checkSwapState(l, 200, swapEnd); err != nil || !swapped {
		t.Fatalf("after swap: swapped %v, %v", swapped, err)
	}
	// The same run again: its segments are gone.
	w2 := rewriteEvens(t, l, sub)
	if _, err := l.Append(recordsAt(200, 4)...); err != nil {
		t.Fatal(err)
	}
	if err := l.replaceSegments(sub, []*segment.Cleaned{w2}); !errors.Is(err, ErrSegmentsChanged) {
		t.Fatalf("replacing replaced segments: %v", err)
	}
	run.Release()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fscktest.CheckClean(t, fsys, "/log")
	l, err := Open("/log", Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if swapped, err := checkSwapState(l, 204, swapEnd); err != nil || !swapped {
		t.Fatalf("after reopen: swapped %v, %v", swapped, err)
	}
	for _, n := range mustList(t, fsys, "/log") {
		if len(n) > 8 && (n[len(n)-8:] == ".cleaned" || n[len(n)-5:] == ".swap") {
			t.Fatalf("leftover %s", n)
		}
	}
}

func mustList(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestReplaceSegmentsCrash loses power before every filesystem operation
// of a swap (and after the last): reopening gives the old segments or the
// new ones, never a mix, never a lost record, and fsck finds nothing.
func TestReplaceSegmentsCrash(t *testing.T) {
	mem := vfs.NewMem()
	var mu sync.Mutex
	recording := false
	var images []*vfs.MemFS
	rng := rand.New(rand.NewPCG(12, 1))
	fsys := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if recording {
			// Exactly what was synced, and with unsynced directory
			// entries and file tails kept at random, as a journal may.
			images = append(images, mem.CrashClone(), mem.CrashCloneWith(vfs.CrashOptions{
				Rand: rng, KeepUnsynced: 0.5, KeepUnsyncedEntries: 0.5,
			}))
		}
		return nil
	}))
	l := swapTestLog(t, fsys, 120)
	run := l.acquireSealed(0, l.EndOffset())
	sub := run.Sub(0, min(3, run.Len()))
	swapEnd := sub.Info(sub.Len() - 1).NextOffset
	mu.Lock()
	recording = true
	mu.Unlock()
	w := rewriteEvens(t, l, sub)
	if err := l.replaceSegments(sub, []*segment.Cleaned{w}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	recording = false
	images = append(images, mem.CrashClone())
	mu.Unlock()
	run.Release()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d crash images", len(images))
	if len(images) < 10 {
		t.Fatalf("only %d operations recorded", len(images))
	}
	sawOld, sawNew := false, false
	for i, img := range images {
		l, err := Open("/log", Options{FS: img, LogConfig: LogConfig{MaxIndexBytes: 4 << 10}})
		if err != nil {
			t.Fatalf("image %d: open: %v", i, err)
		}
		swapped, err := checkSwapState(l, 120, swapEnd)
		if err != nil {
			t.Fatalf("image %d of %d: %v (%s)", i, len(images), err, l.debugSegments())
		}
		sawOld, sawNew = sawOld || !swapped, sawNew || swapped
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		fscktest.CheckClean(t, img, "/log")
	}
	if !sawOld || !sawNew {
		t.Fatalf("crash images gave old %v, new %v: want both", sawOld, sawNew)
	}
}

// TestReplaceSegmentsUnderReaders: an iteration and a slice made before a
// swap finish on the old segments, and an iteration that crosses from an
// old segment to the merged one goes on where it was, skipping nothing
// the new segment holds.
func TestReplaceSegmentsUnderReaders(t *testing.T) {
	fsys := vfs.NewMem()
	l := swapTestLog(t, fsys, 200)
	defer l.Close()
	run := l.acquireSealed(0, l.EndOffset())
	defer run.Release()
	sub := run.Sub(0, 3)
	swapEnd := sub.Info(2).NextOffset
	firstEnd := sub.Info(0).NextOffset

	next, stop := iter.Pull2(l.Records(0))
	defer stop()
	r, err, ok := next()
	if !ok || err != nil || r.Offset != 0 {
		t.Fatalf("first record: %v %v %v", r.Offset, err, ok)
	}
	sl, err := l.Read(firstEnd, 1<<20, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()

	if err := l.replaceSegments(sub, []*segment.Cleaned{rewriteEvens(t, l, sub)}); err != nil {
		t.Fatal(err)
	}
	// The slice still reads the old second segment: every offset there.
	data := make([]byte, sl.Len())
	if _, err := sl.ReadAt(data, 0); err != nil {
		t.Fatal(err)
	}
	count := 0
	for len(data) > 0 {
		b := record.Batch(data)
		count += int(b.NumRecords())
		data = data[b.Size():]
	}
	if want := int(sub.Info(1).NextOffset - firstEnd); count != want {
		t.Fatalf("old slice holds %d records, want %d", count, want)
	}
	// The iteration: all of the old first segment, then the new one's evens.
	want := int64(1)
	for {
		r, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != want {
			t.Fatalf("read offset %d, want %d", r.Offset, want)
		}
		want++
		if want >= firstEnd && want < swapEnd && want%2 == 1 {
			want++
		}
	}
	if want != 200 {
		t.Fatalf("iteration ended at %d", want)
	}
}

// TestReplaceSegmentsAfterTruncation: a truncation into the run between
// its reading and the swap, followed by new appends that seal the same
// segment again, makes the swap refuse; the truncated records stay gone.
func TestReplaceSegmentsAfterTruncation(t *testing.T) {
	fsys := vfs.NewMem()
	l := swapTestLog(t, fsys, 200)
	defer l.Close()
	run := l.acquireSealed(0, l.EndOffset())
	defer run.Release()
	sub := run.Sub(0, 2)
	cut := sub.Info(1).BaseOffset + 2
	w := rewriteEvens(t, l, sub)
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	cut = l.EndOffset() // at a batch boundary
	if _, err := l.Append(recordsAt(cut, 4)...); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.replaceSegments(sub, []*segment.Cleaned{w}); !errors.Is(err, ErrSegmentsChanged) {
		t.Fatalf("swap after a truncation: %v", err)
	}
	n := int64(0)
	for r, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != n {
			t.Fatalf("offset %d, want %d", r.Offset, n)
		}
		n++
	}
	if n != cut+4 {
		t.Fatalf("read %d records, want %d", n, cut+4)
	}
	for _, name := range mustList(t, fsys, "/log") {
		if strings.HasSuffix(name, ".cleaned") || strings.HasSuffix(name, ".swap") {
			t.Fatalf("leftover %s", name)
		}
	}
}

// TestReplaceSegmentsBusy: a second swap at the same base offset while a
// reader still holds the segment the first one replaced (whose .deleted
// files carry the names the second would give its own) is refused with
// ErrSegmentsBusy, changing nothing, and succeeds once the reader is done.
func TestReplaceSegmentsBusy(t *testing.T) {
	fsys := vfs.NewMem()
	l := swapTestLog(t, fsys, 200)
	defer l.Close()
	sl, err := l.Read(0, 100, ReadOptions{}) // holds the first segment
	if err != nil {
		t.Fatal(err)
	}
	run := l.acquireSealed(0, l.EndOffset())
	first := run.Sub(0, 2)
	if err := l.replaceSegments(first, []*segment.Cleaned{rewriteEvens(t, l, first)}); err != nil {
		t.Fatal(err)
	}
	run.Release()
	again := l.acquireSealed(0, l.EndOffset())
	defer again.Release()
	sub := again.Sub(0, 1)
	// The flusher the rolls kicked may be rewriting a checkpoint (its .tmp
	// comes and goes) while this runs, and may still hold the segment the
	// first swap retired (its .deleted files go when it lets go): wait for
	// those to go, then only the other files must not move.
	list := func() []string {
		return slices.DeleteFunc(mustList(t, fsys, "/log"), func(n string) bool { return strings.HasSuffix(n, checkpointTmpSuffix) })
	}
	retiredGone := func() bool {
		return !slices.ContainsFunc(list(), func(n string) bool {
			return strings.HasSuffix(n, segment.DeletedSuffix) && !strings.HasPrefix(n, segment.FileName(0, ""))
		})
	}
	testutil.WaitFor(t, "the first swap's segment is deleted", retiredGone)
	before := list()
	if err := l.replaceSegments(sub, []*segment.Cleaned{rewriteEvens(t, l, sub)}); !errors.Is(err, ErrSegmentsBusy) {
		t.Fatalf("swap while the earlier segment is held: %v", err)
	}
	if after := list(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("refused swap changed the directory: %v, was %v", after, before)
	}
	sl.Close()
	// The flusher may hold the earlier segment a little longer than the
	// reader did.
	testutil.WaitFor(t, "a swap is no longer refused as busy", func() bool {
		err = l.replaceSegments(sub, []*segment.Cleaned{rewriteEvens(t, l, sub)})
		return !errors.Is(err, ErrSegmentsBusy)
	})
	if err != nil {
		t.Fatalf("swap once the reader is done: %v", err)
	}
}
