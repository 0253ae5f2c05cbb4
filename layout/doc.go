// Package layout is the on-disk layout of a seglog (Kafka) partition
// directory, shared by the Log's Open, recovery and fsck's repair, so that
// they agree on what each file is and what to do with it:
//
//   - file names: a segment's files are its base offset in 20 digits plus a
//     suffix (FileName, ParseFileName); temporary suffixes mark a deletion
//     (.deleted), a compaction's output (.cleaned) and a swap in progress
//     (.swap);
//   - leftovers: what a crash in the middle of a deletion, a compaction or
//     a checkpoint write leaves behind, and how Kafka's loader resolves it
//     (PlanLeftovers, Resolve, Orphans);
//   - partition directories: Kafka's "topic-N" rule, with the -delete,
//     -future and -stray renamed directories (ParsePartitionDir,
//     PartitionDirName, KafkaPartition), and the entry a log's own
//     checkpoints hold (CheckpointName);
//   - checkpoints: Kafka's offset-checkpoint text format (ReadCheckpoint,
//     ParseCheckpoint, FormatCheckpoint, WriteCheckpoint), and the lines of
//     a Kafka log.dir's checkpoints that belong to one partition
//     (PartitionOffset);
//   - the swap protocol's commit point, for a compaction layer
//     (CommitCleaned);
//   - the log.dir around partition directories: the files a broker or a
//     store keeps there (IsLogDirFile), whether a directory is a
//     partition of one (PartitionLogDir), and who holds its lock, as the
//     lock file says (Holder);
//   - meta.properties, a broker's node and cluster ids, which seglog serve
//     and a cluster node keep in their directory (ReadMetaProperties,
//     ParseMetaProperties, WriteMetaProperties).
//
// The swap protocol, as Kafka's LogCleaner and LogLoader run it: the
// compacted replacement of segments [lo, hi) is written as files with the
// .cleaned suffix, flushed, then renamed to .swap (the commit point); the
// replaced segments are renamed to .deleted and deleted, and the .swap
// files renamed to their final names. A crash before the commit point
// leaves .cleaned files (deleted on load, with any .swap at or above the
// lowest .cleaned base); after it, .swap files, which load completes.
//
// The package reads and writes files only through vfs and knows nothing
// of batches: where a decision needs the offsets in a .log (a swap's
// range), the caller passes the segment layer's scanner.
//
// An embedder of seglog needs this package only to read what a Log or a
// store keeps beside its segments: ReadCheckpoint for an offset checkpoint
// (package seglog names the files, RecoveryPointFile and the others, but
// does not parse them), ParsePartitionDir for a "topic-N" name. The rest
// serves seglog's own loader, fsck and the seglog commands.
package layout
