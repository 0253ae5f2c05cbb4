package seglog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// checkKafkaLayout checks that every .log in dir is a sequence of whole
// entries and nothing else: no zero tail, as Kafka lays out a segment.
func checkKafkaLayout(t *testing.T, fs vfs.FS, dir, label string) {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, segment.LogSuffix) {
			continue
		}
		if pos, size := entriesEnd(t, fs, dir+"/"+n); pos != size {
			t.Errorf("%s: %s: entries end at byte %d, the file has %d bytes", label, n, pos, size)
		}
	}
}

// entriesEnd walks the length fields of the .log at path and returns
// where the whole entries end, and the file's size.
func entriesEnd(t *testing.T, fs vfs.FS, path string) (pos, size int64) {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err = f.Size()
	if err != nil {
		t.Fatal(err)
	}
	var h [record.LogOverhead]byte
	for pos+record.LogOverhead <= size {
		if _, err := f.ReadAt(h[:], pos); err != nil {
			t.Fatal(err)
		}
		n := int64(binary.BigEndian.Uint32(h[8:]))
		if n == 0 || pos+record.LogOverhead+n > size {
			break
		}
		pos += record.LogOverhead + n
	}
	return pos, size
}

// TestPreallocLayout: with Preallocate the active .log is SegmentBytes
// long while sealed ones end at their last batch; Close trims the active
// one too, and fsck finds the directory clean at every step.
func TestPreallocLayout(t *testing.T) {
	mem := vfs.NewMem()
	w := crashWorkload{sync: SyncNone, prealloc: true}
	l, err := Open("/log", w.options(mem))
	if err != nil {
		t.Fatal(err)
	}
	for l.NumSegments() < 4 {
		if _, err := l.Append(record.Record{Value: crashValue(l.EndOffset(), 300)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Segments() {
		path := "/log/" + segment.FileName(s.BaseOffset, segment.LogSuffix)
		pos, size := entriesEnd(t, mem, path)
		if s.Active {
			if size != w.options(mem).SegmentBytes || pos != l.segs.active.Size() {
				t.Errorf("active %s: %d bytes, entries end at %d (size %d); want %d bytes", path, size, pos, l.segs.active.Size(), w.options(mem).SegmentBytes)
			}
			continue
		}
		if pos != size {
			t.Errorf("sealed %s: entries end at %d of %d bytes", path, pos, size)
		}
	}
	// fsck beside the live writer: the zero tail is the end of the data.
	// The background flusher may still be writing the recovery-point
	// checkpoint for the last roll (a .tmp file, which fsck rightly
	// reports); ckptMu, held across that write and its rename, keeps it
	// out of the check.
	l.ckptMu.Lock()
	fscktest.CheckClean(t, mem, "/log")
	l.ckptMu.Unlock()
	end := l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkKafkaLayout(t, mem, "/log", "after Close")
	fscktest.CheckClean(t, mem, "/log")
	// A power loss after the clean close keeps the layout: the trim was
	// synced before the clean-shutdown marker was written.
	verifyCrashStateWith(t, mem.CrashClone(), end, "power loss after Close", crashWorkload{})
}

// TestPreallocZeroTailAfterCrash: a power loss leaves the active segment
// at its preallocated size with a zero tail after the synced batches.
// fsck reports nothing about it, and the log reopens with and without the
// option, losing nothing synced and trimming the tail.
func TestPreallocZeroTailAfterCrash(t *testing.T) {
	for _, reopen := range []bool{false, true} {
		mem := vfs.NewMem()
		w := crashWorkload{sync: SyncNone, prealloc: true}
		l, err := Open("/log", w.options(mem))
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if _, err := l.Append(record.Record{Value: crashValue(l.EndOffset(), 100)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		acked := l.EndOffset()
		crashed := mem.CrashClone()
		l.Close()
		last := crashed.CrashClone() // the .log as the crash left it
		var logPath string
		names, _ := last.List("/log")
		for _, n := range names {
			if strings.HasSuffix(n, segment.LogSuffix) {
				logPath = "/log/" + n
			}
		}
		if pos, size := entriesEnd(t, last, logPath); size != 4096 || pos == size {
			t.Fatalf("the crash left %s with %d bytes, entries ending at %d: no zero tail to test", logPath, size, pos)
		}
		r, err := fsck.Check(last, "/log", fsck.Options{Deep: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range r.Problems {
			if strings.HasSuffix(p.File, segment.LogSuffix) {
				t.Errorf("fsck reports the zero tail: %s", p)
			}
		}
		// Recovery ends the file at the zero tail without calling it a
		// torn or damaged tail.
		var logged strings.Builder
		o := crashWorkload{prealloc: reopen}.options(crashed.CrashClone())
		o.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
		rl, err := Open("/log", o)
		if err != nil {
			t.Fatal(err)
		}
		if rl.EndOffset() != acked {
			t.Errorf("reopened at end %d, want %d", rl.EndOffset(), acked)
		}
		rl.Close()
		if logged.Len() > 0 {
			t.Errorf("recovery of a zero tail warned:\n%s", logged.String())
		}
		verifyCrashStateWith(t, crashed, acked, fmt.Sprintf("zero tail, reopen preallocated=%v", reopen), crashWorkload{prealloc: reopen})
	}
}

// TestPreallocCrashAroundTrim: power losses at each of the operations
// around every trim of a preallocated .log (a seal's, on roll, and
// Close's), with torn writes inside the zero region: between the trim and
// the sync or the close, recovery finds the untrimmed file and ends it at
// the zero tail, losing nothing acknowledged.
func TestPreallocCrashAroundTrim(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncNone} {
		w := crashWorkload{appends: 60, sync: mode, seed: 3, prealloc: true}
		trims := 0
		counter := vfs.InjectorFunc(func(op vfs.Op) error {
			if op.Kind == vfs.OpTruncate && strings.HasSuffix(op.Path, segment.LogSuffix) {
				trims++
			}
			return nil
		})
		w.run(vfs.Inject(vfs.NewMem(), counter), func(int64) {})
		if trims < 3 {
			t.Fatalf("%v: only %d trims", mode, trims)
		}
		r := rand.New(rand.NewPCG(5, uint64(mode)))
		for m := 1; m <= trims; m++ {
			for d := int64(0); d < 4; d++ {
				seen := 0
				at := int64(-1)
				o := vfs.CrashOptions{Rand: rand.New(rand.NewPCG(r.Uint64(), 1)), KeepUnsynced: 0.5, KeepUnsyncedStores: 0.7}
				crashed, acked := crashWhen(w, vfs.NewMem(), o, func(n int64, op vfs.Op) bool {
					if op.Kind == vfs.OpTruncate && strings.HasSuffix(op.Path, segment.LogSuffix) {
						if seen++; seen == m {
							at = n + d
						}
					}
					return n == at
				})
				if crashed == nil {
					continue
				}
				label := fmt.Sprintf("%v: crash %d ops after trim %d/%d", mode, d, m, trims)
				verifyCrashStateWith(t, crashed, acked, label, crashWorkload{prealloc: d%2 == 0})
			}
		}
	}
}

// TestPreallocFullDisk: a full disk while a new segment is preallocated
// fails the append that needed the roll with the error (ENOSPC), leaves
// the log usable and loses nothing acknowledged; once there is space the
// roll goes through. A full disk at the lazy preallocation of a reopened
// log's active segment is the same.
func TestPreallocFullDisk(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncNone} {
		mem := vfs.NewMem()
		var full atomic.Bool
		inj := vfs.InjectorFunc(func(op vfs.Op) error {
			if full.Load() && op.Kind == vfs.OpPreallocate && strings.HasSuffix(op.Path, segment.LogSuffix) {
				return syscall.ENOSPC
			}
			return nil
		})
		fs := vfs.Inject(mem, inj)
		w := crashWorkload{sync: mode, prealloc: true}
		l, err := Open("/log", w.options(fs))
		if err != nil {
			t.Fatal(err)
		}
		appendOne := func() error {
			_, err := l.Append(record.Record{Value: crashValue(l.EndOffset(), 300)})
			return err
		}
		full.Store(true)
		var failed error
		for i := 0; i < 100 && failed == nil; i++ {
			failed = appendOne()
		}
		if !errors.Is(failed, syscall.ENOSPC) || !errors.Is(failed, segment.ErrPreallocate) {
			t.Fatalf("%v: append needing a roll on a full disk: %v, want ENOSPC", mode, failed)
		}
		if err := l.Sync(); err != nil {
			t.Fatalf("%v: Sync after the failed roll: %v", mode, err)
		}
		acked := l.EndOffset()
		if err := appendOne(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%v: append while still full: %v", mode, err)
		}
		full.Store(false)
		if err := appendOne(); err != nil {
			t.Fatalf("%v: append once there is space: %v", mode, err)
		}
		if l.EndOffset() != acked+1 {
			t.Fatalf("%v: end %d after one more append, want %d", mode, l.EndOffset(), acked+1)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		acked = l.EndOffset()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		fscktest.CheckClean(t, mem, "/log")

		// Reopened on a full disk: the active segment's lazy
		// preallocation fails the first append, and only it.
		full.Store(true)
		l, err = Open("/log", w.options(fs))
		if err != nil {
			t.Fatal(err)
		}
		if err := appendOne(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%v: first append after reopening on a full disk: %v", mode, err)
		}
		full.Store(false)
		if err := appendOne(); err != nil {
			t.Fatalf("%v: append once there is space: %v", mode, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		verifyCrashStateWith(t, mem, acked, fmt.Sprintf("%v: full disk", mode), crashWorkload{prealloc: true})
	}
}

// TestPreallocErrorInjection is TestErrorInjection with preallocation: any
// failed operation, the .log's fallocate included, surfaces or is
// tolerated, and the log reopens with every acknowledged record.
func TestPreallocErrorInjection(t *testing.T) {
	w := crashWorkload{appends: 30, sync: SyncAlways, seed: 6, prealloc: true}
	counter := &vfs.Counter{}
	w.run(vfs.Inject(vfs.NewMem(), counter), func(int64) {})
	total := counter.Count()
	for i := int64(1); i <= total; i++ {
		mem := vfs.NewMem()
		inj := vfs.OnIndex(i, nil)
		var acked int64
		surfaced := false
		runInjected(t, w, vfs.Inject(mem, inj), &acked, &surfaced)
		op, fired := inj.Fired()
		if !fired {
			continue
		}
		if !surfaced && !tolerated(op) {
			t.Errorf("op %d (%v %s): injected error was swallowed", i, op.Kind, op.Path)
		}
		label := fmt.Sprintf("after failing op %d (%v %s)", i, op.Kind, op.Path)
		verifyCrashStateWith(t, mem.CrashClone(), acked, label+" and a power loss", crashWorkload{prealloc: i%2 == 0})
	}
}

// TestPreallocRecoveryPointWaitsForTrim: without SyncAlways the recovery
// point stays inside the preallocated active segment, and does not pass a
// segment whose trim (at its roll) no sync has covered yet. Otherwise a
// power loss would leave that segment below the point, trusted, at its
// preallocated size (TestPreallocCrashAroundTrim found it under -race).
func TestPreallocRecoveryPointWaitsForTrim(t *testing.T) {
	mem := vfs.NewMem()
	l, err := Open("/log", crashWorkload{sync: SyncNone, prealloc: true}.options(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendOne := func() { appendCrashRecord(t, l) }
	for range 3 {
		appendOne()
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if rp, end := l.RecoveryPoint(), l.EndOffset(); rp != end-1 {
		t.Fatalf("recovery point %d after Sync, want %d: inside the preallocated active segment", rp, end-1)
	}
	// Hold the background flusher off while the roll trims the segment.
	l.flushMu.lockUnchecked()
	old := l.segs.active
	for l.NumSegments() < 2 {
		appendOne()
	}
	// Both read while the flusher is held off: once it runs it may sync
	// the segment and move the point past it, rightly.
	pending := old.SyncPending()
	rp := l.RecoveryPoint()
	l.flushMu.unlockUnchecked()
	if !pending {
		t.Fatal("the roll's trim of the preallocated segment is not pending a sync")
	}
	if rp >= old.NextOffset() {
		t.Fatalf("recovery point %d passed the segment ending at %d before its trim was synced", rp, old.NextOffset())
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if old.SyncPending() || old.TrimPending() {
		t.Fatal("Sync left the sealed segment's trim unsynced")
	}
	if rp := l.RecoveryPoint(); rp < old.NextOffset() {
		t.Fatalf("recovery point %d did not pass the synced segment ending at %d", rp, old.NextOffset())
	}
	acked := l.EndOffset()
	verifyCrashStateWith(t, mem.CrashClone(), acked, "power loss after the trim was synced", crashWorkload{})
}
