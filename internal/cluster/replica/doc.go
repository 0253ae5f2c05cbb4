// Package replica is the raft log of a replicated partition, kept in the
// partition itself: a multiraft.Storage (etcd raft's Storage and the
// driver's writes) over one seglog partition where one raft entry is one
// Kafka batch (docs/cluster-design.md, "A partition's raft log is its
// Kafka log"; docs/cluster-partitions.md describes it as built).
//
//   - An EntryNormal with Data is a producer batch, checked by the leader
//     before it proposed it. Append stamps the batch's base offset (the log
//     end) and partitionLeaderEpoch (the entry's term) and appends it; both
//     fields lie outside the CRC, so the stored bytes are the producer's,
//     and every replica appending the same entries assigns the same
//     offsets. Entries returns the batch as stored (stamped).
//   - The empty entry a new leader appends has no batch and takes no
//     offset: a new partition's first batch is at offset 0, and a leader
//     change leaves no gap. The anchor of the entry after it, at the same
//     offset, keeps its term (below).
//   - A configuration change is a control batch of one record holding the
//     entry's type and data (see ControlType). Kafka clients skip control
//     batches, so consumers never see raft's entries, and offsets need no
//     translation. A DeleteRecords entry (a normal entry whose data is a
//     command, DeleteRecordsEntry) is stored the same way; KeepFrom is
//     what its apply does to the raft log before the log start moves.
//   - Entry i is the i-th batch after an anchor: the raft-index checkpoint
//     (layout.RaftIndexFile) holds, for the raft log's first entry, the
//     first entry of every segment started since and the entry after each
//     empty entry, its index, its offset and the term of the entry before
//     it, so that Term(FirstIndex-1) answers whatever retention deleted
//     below, and an empty entry's term is known. The entries of an
//     anchor's span are batches but the last, which is an empty entry when
//     the batches before the next anchor are one fewer than the entries.
//     Reads walk the batches from the anchor at or below the index asked
//     for with segment.Scanner (the one framing loop) and cache their
//     offsets and terms, one table per anchor; appends extend the last
//     table.
//   - raft's HardState and ConfState are in layout.RaftStateFile (state.go).
//   - The term is also in the partition's leader-epoch-checkpoint
//     (epochs.go), kept by Kafka's rules, for OffsetForLeaderEpoch.
//   - A snapshot is the partition (snapshot.go): its Data is where its
//     index ends, and a follower copies the batches it lacks from the
//     snapshot's sender (ReceiveSnapshot, ServeSnapshot, which multiraft
//     runs before raft sees the snapshot); an install under way is kept in
//     the raft state, so a copy cut short resumes (install.go). CompactTo
//     gives up entries a segment at a time, so compaction below never
//     renumbers one.
//
// The Store does not own the partition: it is given it (Partition, which
// *seglog.Log and store.Writer satisfy), and the partition's owner closes
// it. It syncs every write itself, whatever the partition's flush settings.
package replica
