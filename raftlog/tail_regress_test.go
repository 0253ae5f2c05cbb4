package raftlog_test

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/raftlog"
	"github.com/seglog/seglog/vfs"
)

func campaignLogs(from, to, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: entryData(i, term)})
	}
	return out
}

// TestStaleTailNotReplayed is TestRaftCrashCampaign's finding: a suffix
// delete inside a batch keeps a copy of the batch in a file beside the
// partition and removes it when done, but the removal was not made durable
// (the parent directory was never synced). After a delete of everything
// and new entries that happened to end where the old batch began, a power
// loss brought the copy back, and Open "finished" the long-done suffix
// delete by appending the deleted entry after the acknowledged ones.
func TestStaleTailNotReplayed(t *testing.T) {
	mem := vfs.NewMem()
	s, err := raftlog.Open("/raft", campaignRaftOptions(mem))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.StoreLogs(campaignLogs(1, 5, 1)))
	must(s.StoreLogs(campaignLogs(6, 16, 1))) // one batch, offsets 5..15
	must(s.DeleteRange(7, 16))                // splits it: entry 6 is written back
	must(s.DeleteRange(1, 6))                 // everything
	must(s.StoreLogs(campaignLogs(1, 5, 2)))  // ends where the split batch began
	crashed := mem.CrashClone()
	must(s.Close())

	r, err := raftlog.Open("/raft", campaignRaftOptions(crashed))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := readRaftState(r)
	if err != nil {
		t.Fatal(err)
	}
	if got.first != 1 || got.last != 5 {
		t.Fatalf("after a power loss the store holds [%d,%d] %v, want the acknowledged [1,5]", got.first, got.last, got.terms)
	}
}
