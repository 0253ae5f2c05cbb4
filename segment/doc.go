// Package segment is one segment of a Kafka-style partition log: a .log file
// of record batches plus its sparse offset index (.index) and time index
// (.timeindex), all named after the segment's base offset
// ("00000000000000000042.log"), byte-compatible with Apache Kafka.
//
// An embedder of seglog does not need this package: seglog.Log creates,
// rolls, recovers and removes its segments. It is public as a building
// block for tools that read or repair segment files (fsck, seglog dump):
// NewScanner walks a .log and reports damage as regions; Open and Create
// give a Segment; PlanRecovery and Segment.ApplyRecovery are recovery's
// two halves. Package index holds the index files' formats, package layout
// the file names.
//
// A Segment is either active (the one being appended to: indexes mapped
// writable and preallocated) or sealed (read-only: indexes trimmed, opened
// without reading or mapping anything until a lookup needs it, so a log with
// thousands of sealed segments opens in milliseconds).
//
// # Index rule
//
// Appends and recovery build the indexes exactly as Kafka 4.x does: while
// walking batches, if more than IndexIntervalBytes bytes were appended since
// the last index entry, the batch's LAST offset is indexed with the batch's
// START position, the time index is offered the segment's running maximum
// timestamp with the last offset of the batch that first reached it, and the
// byte counter restarts; the batch's size is then added to the counter. The
// first batch of a segment is therefore never indexed. Seal (and Close of an
// active segment, and Recover) append the running maximum once more, so the
// time index's last entry always holds the segment's largest timestamp.
//
// # Concurrency
//
// One writer, any number of readers. The caller (the Log) serializes the
// mutating calls (Append, AppendDeferred, WriteDeferred, TruncateTo, Seal,
// Unseal, Recover, ApplyRecovery, ApplyRecoveryActive, ExtendView, Remove,
// Close); FindPosition, FindOffsetForTime, ReadAt, Batches, Size,
// NextOffset and MaxTimestamp may run concurrently with Append and with
// each other. Append writes the bytes and the index entries first and only
// then publishes the new size and next offset with atomic stores, so a
// reader never sees a partial batch. Readers racing with TruncateTo may see short reads or
// errors for the removed range; the Log excludes that race.
//
// # Lifetime
//
// A Segment is reference counted (Acquire, Release) so that Remove can
// rename its files to *.deleted at once while readers holding a reference
// keep reading (and sendfile-ing) from the open descriptor; the files are
// closed and unlinked when the last reference is released.
//
// # Damage
//
// Errors about damaged data carry the file path and byte position: a damaged
// batch is a *record.CorruptionError (errors.Is(err, record.ErrCorrupt))
// with File and Pos set to the .log path and the file position; a torn tail
// is a *PositionError wrapping ErrTornTail.
//
// A Scanner reads a .log without a Segment, reporting damage as regions
// and resynchronizing after it, as fsck and seglog dump do; ScanRemnant
// is recovery's resynchronizing scan of the bytes after damage.
package segment
