// Package replica is the raft log of a replicated partition, kept in the
// partition itself: a raft.LogStore (and raft.MonotonicLogStore) over one
// seglog partition where one raft entry is one Kafka batch
// (docs/cluster-design.md, "A partition's raft log is its Kafka log").
//
//   - A LogCommand entry's Data is a complete RecordBatch v2, checked by
//     the leader before it proposed it. StoreLogs stamps the batch's base
//     offset (the log end) and partitionLeaderEpoch (the entry's term) and
//     appends it; both fields lie outside the CRC, so the stored bytes are
//     the producer's, and every replica appending the same entries assigns
//     the same offsets. GetLog returns the batch as stored (stamped), so
//     an FSM sees stamped bytes on a follower and the leader's own bytes
//     on the leader: it must take a batch's offset from HighWatermark, not
//     from the batch.
//   - Every other entry (no-op, barrier, configuration) is a control batch
//     of one record holding the entry's type, data and extensions (see
//     ControlType). Kafka clients skip control batches, so consumers never
//     see raft's entries, and offsets need no translation.
//   - Entry i is the i-th batch after an anchor: the raft-index checkpoint
//     (layout.RaftIndexFile, beside the partition's own files) holds the
//     index of the raft log's first batch and of the first batch of every
//     segment started since. GetLog walks the batches from the anchor at
//     or below the index it is asked for, up to the next anchor, with
//     segment.Scanner (which reads 4 MiB at a time and checks each batch
//     whole, as fsck does: the one framing loop), and caches their offsets,
//     one table per anchor; appends extend the last table. Open walks the
//     last anchor's span to find the last entry: at most one segment.
//   - The term is also in the partition's leader-epoch-checkpoint
//     (epochs.go), kept by Kafka's rules, for OffsetForLeaderEpoch.
//
// A command entry with Extensions is refused (ErrExtensions): its data is
// the producer's batch, read by Kafka consumers, and has no room for them;
// hashicorp/raft sets Extensions only when middleware asks it to, which
// nothing in seglog does. Storing such an entry as a control batch instead
// would hide the producer's records from consumers.
//
// AppendedAt is kept to the millisecond: a command's is its batch's max
// timestamp (the producer's clock, not the leader's), another entry's is
// its record's timestamp. raft reads it only for a metric.
package replica
