package segment

import (
	"testing"

	"github.com/seglog/seglog/vfs"
)

// TestSealDeferredLeavesFilesToFlush: SealDeferred truncates and syncs
// nothing (a roll's appender must not wait for the journal), the segment
// reads as sealed meanwhile, and the next Flush leaves exactly the files a
// Seal would have, trimmed and durable.
func TestSealDeferredLeavesFilesToFlush(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		rec := &opRecorder{}
		fsys := vfs.Inject(e.fs, rec)
		opts := Options{IndexIntervalBytes: 200, MaxIndexBytes: smallIdx, ReserveBytes: 64 << 10}
		const base = 70
		ref := buildSealed(t, e, base, opts, 9, 25) // what Seal leaves
		for _, suffix := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			if err := e.fs.Remove(e.path(base, suffix)); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Create(fsys, e.dir, base, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := e.fs.SyncDir(e.dir); err != nil { // as a log does after Create
			t.Fatal(err)
		}
		for _, b := range ref.m.batches {
			if err := s.Append(b.bytes); err != nil {
				t.Fatal(err)
			}
		}
		from := rec.count()
		if err := s.SealDeferred(); err != nil {
			t.Fatal(err)
		}
		for _, op := range rec.since(from, vfs.OpTruncate, vfs.OpSync, vfs.OpSyncDir, vfs.OpFlush, vfs.OpReserve, vfs.OpPreallocate) {
			t.Errorf("SealDeferred did %v on %s", op.Kind, op.Path)
		}
		if !s.IsSealed() || !s.SyncPending() {
			t.Fatalf("after SealDeferred: sealed %v, sync pending %v", s.IsSealed(), s.SyncPending())
		}
		if got := len(readFile(t, e.fs, e.path(base, IndexSuffix))); got != smallIdx {
			t.Fatalf("the index was trimmed to %d bytes before the Flush", got)
		}
		checkState(t, s, ref.m)
		checkFind(t, s, ref.m)

		from = rec.count()
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		synced := map[string]bool{}
		for _, op := range rec.since(from, vfs.OpSync) {
			synced[op.Path] = true
		}
		for _, suffix := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			if !synced[e.path(base, suffix)] {
				t.Errorf("Flush did not sync %s", e.path(base, suffix))
			}
		}
		if s.SyncPending() {
			t.Fatal("Flush left the deferred seal pending")
		}
		if idx, ts := readFile(t, e.fs, e.path(base, IndexSuffix)), readFile(t, e.fs, e.path(base, TimeIndexSuffix)); string(idx) != string(ref.idx) || string(ts) != string(ref.t) {
			t.Fatalf("indexes after the deferred seal's Flush:\n%v\n%v\nwant, as Seal leaves them,\n%v\n%v",
				decodeOffsetIndex(t, idx, base), decodeTimeIndex(t, ts, base),
				decodeOffsetIndex(t, ref.idx, base), decodeTimeIndex(t, ref.t, base))
		}
		checkFind(t, s, ref.m)
		if m, ok := e.fs.(*vfs.MemFS); ok {
			// Durable: a power loss now keeps the trimmed indexes.
			c := m.CrashClone()
			if idx := readFile(t, c, e.path(base, IndexSuffix)); string(idx) != string(ref.idx) {
				t.Fatalf("after a power loss the index holds %d bytes, want the %d Flush synced", len(idx), len(ref.idx))
			}
		}
	})
}

// TestSealDeferredThenUnseal: a truncation into a segment whose deferred
// seal is not finished makes it active again with its files as they were,
// and appends then build the same indexes as on a segment never sealed.
func TestSealDeferredThenUnseal(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 200, MaxIndexBytes: smallIdx}
		const base = 5
		ref := buildSealed(t, e, base, opts, 4, 20)
		for _, suffix := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			if err := e.fs.Remove(e.path(base, suffix)); err != nil {
				t.Fatal(err)
			}
		}
		s := mustCreate(t, e, base, opts)
		defer s.Close()
		half := len(ref.m.batches) / 2
		for _, b := range ref.m.batches {
			if err := s.Append(b.bytes); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SealDeferred(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TruncateTo(ref.m.batches[half].base); err != nil {
			t.Fatal(err)
		}
		if s.IsSealed() || s.SyncPending() {
			t.Fatalf("after the truncation: sealed %v, sync pending %v", s.IsSealed(), s.SyncPending())
		}
		checkState(t, s, ref.m.prefix(half))
		for _, b := range ref.m.batches[half:] {
			if err := s.Append(b.bytes); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SealDeferred(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Close finishes the seal as Flush would.
		if idx, ts := readFile(t, e.fs, e.path(base, IndexSuffix)), readFile(t, e.fs, e.path(base, TimeIndexSuffix)); string(idx) != string(ref.idx) || string(ts) != string(ref.t) {
			t.Fatalf("indexes after truncation, re-append and Close:\n%v\n%v\nwant\n%v\n%v",
				decodeOffsetIndex(t, idx, base), decodeTimeIndex(t, ts, base),
				decodeOffsetIndex(t, ref.idx, base), decodeTimeIndex(t, ref.t, base))
		}
	})
}

// TestSealDeferredRemovedBeforeFlush: retention may remove a rolled
// segment (renaming its files to .deleted) before the flusher gets to it;
// the flush that then finishes the seal must not fail the log.
func TestSealDeferredRemovedBeforeFlush(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 200, MaxIndexBytes: smallIdx, ReserveBytes: 64 << 10}
		s := mustCreate(t, e, 0, opts)
		appendN(t, s, &model{}, newGen(3, 0, 150), 20)
		if err := s.SealDeferred(); err != nil {
			t.Fatal(err)
		}
		if !s.Acquire() { // the flusher's reference
			t.Fatal("cannot acquire the segment")
		}
		if err := s.Remove(); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatalf("Flush of a removed segment with its seal pending: %v", err)
		}
		if s.SyncPending() {
			t.Fatal("the flush left work pending")
		}
		s.Release()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestHoldReserve: while HoldReserve says true, appends past the
// reservation reserve nothing (the log holds them while it syncs a sealed
// segment, whose fdatasync a fallocate would wait behind); afterwards the
// next append reserves again.
func TestHoldReserve(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/seg"); err != nil {
		t.Fatal(err)
	}
	rec := &opRecorder{}
	var hold bool
	opts := Options{IndexIntervalBytes: 200, MaxIndexBytes: smallIdx, ReserveBytes: 4096,
		HoldReserve: func() bool { return hold }}
	s, err := Create(vfs.Inject(mem, rec), "/seg", 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, g := &model{}, newGen(5, 0, 150)
	reserves := func(n int) int {
		from := rec.count()
		appendN(t, s, m, g, n)
		return len(rec.since(from, vfs.OpReserve))
	}
	if n := reserves(40); n == 0 {
		t.Fatal("no reservation without a hold")
	}
	hold = true
	if n := reserves(40); n != 0 {
		t.Fatalf("%d reservations during a hold", n)
	}
	hold = false
	if n := reserves(1); n != 1 {
		t.Fatalf("%d reservations by the first append after the hold, want 1", n)
	}
	checkState(t, s, m)
}
