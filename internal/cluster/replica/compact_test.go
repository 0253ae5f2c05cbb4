package replica

import (
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/compaction"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestCompactTo: the first entry moves up a segment at a time to the last
// anchor at or below index+1, the reads answer as a MemoryStorage
// compacted there, and so they still do, reopened, after the partition
// below the returned offset is compacted (batches removed): no entry of
// raft's view was renumbered.
func TestCompactTo(t *testing.T) {
	fs := vfs.NewMem()
	const dir = "/data/t-0"
	s := openT(t, fs, dir)
	defer func() { closeT(t, s) }()
	bootT(t, s)
	es := append(entries(t, 2, 40, 1), entries(t, 41, 80, 2)...)
	if err := s.Append(es); err != nil {
		t.Fatal(err)
	}
	if len(s.Log().Segments()) < 4 {
		t.Fatalf("%d segments", len(s.Log().Segments()))
	}
	// Below the second segment's anchor nothing moves.
	off, err := s.CompactTo(1)
	if err != nil || off != 0 {
		t.Fatalf("CompactTo(1) = %d, %v; want 0", off, err)
	}
	const applied = 60
	off, err = s.CompactTo(applied)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	if first <= 2 || first > applied+1 {
		t.Fatalf("first index %d after CompactTo(%d)", first, applied)
	}
	if at, err := s.Offset(first); err != nil || at != off {
		t.Fatalf("the first entry is at %d (%v), CompactTo said %d", at, err, off)
	}
	isSegmentBase := false
	for _, seg := range s.Log().Segments() {
		isSegmentBase = isSegmentBase || seg.BaseOffset == off
	}
	// Or the entry after an empty one, which has no batch: its anchor is
	// the one that keeps the empty entry's term.
	if !isSegmentBase && !isEmpty(es[first-3]) {
		t.Fatalf("CompactTo moved to offset %d, not a segment's base nor after an empty entry", off)
	}
	oracle := oracleBelow(t, es, first)
	compareStores(t, "after CompactTo", s, oracle)

	// Every key is "k": compaction below the offset removes batches.
	before := s.Log().Size()
	res, err := compaction.Clean(s.p.(*seglog.Log), compaction.NewOffsetMap(1<<20, 0), 0, off, compaction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.SegmentsRead == 0 || s.Log().Size() >= before {
		t.Fatalf("compaction below %d changed nothing: %+v", off, res)
	}
	compareStores(t, "after compaction below it", s, oracle)
	closeT(t, s)
	s = openT(t, fs, dir)
	compareStores(t, "reopened", s, oracle)
}

// TestCompactToThenKill: CompactTo moves the first entry at once, the
// commit index is saved lazily; after a kill the saved commit index may be
// below the first entry, and InitialState still answers one etcd raft
// starts from (it refused such a state with "commit is out of range").
func TestCompactToThenKill(t *testing.T) {
	fs := vfs.NewMem()
	const dir = "/data/t-0"
	s := openT(t, fs, dir)
	defer func() { closeT(t, s) }()
	bootT(t, s)
	if err := s.Append(append(entries(t, 2, 40, 1), entries(t, 41, 80, 2)...)); err != nil {
		t.Fatal(err)
	}
	saved, _, err := s.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	// A commit index alone is kept in memory (raft.MustSync says no sync).
	if err := s.SetHardState(&pb.HardState{Term: new(saved.GetTerm()), Vote: new(saved.GetVote()), Commit: new(uint64(70))}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompactTo(60); err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	if first <= saved.GetCommit()+1 {
		t.Fatalf("first index %d after CompactTo(60) with %d committed on disk: the test needs it past", first, saved.GetCommit())
	}

	killed := openT(t, fs.CrashClone(), dir)
	defer closeT(t, killed)
	hs, _, err := killed.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := killed.FirstIndex(); hs.GetCommit() < f-1 {
		t.Fatalf("after a kill: commit %d below the first index %d", hs.GetCommit(), f)
	}
	if _, err := raft.NewRawNode(&raft.Config{ID: 1, ElectionTick: 10, HeartbeatTick: 1, Storage: killed, MaxInflightMsgs: 1, Logger: multiraft.QuietLogger()}); err != nil {
		t.Fatalf("etcd raft refuses the reopened log: %v", err)
	}
}
