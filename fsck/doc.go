// Package fsck checks, and on request repairs, seglog and Apache Kafka
// partition directories.
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
// Repair fixes what loses no valid data: it truncates a torn or damaged
// tail, rebuilds missing or damaged indexes, resolves leftover files as
// Kafka's log loader does, and lowers a recovery point that lies beyond the
// end of the log. Damage followed by valid batches is only truncated with
// RepairOptions.TruncateDamaged, and the report says how many records that
// drops. Repair refuses to run while a live Log holds the directory's lock.
package fsck
