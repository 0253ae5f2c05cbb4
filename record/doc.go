// Package record is seglog's wire and disk format: Apache Kafka's
// RecordBatch v2 (magic 2), byte for byte.
//
// A Batch is a view over the bytes of one batch; its accessors read the
// 61-byte header in place and nothing is copied. Validate checks what a
// Kafka broker checks (size, length field, magic, CRC-32C) plus a known
// codec and a non-negative record count. An Iterator walks the records,
// decompressing into a buffer it reuses, and checks every record's framing
// strictly. A Builder encodes records into a batch, reusing its buffers so
// that a warm builder allocates nothing per record.
//
// Most embedders meet only Record (what seglog.Log.Append takes and
// Log.Records yields), Header and Codec; Builder and Batch are for callers
// that produce or inspect wire batches themselves (Log.AppendBatch, a Kafka
// protocol server). Builders and Iterators are not safe for concurrent use:
// keep one per goroutine.
//
// The package does no file I/O. Scanners that read entries from files use
// PeekEntry to learn an entry's size and magic from its first 17 bytes, so
// legacy (v0/v1) entries can be skipped by size.
//
// Errors about damaged bytes are *CorruptionError values carrying the byte
// position within the batch; errors.Is(err, ErrCorrupt) matches them. The
// sentinels ErrUnsupportedMagic, ErrUnknownCodec, ErrTooLarge and
// ErrDecompressLimit name the other distinct failures.
package record
