package replica

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestProposedSkipsOnlyTheirCRC: Append checks the CRC of every batch
// itself (checkEntry, before anything is written) but the very buffers
// the last Proposed call named (the leader's own proposals, checked whole
// by the server), and a Proposed call serves one Append only. A batch with
// a wrong CRC shows which: checkEntry refuses it as an entry, while a named
// one reaches the partition's own check (seglog's AppendEpochBatches,
// which checks every batch before storing any) and is refused there.
func TestProposedSkipsOnlyTheirCRC(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/data/t-0")
	defer func() { closeT(t, s) }()
	bootT(t, s)
	bad := func() *pb.Entry {
		e := entries(t, 2, 2, 1)[0]
		if !isProducer(e) {
			t.Fatal("entry 2 is not a producer batch")
		}
		d := e.GetData()
		d[len(d)-1] ^= 0xff // inside the CRC's span
		return e
	}
	// byEntryCheck tells checkEntry's refusal (it names the entry, and
	// is no seglog.ErrCorruptBatch) from the partition's.
	byEntryCheck := func(err error) bool {
		return errors.Is(err, ErrBadEntry) && !errors.Is(err, seglog.ErrCorruptBatch) && strings.Contains(err.Error(), "entry 2:")
	}
	checked := func(what string, e *pb.Entry) {
		t.Helper()
		if err := s.Append([]*pb.Entry{e}); !byEntryCheck(err) {
			t.Fatalf("%s: Append of a batch with a wrong CRC: %v, want checkEntry's ErrBadEntry", what, err)
		}
	}

	checked("never named", bad())

	named := bad()
	s.Proposed([]*pb.Entry{named})
	other := &pb.Entry{Index: new(named.GetIndex()), Term: new(named.GetTerm()), Data: bytes.Clone(named.GetData())}
	checked("same index and bytes in another buffer", other)

	named = bad()
	s.Proposed([]*pb.Entry{named})
	err := s.Append([]*pb.Entry{named})
	if !errors.Is(err, ErrBadEntry) || !errors.Is(err, seglog.ErrCorruptBatch) || byEntryCheck(err) {
		t.Fatalf("Append of the named batch: %v, want the partition's refusal (its CRC not checked by checkEntry)", err)
	}
	checked("named for an earlier Append", named)

	// Nothing of the refused calls was stored; a good batch goes.
	if last, err := s.LastIndex(); err != nil || last != 1 {
		t.Fatalf("after the refusals, LastIndex %d (%v), want 1", last, err)
	}
	good := entries(t, 2, 2, 1)
	s.Proposed(good)
	if err := s.Append(good); err != nil {
		t.Fatal(err)
	}
}
