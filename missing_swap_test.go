package seglog

import (
	"errors"
	"iter"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/sealed"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// rewriteGaps writes one cleaned segment per segment of the run, each
// keeping only its segment's first batch (the last also keeps the run's
// last batch, so the news end where the run does): a stand-in for a
// compaction that leaves gaps between segments, the way a first round
// does. It returns the news and the offsets they keep.
func rewriteGaps(t *testing.T, l *Log, run *sealed.Run) ([]*segment.Cleaned, map[int64]bool) {
	t.Helper()
	kept := map[int64]bool{}
	var news []*segment.Cleaned
	for i := range run.Len() {
		w, err := l.newCleaned(run.Info(i).BaseOffset)
		if err != nil {
			t.Fatal(err)
		}
		var batches []record.Batch
		for b, err := range run.Batches(i) {
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, append(record.Batch(nil), b...))
		}
		keep := batches[:1]
		if i == run.Len()-1 && len(batches) > 1 {
			keep = append(keep, batches[len(batches)-1])
		}
		for _, b := range keep {
			if err := w.Append(b); err != nil {
				t.Fatal(err)
			}
			for off := b.BaseOffset(); off <= b.LastOffset(); off++ {
				kept[off] = true
			}
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		news = append(news, w)
	}
	return news, kept
}

// checkGapsRead reads l whole with Records and with Read: no error, and
// below swapEnd exactly the offsets kept (or, before the swap, all).
func checkGapsRead(t *testing.T, l *Log, kept map[int64]bool, swapEnd int64) {
	t.Helper()
	next := l.StartOffset()
	for r, err := range l.Records(next) {
		if err != nil {
			t.Fatalf("Records: %v (%s)", err, l.debugSegments())
		}
		for off := next; off < r.Offset; off++ {
			if off >= swapEnd || kept[off] {
				t.Fatalf("Records: offset %d skipped", off)
			}
		}
		next = r.Offset + 1
	}
	if next != l.EndOffset() {
		t.Fatalf("Records ended at %d, the log at %d", next, l.EndOffset())
	}
	for off := l.StartOffset(); off < l.EndOffset(); {
		sl, err := l.Read(off, 1<<20, ReadOptions{})
		if err != nil {
			t.Fatalf("Read(%d): %v (%s)", off, err, l.debugSegments())
		}
		off = sl.LastOffset() + 1
		sl.Close()
	}
}

// TestFirstCompactionIsNeverMissingData: the first swap of a log that has
// no cleaner-offset checkpoint records one before its cleaned segments can
// be seen, so their gaps are never taken for missing data: not by a reader
// under way when the swap lands, not by a read-only open of the directory
// (another process), and not after a crash at any point of the swap (the
// cleaner writes its own checkpoint only after the swap returns).
func TestFirstCompactionIsNeverMissingData(t *testing.T) {
	fsys := vfs.NewMem()
	l := swapTestLog(t, fsys, 200)
	defer l.Close()
	if _, ok, err := l.CleanerCheckpoint(); err != nil || ok {
		t.Fatalf("a checkpoint before any compaction: %v, %v", ok, err)
	}
	run := l.acquireSealed(0, l.EndOffset())
	defer run.Release()
	sub := run.Sub(0, 3)
	swapEnd := sub.Info(2).NextOffset

	// A reader under way: it has read offset 0 when the swap lands.
	next, stop := iter.Pull2(l.Records(0))
	defer stop()
	if r, err, ok := next(); !ok || err != nil || r.Offset != 0 {
		t.Fatalf("first record: %d, %v, %v", r.Offset, err, ok)
	}

	news, kept := rewriteGaps(t, l, sub)
	if err := l.replaceSegments(sub, news); err != nil {
		t.Fatal(err)
	}
	if cp, ok, err := l.CleanerCheckpoint(); err != nil || !ok || cp != l.StartOffset() {
		t.Fatalf("cleaner checkpoint after the first swap: %d, %v, %v; want the log start %d", cp, ok, err, l.StartOffset())
	}
	for {
		_, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatalf("the reader under way: %v", err)
		}
	}
	checkGapsRead(t, l, kept, swapEnd)

	view, err := Open("/log", Options{FS: fsys, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	checkGapsRead(t, view, kept, swapEnd)
}

// TestFirstCompactionCrash loses power before every filesystem operation of
// a first swap that leaves gaps: every image opens and reads without a
// MissingDataError, and fsck finds it clean.
func TestFirstCompactionCrash(t *testing.T) {
	mem := vfs.NewMem()
	var mu sync.Mutex
	recording := false
	var images []*vfs.MemFS
	rng := rand.New(rand.NewPCG(26, 4))
	fsys := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if recording {
			images = append(images, mem.CrashClone(), mem.CrashCloneWith(vfs.CrashOptions{
				Rand: rng, KeepUnsynced: 0.5, KeepUnsyncedEntries: 0.5,
			}))
		}
		return nil
	}))
	l := swapTestLog(t, fsys, 160)
	// Reopened after a clean close: the recovery point covers every
	// segment, so no image is recovered from below the swapped ones (open
	// then deletes the segments after a recovered one that ends short).
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := Open("/log", Options{FS: fsys, LogConfig: LogConfig{SegmentBytes: 4 << 10, IndexIntervalBytes: 256, MaxIndexBytes: 4 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	run := l.acquireSealed(0, l.EndOffset())
	sub := run.Sub(0, min(3, run.Len()))
	swapEnd := sub.Info(sub.Len() - 1).NextOffset
	news, kept := rewriteGaps(t, l, sub)
	mu.Lock()
	recording = true
	mu.Unlock()
	if err := l.replaceSegments(sub, news); err != nil {
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
	if len(images) < 10 {
		t.Fatalf("only %d operations recorded", len(images))
	}
	gaps := 0
	for i, img := range images {
		for _, ro := range []bool{true, false} {
			l, err := Open("/log", Options{FS: img, LogConfig: LogConfig{MaxIndexBytes: 4 << 10}, ReadOnly: ro, Logger: discardLogger()})
			if errors.Is(err, ErrReadOnly) && ro {
				continue // an interrupted swap: a view refuses it, a writable open completes it
			}
			if err != nil {
				t.Fatalf("image %d: open (read-only %v): %v", i, ro, err)
			}
			checkGapsRead(t, l, kept, swapEnd)
			if n := countRecords(t, l); n < l.EndOffset() {
				gaps++
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}
		fscktest.CheckClean(t, img, "/log")
	}
	if gaps == 0 {
		t.Fatal("no crash image held the cleaned segments")
	}
}
