package segment

import (
	"bytes"
	"errors"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// checkViewIndexes compares the segment's in-memory offset index with the
// entries Kafka writes for the model.
func checkViewIndexes(t *testing.T, s *Segment, m *model, interval int64) {
	t.Helper()
	want, _ := kafkaIndexes(m, interval)
	if got := s.offIdx.Entries(); got != len(want) {
		t.Fatalf("offset index has %d entries, want %d", got, len(want))
	}
	for i, w := range want {
		if e := s.offIdx.Entry(i); e.Offset != w.off || e.Position != w.pos {
			t.Fatalf("offset index entry %d = %+v, want %+v", i, e, w)
		}
	}
}

// TestRebuildViewAndExtend: a view of a segment with a torn tail publishes
// the valid batches only, changes no byte of the .log, indexes as Kafka
// does, picks up batches completed and appended later, and notices the file
// shrinking or being rewritten under it.
func TestRebuildViewAndExtend(t *testing.T) {
	const interval = 200
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/seg"); err != nil {
		t.Fatal(err)
	}
	e := env{"mem", fsys, "/seg"}
	w := mustCreate(t, e, 100, Options{IndexIntervalBytes: interval})
	m := &model{base: 100}
	g := newGen(7, 100, 300)
	appendN(t, w, m, g, 30)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	logPath := e.path(100, LogSuffix)
	next := g.batch(t)
	next.pos = m.size()
	writeFile(t, fsys, logPath, append(readFile(t, fsys, logPath), next.bytes[:len(next.bytes)/2]...))
	before := readFile(t, fsys, logPath)

	s, err := Open(fsys, "/seg", 100, false, Options{IndexIntervalBytes: interval, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The torn entry holds offsets at and above Synced: not synced data.
	res, err := s.RebuildView(RecoverOptions{Synced: m.next()}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.Reason, ErrTornTail) || res.ValidBytes != m.size() || res.NextOffset != m.next() ||
		res.IgnoredBytes != int64(len(next.bytes)/2) || res.Batches != 30 {
		t.Fatalf("RebuildView = %+v, want %d valid bytes, next %d, a torn tail of %d", res, m.size(), m.next(), len(next.bytes)/2)
	}
	if s.Size() != m.size() || s.NextOffset() != m.next() || s.MaxTimestamp() != m.maxTS() {
		t.Fatalf("published size %d next %d maxTS %d, want %d %d %d", s.Size(), s.NextOffset(), s.MaxTimestamp(), m.size(), m.next(), m.maxTS())
	}
	if !bytes.Equal(readFile(t, fsys, logPath), before) {
		t.Fatal("RebuildView changed the .log")
	}
	checkViewIndexes(t, s, m, interval)

	// The writer finishes the torn batch and appends another.
	more := g.batch(t)
	more.pos = next.pos + next.size
	writeFile(t, fsys, logPath, append(append(readFile(t, fsys, logPath)[:next.pos], next.bytes...), more.bytes...))
	m.batches = append(m.batches, next, more)
	res, err = s.ExtendView(0)
	if err != nil || res.Reason != nil || res.Batches != 2 || res.ValidBytes != m.size() || res.NextOffset != m.next() {
		t.Fatalf("ExtendView = %+v, %v; want 2 batches up to byte %d, next %d", res, err, m.size(), m.next())
	}
	checkViewIndexes(t, s, m, interval)
	for _, b := range m.batches {
		bp, ok, err := s.FindPosition(b.last)
		if err != nil || !ok || bp.Position != b.pos {
			t.Fatalf("FindPosition(%d) = %+v %v %v, want byte %d", b.last, bp, ok, err, b.pos)
		}
	}

	// The last batch rewritten in place (a truncation and a new append).
	changed := append([]byte(nil), readFile(t, fsys, logPath)...)
	changed[more.pos+20] ^= 1
	writeFile(t, fsys, logPath, changed)
	if _, err := s.ExtendView(0); !errors.Is(err, ErrChanged) {
		t.Fatalf("ExtendView after a rewrite = %v, want ErrChanged", err)
	}
	// Shorter than what was published.
	writeFile(t, fsys, logPath, before[:next.pos-1])
	if _, err := s.ExtendView(0); !errors.Is(err, ErrChanged) {
		t.Fatalf("ExtendView after a truncation = %v, want ErrChanged", err)
	}
}

// TestRebuildViewNeedsReadOnly: RebuildView rebuilds indexes through the
// segment's FS, so it refuses a segment not opened read-only, whose FS may
// be the real directory.
func TestRebuildViewNeedsReadOnly(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/seg"); err != nil {
		t.Fatal(err)
	}
	w := mustCreate(t, env{"mem", fsys, "/seg"}, 0, Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(fsys, "/seg", 0, false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.RebuildView(RecoverOptions{}, false); err == nil {
		t.Fatal("RebuildView of a segment opened for writing succeeded")
	}
}

// TestRebuildViewSyncedDamage: a torn or damaged entry below the recovery
// point is corruption for a view as for recovery: a *record.CorruptionError
// naming the file and position, and nothing published.
func TestRebuildViewSyncedDamage(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/seg"); err != nil {
		t.Fatal(err)
	}
	e := env{"mem", fsys, "/seg"}
	w := mustCreate(t, e, 0, Options{})
	m := &model{}
	appendN(t, w, m, newGen(3, 0, 200), 10)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := readFile(t, fsys, e.path(0, LogSuffix))
	damaged := m.batches[6]
	b[damaged.pos+30] ^= 0x40
	writeFile(t, fsys, e.path(0, LogSuffix), b)
	s, err := Open(fsys, "/seg", 0, false, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.RebuildView(RecoverOptions{Synced: m.next()}, true)
	var ce *record.CorruptionError
	if !errors.As(err, &ce) || ce.File != e.path(0, LogSuffix) || ce.Pos < damaged.pos || ce.Pos >= damaged.pos+damaged.size {
		t.Fatalf("RebuildView = %v, want a *record.CorruptionError in the batch at byte %d", err, damaged.pos)
	}
	if !bytes.Equal(readFile(t, fsys, e.path(0, LogSuffix)), b) {
		t.Fatal("RebuildView changed the .log")
	}
	// Above the recovery point the same damage only ends the view.
	kept := m.batches[5].last + 1
	res, err := s.RebuildView(RecoverOptions{Synced: kept}, false)
	if err != nil || res.ValidBytes != damaged.pos || s.NextOffset() != kept {
		t.Fatalf("RebuildView above the recovery point = %+v, %v; want the view to end at byte %d", res, err, damaged.pos)
	}
}
