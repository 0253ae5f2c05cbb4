package seglog

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// TestRollLeavesFileWorkToFlusher: outside SyncAlways a roll truncates and
// syncs nothing (on ext4 either waits for the journal behind the previous
// segment's flush, stalling the appender for up to 0.7 s); the flusher
// does it before the recovery point passes the sealed segment, and a power
// loss on either side of that loses nothing that was synced.
func TestRollLeavesFileWorkToFlusher(t *testing.T) {
	mem := vfs.NewMem()
	var (
		mu        sync.Mutex
		recording bool
		ops       []vfs.Op
		l         *Log // read by the injector only once rolled is set
		rolled    bool
		// held records, for each sync of the sealed segment's .log,
		// whether the log held the active segment's reservations then.
		held []bool
	)
	fsys := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if recording {
			ops = append(ops, op)
		}
		if op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, segment.FileName(0, segment.LogSuffix)) && rolled {
			held = append(held, l.syncingSealed())
		}
		return nil
	}))
	w := crashWorkload{sync: SyncNone}
	var err error
	if l, err = Open("/log", w.options(fsys)); err != nil {
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
	synced := l.EndOffset()
	appendOne() // the point stays below the end: the roll may defer
	// Hold the flusher off while the roll happens.
	l.flushMu.lockUnchecked()
	old := l.segs.active
	mu.Lock()
	recording = true
	mu.Unlock()
	for l.NumSegments() < 2 {
		appendOne()
	}
	mu.Lock()
	recording = false
	rolled = true
	rolledOps := ops
	ops = nil
	mu.Unlock()
	pending := old.SyncPending()
	rp := l.RecoveryPoint()
	crashed := mem.CrashClone()
	l.flushMu.unlockUnchecked()

	oldFiles := map[string]bool{}
	for _, suffix := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		oldFiles[filepath.Join("/log", segment.FileName(old.BaseOffset(), suffix))] = true
	}
	for _, op := range rolledOps {
		switch {
		case op.Kind == vfs.OpSync || op.Kind == vfs.OpSyncDir || op.Kind == vfs.OpFlush:
			t.Errorf("the roll did %v on %s", op.Kind, op.Path)
		case op.Kind == vfs.OpTruncate && oldFiles[op.Path]:
			t.Errorf("the roll truncated %s", op.Path)
		}
	}
	if !pending {
		t.Error("the sealed segment's file work is not pending")
	}
	if rp >= old.NextOffset() {
		t.Errorf("recovery point %d passed the segment ending at %d before its flush", rp, old.NextOffset())
	}
	verifyCrashStateWith(t, crashed, synced, "power loss after the roll, before its flush", w)

	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if old.SyncPending() {
		t.Fatal("Sync left the sealed segment's file work pending")
	}
	mu.Lock()
	h := held
	mu.Unlock()
	if len(h) == 0 || slices.Contains(h, false) {
		t.Fatalf("the active segment's reservations held during the sealed segment's syncs: %v, want all true", h)
	}
	if rp := l.RecoveryPoint(); rp < old.NextOffset() {
		t.Fatalf("recovery point %d did not pass the flushed segment ending at %d", rp, old.NextOffset())
	}
	verifyCrashStateWith(t, mem.CrashClone(), l.EndOffset(), "power loss after the flush", w)
}

// TestRollSealsAtOnceBelowTheRecoveryPoint: when a flush already took the
// recovery point to the end of the log, the roll's old segment is trusted
// whole by the next open, so the roll trims and syncs it itself.
func TestRollSealsAtOnceBelowTheRecoveryPoint(t *testing.T) {
	mem := vfs.NewMem()
	w := crashWorkload{sync: SyncNone}
	l, err := Open("/log", w.options(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Fill the segment until the next batch (all are the same size) rolls.
	var last int64
	for last == 0 || l.segs.active.Size()+last <= 4096 {
		info, err := l.Append(record.Record{Value: crashValue(l.EndOffset(), 300)})
		if err != nil {
			t.Fatal(err)
		}
		last = int64(info.Bytes)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	old := l.segs.active
	if l.RecoveryPoint() != l.EndOffset() {
		t.Fatalf("recovery point %d after Sync, end %d", l.RecoveryPoint(), l.EndOffset())
	}
	l.flushMu.lockUnchecked()
	if _, err := l.Append(record.Record{Value: crashValue(l.EndOffset(), 300)}); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 2 {
		t.Fatalf("%d segments after the append that should roll", l.NumSegments())
	}
	pending := old.SyncPending()
	crashed := mem.CrashClone()
	l.flushMu.unlockUnchecked()
	if pending {
		t.Error("the roll left the work on a segment below the recovery point to the flusher")
	}
	verifyCrashStateWith(t, crashed, old.NextOffset(), "power loss after a roll at the recovery point", w)
}

// appendCrashRecord appends one record holding crashValue at the log's end.
func appendCrashRecord(t *testing.T, l *Log) {
	t.Helper()
	if _, err := l.Append(record.Record{Value: crashValue(l.EndOffset(), 300)}); err != nil {
		t.Fatal(err)
	}
}
