// Package fsck checks, and on request repairs, seglog and Apache Kafka
// partition directories. It is what the seglog fsck command runs, and works
// on a directory offline, without opening a Log.
//
// Start with Check (read-only) or Repair on one partition directory; for a
// store or a Kafka log.dir, PartitionDirs lists the partition directories
// below it. Report.ExitCode turns the result into fsck(8)'s status.
//
// Check reads a partition directory and reports every problem it finds,
// each with the file, the byte position in that file, a kind, a severity
// and a sentence, plus statistics about what it read. It opens files
// read-only, takes no lock and writes nothing, so it is safe to run beside
// a live Log (a check racing appends may see the active segment's newest
// batch half written and report it as a torn tail).
//
// What is checked:
//
//   - names: 20-digit base offsets; orphan index files; leftover .cleaned,
//     .swap, .deleted and .tmp files;
//   - every entry of every .log: framing, size bounds, magic, CRC-32C (CRC-32
//     for legacy v0/v1 entries), offsets strictly increasing within and across
//     segments and inside each file's range; with Options.Deep every record
//     is decoded (decompression, lengths, counts, varints);
//   - .index and .timeindex files against the batches they describe;
//   - checkpoint files (in the partition directory as seglog keeps them, and
//     in its parent as a Kafka log.dir keeps them), leader-epoch checkpoints,
//     .txnindex files against the ABORT markers, producer snapshots and
//     partition.metadata.
//
// After damage the scanner resynchronizes on the next valid batch, so one
// bad batch does not hide the rest of the file.
//
// An entry the file holds but that is larger than the read limit
// (Options.MaxEntryBytes, default DefaultMaxEntryBytes) is not read; it is
// reported as KindReadLimit, never as damage, and the scan goes on after
// it.
//
// Repair writes files, so it follows the Log's own recovery rules, and
// resolves leftovers, cuts and rebuilds indexes with the engine's own code
// (layout.Resolve, segment.PlanRecovery and Segment.ApplyRecovery), so
// that a repaired directory is what the next Open would make of it. Stored batches are bounded by the file, never by a
// size setting. Damage past the recovery point (a torn tail: data the log
// had not synced) is cut there, with every later segment. Damage below it
// (data the log had synced, per the directory's
// recovery-point-offset-checkpoint, a Kafka log.dir's line for the
// partition in the parent, or a clean-shutdown marker) is corruption: it
// is reported and nothing is cut, unless the caller sets the destructive
// RepairOptions.TruncateDamaged, which deletes every valid batch after it
// (the report says how many records). Repair also rebuilds missing or
// damaged indexes, resolves leftover files as Kafka's log loader does,
// rewrites an unusable offset checkpoint so that every record is kept (and
// says what it wrote), and sets a log start beyond the end of the log to
// the end. It refuses to run while a live Log holds the directory's lock.
//
// Missing data (KindMissingData: an offset gap in a log never compacted,
// index entries pointing past the end of their .log, a recovery point
// beyond the end) is always reported; repair cannot bring it back and
// never hides its evidence. A directory holding no partition is
// ErrNoPartition; files that are not a log's beside a log's are listed
// (Stats.Strays) and ignored, as layout's classification and every command
// ignore them. docs/fsck.md has the rules in full.
package fsck
