package multiraft

import (
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Storage is one group's raft log as the driver uses it: etcd's read side
// (raft.Storage, which the RawNode reads) and the write side the driver calls
// while handling a Ready.
//
// The durability contract, which is etcd raft's (its README, "Usage"): when
// SetHardState, Append or ApplySnapshot returns nil, what it was given must
// survive a crash of the process and of the machine (fsync, or whatever the
// store's durability mode promises). The driver sends a Ready's messages only
// after all three have returned for that Ready, so a vote this node granted
// or an entry it acknowledged is on disk before any peer hears of it; raft's
// safety rests on that. A write error stops the group (see AddGroup).
//
// The read side is etcd's raft.Storage contract, including that Term
// answers for FirstIndex()-1, the index of the last snapshot (its term is
// kept when the entries before FirstIndex are gone), and that Entries
// returns at least one entry even past maxSize.
//
// Append's contract is raft.MemoryStorage's: entries are consecutive, and the
// first one may overlap the log's tail, in which case the log is truncated at
// the first entry's index before it is appended (a follower's conflicting
// suffix being replaced). Reads (raft.Storage) come from the driver
// goroutine only, and after a write has returned they must reflect it.
//
// Entries' Data: the driver's messages to peers carry the entries' Data as
// raft holds them, written after the round (no copy), so Append must not
// change a leader's new entries while their messages may be in flight. The
// one exception is a Storage that implements Stamper: the driver calls
// Stamp on a leader's new entries before any message carries them, and
// Append may then write into them only what Stamp wrote (the same bytes:
// nothing a sender could see change). Entries a follower receives are
// decoded into buffers of their own, which Append may change freely.
//
// All methods are called from the node's driver goroutine, never
// concurrently for one group, but for the writes of a round's Ready, which
// the driver runs for several groups at once (each in a goroutine of its
// own, the driver waiting for them all); a Storage serves one group.
type Storage interface {
	raft.Storage
	// SetHardState records the term, vote and commit index.
	SetHardState(st *pb.HardState) error
	// Append writes entries, truncating an overlapping tail first.
	Append(entries []*pb.Entry) error
	// ApplySnapshot replaces the log with the snapshot's state: the log
	// afterwards starts at the snapshot's index + 1, and Term of the
	// snapshot's index is its term.
	ApplySnapshot(snap *pb.Snapshot) error
}

// A Stamper is a Storage that writes into a leader's new entries, before
// they are sent, what its Append would write into them (the replica Store
// stamps each Kafka batch with its offset and leader epoch), so that
// Append can store them without a copy. Stamp is called from the driver
// goroutine with a Ready's entries, before its messages are queued; it
// must leave alone what it cannot stamp.
type Stamper interface {
	Stamp(entries []*pb.Entry)
}

// An OwnProposals Storage is told which of the entries it is about to
// Append are this node's own proposals: Proposed is called from the
// driver goroutine, before that Append, with the entries raft made of the
// data given to Propose (the Ready's last ones; entries from peers are
// never passed). Such a Storage may rely on what the proposer checked of
// that data rather than check it again: the replica Store skips the CRC
// of a batch the server has just checked, while every follower, which
// receives the batch from the network, still checks it. Each call
// replaces the previous one's entries.
type OwnProposals interface {
	Proposed(entries []*pb.Entry)
}

// MemoryStorage is a Storage over raft.MemoryStorage: nothing survives the
// process, so it is for tests, where the test keeps it across a node's
// restart to stand for a disk.
type MemoryStorage struct {
	*raft.MemoryStorage
}

var _ Storage = MemoryStorage{}

// NewMemoryStorage returns an empty MemoryStorage.
func NewMemoryStorage() MemoryStorage {
	return MemoryStorage{raft.NewMemoryStorage()}
}

// isFresh reports whether st has never held a configuration: a group
// created for the first time, which AddGroup bootstraps.
func isFresh(st Storage) (bool, error) {
	_, cs, err := st.InitialState()
	if err != nil {
		return false, err
	}
	last, err := st.LastIndex()
	if err != nil {
		return false, err
	}
	return last == 0 && len(cs.GetVoters()) == 0 && len(cs.GetLearners()) == 0, nil
}

// bootstrap gives a fresh group its first configuration as a snapshot at
// index 1, term 1, the same on every replica: every replica then starts from
// the same log, with no entry to write or apply.
func bootstrap(st Storage, peers []uint64) error {
	if len(peers) == 0 {
		return fmt.Errorf("multiraft: a new group needs its peers")
	}
	voters := append([]uint64(nil), peers...)
	return st.ApplySnapshot(&pb.Snapshot{Metadata: &pb.SnapshotMetadata{
		ConfState: &pb.ConfState{Voters: voters},
		Index:     new(uint64(1)),
		Term:      new(uint64(1)),
	}})
}
