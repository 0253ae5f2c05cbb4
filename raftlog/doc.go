// Package raftlog stores a hashicorp/raft log in a seglog partition, the
// way Kafka's KRaft keeps its Raft log in an ordinary Kafka partition.
//
// A Store is a raft.LogStore, raft.MonotonicLogStore,
// raft.CommitTrackingLogStore and raft.StableStore over one directory:
//
//	dir/raft-0/           the partition: Kafka segments and checkpoints
//	dir/raft-0/leader-epoch-checkpoint   term -> first offset, Kafka's format
//	dir/quorum-state      term and vote (the StableStore): two slots written in turn
//	dir/raft-0.tail       present only while a suffix delete rewrites a batch
//
// Start with Open, and hand the Store to raft.NewRaft as both its LogStore
// and its StableStore; Close it after raft has shut down. Store.Log gives a
// read-only seglog.View of the partition for reading the log as a Kafka
// consumer would. The package uses a seglog.Log directly (not package store):
// one directory holds one Raft log.
//
// The mapping between raft entries and Kafka records (docs/raft.md has the
// reasons):
//
//   - offset = index − 1 (a raft index starts at 1, a Kafka offset at 0);
//   - term = the batch's partition leader epoch, so every StoreLogs call
//     becomes one batch per run of equal terms (one batch on a leader);
//   - Data = the record value (nil stays null);
//   - Type = header "raft.type" (absent for LogCommand, so a Kafka
//     consumer tells commands by its absence);
//   - Extensions = header "raft.ext" (absent when empty);
//   - AppendedAt = the record timestamp in milliseconds, and exactly in
//     header "raft.at" (seconds and nanoseconds, absent when zero);
//   - the staged commit index = header "raft.commit" on the last record of
//     the batch it was stored with.
package raftlog
