package server

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// createSmallSegments creates a one-partition topic whose segments roll
// every few batches.
func createSmallSegments(t *testing.T, st *store.Store, name string) {
	t.Helper()
	cfg := store.DefaultTopicConfig()
	cfg.SegmentBytes, cfg.MaxMessageBytes = 4<<10, 2<<10
	if err := st.CreateTopic(name, 1, cfg); err != nil {
		t.Fatal(err)
	}
}

// snapshotFiles lists a partition directory's producer snapshots.
func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	offs, err := snapshots(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, off := range offs {
		names = append(names, filepath.Join(dir, layout.FileName(off, layout.SnapshotSuffix)))
	}
	return names
}

// TestClusterIdempotenceOldBatches: a node restarted on its directory
// knows every producer its log holds, however far back the producer's
// last batches lie, from the snapshot written at each roll on every
// replica, or, without one, from the whole log. A late retry of a
// producer's last batch, many segments later, is a duplicate (found by
// TestNemesisCluster: batches stored twice, 30,000 offsets apart, after a
// node's SIGSTOP, when a new leader read only the last two segments).
func TestClusterIdempotenceOldBatches(t *testing.T) {
	dir := t.TempDir()
	ts, _ := startClusterIn(t, dir, Options{})
	createSmallSegments(t, ts.st, "old")
	c := dialRaw(t, ts.addr)
	pid := initProducer(t, c)
	last := makeBatch(t, record.None, pid, 0, 0, 2, "a")
	if rp := produceOne(t, c, 9, "old", append([]byte(nil), last...)); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("the producer's batch: %+v", rp)
	}
	// Other producers fill several segments after it.
	other := initProducer(t, c)
	for i := range 40 {
		if rp := produceOne(t, c, 9, "old", makeBatch(t, record.None, other, 0, int32(10*i), 10, strings.Repeat("x", 100))); rp.ErrorCode != 0 {
			t.Fatalf("other producer's batch %d: %+v", i, rp)
		}
	}
	l, err := ts.st.Log("old", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := l.NumSegments(); n < 4 {
		t.Fatalf("%d segments, want the first producer's batch three segments back", n)
	}
	partDir := l.Dir()
	if snaps := snapshotFiles(t, partDir); len(snaps) != 1 {
		t.Fatalf("producer snapshots %v, want the one of the last roll", snaps)
	}
	end := l.EndOffset()
	for _, withSnapshot := range []bool{true, false} {
		ts.stop()
		if !withSnapshot {
			for _, f := range snapshotFiles(t, partDir) {
				if err := vfs.Default.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}
		ts, _ = startClusterIn(t, dir, Options{})
		c := dialRaw(t, ts.addr)
		if rp := produceOne(t, c, 9, "old", append([]byte(nil), last...)); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
			t.Fatalf("snapshot %v: a late retry of the first producer's batch: %+v, want its original offset 0", withSnapshot, rp)
		}
		if got := logEnd(t, ts, "old"); got != end {
			t.Fatalf("snapshot %v: log end %d after the retry, want %d: it was stored again", withSnapshot, got, end)
		}
	}
}

// TestClusterIdempotenceFollowsTruncation: a batch another leader wrote
// here and a later leader replaced (a raft truncation of uncommitted
// entries) is gone from the producer state with it: its retry is stored,
// not answered with the offset where other records now lie; and the
// snapshots past the cut are removed before it.
func TestClusterIdempotenceFollowsTruncation(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createSmallSegments(t, ts.st, "tr")
	c := dialRaw(t, ts.addr)
	pid, other := initProducer(t, c), initProducer(t, c)
	if rp := produceOne(t, c, 9, "tr", makeBatch(t, record.None, pid, 0, 0, 2, "a")); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", rp)
	}
	fc.setLeader("tr", 0, false)
	// Another leader's write reaches this node, and enough of other
	// batches to roll (a snapshot past the cut) ...
	lost := makeBatch(t, record.None, pid, 0, 2, 2, "b")
	cut := fc.replicate("tr", 0, lost)
	for i := range 12 {
		fc.replicate("tr", 0, makeBatch(t, record.None, other, 0, int32(10*i), 10, strings.Repeat("x", 100)))
	}
	l, err := ts.st.Log("tr", 0)
	if err != nil {
		t.Fatal(err)
	}
	if snaps := snapshotFiles(t, l.Dir()); len(snaps) == 0 {
		t.Fatalf("no producer snapshot after %d segments: a follower writes one at each roll", l.NumSegments())
	}
	// ... and none of it is committed: the next leader's log replaces it.
	fc.truncate("tr", 0, cut)
	if snaps := snapshotFiles(t, l.Dir()); len(snaps) != 0 {
		t.Fatalf("snapshots %v left past the cut at %d", snaps, cut)
	}
	fc.replicate("tr", 0, makeBatch(t, record.None, other, 1, 0, 2, "c"))
	fc.setLeader("tr", 0, true)
	end := logEnd(t, ts, "tr")
	if rp := produceOne(t, c, 9, "tr", append([]byte(nil), lost...)); rp.ErrorCode != 0 || rp.BaseOffset != end {
		t.Fatalf("retry of the truncated batch: %+v, want it stored at %d", rp, end)
	}
}

// TestClusterFollowerLoadsState: a follower reads its producer state when
// the first idempotent batch reaches it, in the background, and keeps it
// from then on, so that it has it before it leads.
func TestClusterFollowerLoadsState(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "f", 1)
	fc.setLeader("f", 0, false)
	const pid = 77
	fc.replicate("f", 0, makeBatch(t, record.None, pid, 0, 0, 2, "a"))
	l, err := ts.st.Log("f", 0)
	if err != nil {
		t.Fatal(err)
	}
	pp := ts.srv.pids.partition("f", 0, l)
	testutil.WaitFor(t, "the follower's producer state is loaded", func() bool {
		pp.mu.Lock()
		defer pp.mu.Unlock()
		return pp.state == loaded
	})
	fc.replicate("f", 0, makeBatch(t, record.None, pid, 0, 2, 3, "b"))
	pp.mu.Lock()
	e := pp.m[pid]
	pp.mu.Unlock()
	if e == nil || len(e.batches) != 2 || e.batches[1].firstOff != 2 || e.batches[1].lastSeq != 4 {
		t.Fatalf("producer %d's state %+v, want its two batches", pid, e)
	}
}
