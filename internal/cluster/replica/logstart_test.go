package replica

import (
	"errors"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestDeleteRecordsEntry: a DeleteRecords entry is stored as a control
// batch of one offset and read back as raft proposed it (a normal entry,
// its data, the size raft counts), from the append's memory and from the
// partition after a reopen; KeepFrom then makes it the raft log's first
// entry, and a log start moved inside the span before it (mid-batch, as a
// DeleteRecords offset may be) moves no entry out of raft's view: the
// reads answer as a MemoryStorage compacted at the entry before it, and
// so they do reopened. The commit index is durable before the first
// entry moves (a power loss between them).
func TestDeleteRecordsEntry(t *testing.T) {
	fs := vfs.NewMem()
	const dir = "/data/t-0"
	s := openT(t, fs, dir)
	defer func() { closeT(t, s) }()
	bootT(t, s)
	const del = 30 // the DeleteRecords entry's index
	es := append(entries(t, 2, 40, 1), entries(t, 41, 50, 2)...)
	// Entry 28's batch holds (28+1)%3+1 = 3 records; the offset asked
	// for is its second, inside it.
	if n := record.Batch(es[28-2].GetData()).NumRecords(); !isProducer(es[28-2]) || n < 2 {
		t.Fatalf("entry 28 holds %d records", n)
	}
	var x int64 // set once entry 28's offset is known
	es[del-2] = &pb.Entry{Index: new(uint64(del)), Term: new(uint64(1)), Data: DeleteRecordsEntry(0)}
	if err := s.Append(es[:del-2]); err != nil {
		t.Fatal(err)
	}
	at28, err := s.Offset(28)
	if err != nil {
		t.Fatal(err)
	}
	x = at28 + 1
	es[del-2].Data = DeleteRecordsEntry(x)
	if err := s.Append(es[del-2:]); err != nil {
		t.Fatal(err)
	}
	if got, ok := DeleteRecordsOffset(es[del-2]); !ok || got != x {
		t.Fatalf("DeleteRecordsOffset = %d, %v; want %d", got, ok, x)
	}
	if _, ok := DeleteRecordsOffset(es[0]); ok {
		t.Fatal("a producer batch taken for a DeleteRecords entry")
	}
	check := func(label string) {
		t.Helper()
		got, err := s.Entries(del, del+1, ^uint64(0))
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if err := sameEntry(got[0], es[del-2]); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if off, ok := DeleteRecordsOffset(got[0]); !ok || off != x {
			t.Fatalf("%s: the entry read back moves the start to %d (%v), want %d", label, off, ok, x)
		}
	}
	check("appended")
	closeT(t, s)
	s = openT(t, fs, dir)
	check("reopened")
	// Not committed yet: the first entry does not move.
	if _, err := s.KeepFrom(del); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("KeepFrom past the commit index: %v, want ErrBadEntry", err)
	}
	// The term first (written at once), then the commit index alone,
	// which the Store keeps in memory (as etcd raft allows).
	if err := s.SetHardState(&pb.HardState{Term: new(uint64(2)), Vote: new(uint64(1)), Commit: new(uint64(1))}); err != nil {
		t.Fatal(err)
	}
	hs := &pb.HardState{Term: new(uint64(2)), Vote: new(uint64(1)), Commit: new(uint64(45))}
	if err := s.SetHardState(hs); err != nil {
		t.Fatal(err)
	}
	at, err := s.Offset(del)
	if err != nil {
		t.Fatal(err)
	}
	off, err := s.KeepFrom(del)
	if err != nil || off != at {
		t.Fatalf("KeepFrom(%d) = %d, %v; want the entry's offset %d", del, off, err, at)
	}
	if off, err := s.KeepFrom(del - 5); err != nil || off != at {
		t.Fatalf("KeepFrom below the first entry = %d, %v; want %d, nothing moved", off, err, at)
	}
	// A power loss now, before the log start moves: the raft log starts
	// at the entry, and the commit index on disk covers it (etcd raft
	// refuses a commit index below FirstIndex-1), so raft applies the
	// entry again after the restart.
	crashed := fs.CrashClone()
	cs := openT(t, crashed, dir)
	if first, err := cs.FirstIndex(); err != nil || first != del {
		t.Fatalf("after a power loss the first index is %d (%v), want %d", first, err, del)
	}
	if hs, _, err := cs.InitialState(); err != nil || hs.GetCommit() < del {
		t.Fatalf("after a power loss the commit index is %d (%v), below the first entry %d", hs.GetCommit(), err, del)
	}
	closeT(t, cs)
	// The log start moves inside entry 28's batch, as the node's apply
	// does after KeepFrom.
	if _, err := s.p.(*seglog.Log).DeleteBefore(x); err != nil {
		t.Fatal(err)
	}
	oracle := oracleBelow(t, es, del)
	if err := oracle.SetHardState(hs); err != nil {
		t.Fatal(err)
	}
	compareStores(t, "after the delete", s, oracle)
	if _, err := s.Entries(del-1, del, ^uint64(0)); !errors.Is(err, raft.ErrCompacted) {
		t.Fatalf("the entry before the first: %v, want ErrCompacted", err)
	}
	closeT(t, s)
	s = openT(t, fs, dir)
	if start := s.Log().StartOffset(); start != x {
		t.Fatalf("reopened, the log starts at %d, want %d", start, x)
	}
	compareStores(t, "reopened after the delete", s, oracle)
	// What is not a whole command is a producer entry, refused as a
	// batch.
	bad := &pb.Entry{Index: new(uint64(51)), Term: new(uint64(2)), Data: DeleteRecordsEntry(x)[:commandSize-1]}
	if err := s.Append([]*pb.Entry{bad}); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("a truncated command: %v, want ErrBadEntry", err)
	}
}
