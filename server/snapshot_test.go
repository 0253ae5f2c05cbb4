package server

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

func TestSnapshotRoundTrip(t *testing.T) {
	pp := &partProducers{m: make(map[int64]*producerEntry)}
	pp.record(7, 2, 10, 14, 100, 104, 1_700_000_000_001)
	pp.record(7, 2, 15, 15, 105, 105, 1_700_000_000_002)
	pp.record(9, 0, 1<<31-2, 1, 200, 203, 1_700_000_000_003) // sequences wrap past int32 max
	b := encodeSnapshot(pp)
	if len(b) != snapshotHeader+2*snapshotEntrySize {
		t.Fatalf("%d bytes", len(b))
	}
	m, err := decodeSnapshot("x", b)
	if err != nil {
		t.Fatal(err)
	}
	// The last batch's timestamp, not a clock's: replicas write the
	// same snapshot.
	if e := m[7]; e.epoch != 2 || len(e.batches) != 1 || e.batches[0] != (batchMeta{15, 15, 105, 105}) || e.lastTS != 1_700_000_000_002 {
		t.Fatalf("producer 7: %+v", e)
	}
	if e := m[9]; e.batches[0] != (batchMeta{1<<31 - 2, 1, 200, 203}) {
		t.Fatalf("producer 9: %+v", e)
	}
	for i := range b {
		d := append([]byte(nil), b...)
		d[i] ^= 0x40
		if _, err := decodeSnapshot("x", d); err == nil {
			t.Fatalf("byte %d flipped: accepted", i)
		}
	}
	if _, err := decodeSnapshot("x", b[:len(b)-1]); err == nil {
		t.Fatal("truncated snapshot accepted")
	}
}

// TestSnapshotKeepsOlderProducers: a producer whose last batch lies more
// than two segments back is known after a clean restart through the
// snapshot written at shutdown (a retry of its batch is a duplicate, a gap
// is refused), and a snapshot fsck accepts; without the snapshot it would
// be unknown.
func TestSnapshotKeepsOlderProducers(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, Options{})
	if err := ts.st.CreateTopic("s", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	old := makeBatch(t, record.None, 100, 0, 0, 3, "old")
	if rp := produceOne(t, c, 9, "s", append([]byte(nil), old...)); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("first: %d at %d", rp.ErrorCode, rp.BaseOffset)
	}
	l := ownedLog(t, ts.st, "s", 0)
	for i := range 3 {
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		if rp := produceOne(t, c, 9, "s", makeBatch(t, record.None, 200, 0, int32(i), 1, fmt.Sprint(i))); rp.ErrorCode != 0 {
			t.Fatal(rp.ErrorCode)
		}
	}
	ts.stop()
	part := filepath.Join(dir, "s-0")
	snap := filepath.Join(part, layout.FileName(6, layout.SnapshotSuffix))
	if _, err := vfs.Default.Stat(snap); err != nil {
		t.Fatalf("no snapshot at the log end: %v", err)
	}
	rep, err := fsck.Check(vfs.Default, part, fsck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if p.Kind == fsck.KindSnapshot {
			t.Fatalf("fsck: %+v", p)
		}
	}

	ts = startServer(t, dir, Options{})
	c = dialRaw(t, ts.addr)
	if rp := produceOne(t, c, 9, "s", append([]byte(nil), old...)); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("retry of the old batch: error %d offset %d, want the original offset 0", rp.ErrorCode, rp.BaseOffset)
	}
	if rp := produceOne(t, c, 9, "s", makeBatch(t, record.None, 100, 0, 9, 1, "gap")); rp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: error %d", rp.ErrorCode)
	}
	v, _ := ts.st.Log("s", 0)
	if v.EndOffset() != 6 {
		t.Fatalf("log end %d, want 6", v.EndOffset())
	}

	// Without the snapshot (or with a damaged one) the state is read
	// from the whole log, as Kafka rebuilds it without a snapshot: the
	// producer is still known, its old batch a duplicate, a gap refused.
	ts.stop()
	if err := vfs.WriteFileAtomic(vfs.Default, filepath.Join(part, layout.FileName(6, layout.SnapshotSuffix)), []byte("damaged")); err != nil {
		t.Fatal(err)
	}
	ts = startServer(t, dir, Options{})
	c = dialRaw(t, ts.addr)
	if rp := produceOne(t, c, 9, "s", append([]byte(nil), old...)); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("retry of the old batch without the snapshot: error %d offset %d, want the original offset 0", rp.ErrorCode, rp.BaseOffset)
	}
	if rp := produceOne(t, c, 9, "s", makeBatch(t, record.None, 100, 0, 9, 1, "gap")); rp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap without the snapshot: error %d offset %d", rp.ErrorCode, rp.BaseOffset)
	}
	// A producer the log no longer holds at all is unknown, and its
	// batch is taken at any sequence (KIP-360).
	if rp := produceOne(t, c, 9, "s", makeBatch(t, record.None, 300, 0, 9, 1, "new")); rp.ErrorCode != 0 || rp.BaseOffset != 6 {
		t.Fatalf("unknown producer: error %d offset %d", rp.ErrorCode, rp.BaseOffset)
	}
}

// TestSnapshotAtRoll: a roll under idempotent produces writes a snapshot,
// so after a crash (no shutdown snapshot) a producer whose batch lies
// more than two segments back is still known.
func TestSnapshotAtRoll(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, Options{})
	cfg := store.DefaultTopicConfig()
	if err := cfg.SetAll([]string{"max.message.bytes=900", "segment.bytes=1000"}); err != nil {
		t.Fatal(err)
	}
	if err := ts.st.CreateTopic("r", 1, cfg); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	old := makeBatch(t, record.None, 100, 0, 0, 3, "old")
	if rp := produceOne(t, c, 9, "r", append([]byte(nil), old...)); rp.ErrorCode != 0 {
		t.Fatal(rp.ErrorCode)
	}
	for i := range 20 {
		if rp := produceOne(t, c, 9, "r", makeBatch(t, record.None, 200, 0, int32(3*i), 3, "filler-filler-filler")); rp.ErrorCode != 0 {
			t.Fatal(rp.ErrorCode)
		}
	}
	l, _ := ts.st.Log("r", 0)
	if n := l.NumSegments(); n < 4 {
		t.Fatalf("%d segments: the test needs rolls", n)
	}
	offs, err := snapshots(vfs.Default, l.Dir())
	if err != nil || len(offs) != 1 || offs[0] < l.Segments()[l.NumSegments()-1].BaseOffset {
		t.Fatalf("snapshots %v (%v), want one in the active segment", offs, err)
	}
	// A crash: the store goes first, so shutdown can write no snapshot.
	if err := ts.st.Close(); err != nil {
		t.Fatal(err)
	}
	ts.srv.Close()
	<-ts.done
	ts.srv = nil

	ts = startServer(t, dir, Options{})
	c = dialRaw(t, ts.addr)
	if rp := produceOne(t, c, 9, "r", append([]byte(nil), old...)); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("retry of the old batch after a crash: error %d offset %d, want the original offset 0", rp.ErrorCode, rp.BaseOffset)
	}
}
