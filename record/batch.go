package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/seglog/seglog/defaults"
	"github.com/seglog/seglog/internal/crc32c"
)

// Layout constants of RecordBatch v2.
const (
	// HeaderSize is the size of the RecordBatch v2 header; an empty batch
	// is exactly this long.
	HeaderSize = 61
	// LogOverhead is the baseOffset and batchLength prefix every log entry
	// (any magic) starts with. batchLength counts the bytes after it.
	LogOverhead = 12
	// MagicOffset is the position of the magic byte, the same in every
	// message format, so a reader can dispatch on it.
	MagicOffset = 16
	// PeekSize is how many bytes PeekEntry needs: the framing up to and
	// including the magic byte.
	PeekSize = MagicOffset + 1
	// MinEntrySize is the smallest batchLength Kafka accepts for an entry of
	// any format (the v0 record overhead).
	MinEntrySize = 14
	// CurrentMagic is the magic of RecordBatch v2.
	CurrentMagic = 2
	// DefaultMaxBatchSize is Kafka's default max.message.bytes: 1 MiB plus
	// the log overhead.
	DefaultMaxBatchSize = defaults.MaxBatchBytes
)

// Field offsets inside the header. The CRC covers [crcStart, end): the
// fields before it are the ones a broker rewrites without touching the CRC.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordsCount    = 57
	crcStart           = offAttributes
)

// Attribute bits.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

// TimestampType says what a batch's timestamps mean.
type TimestampType int8

// Timestamp types (attribute bit 3).
const (
	// CreateTime: records carry the producer's timestamps.
	CreateTime TimestampType = 0
	// LogAppendTime: the broker's append time, stored as the batch's
	// max timestamp, replaces every record's timestamp.
	LogAppendTime TimestampType = 1
)

// String returns "CreateTime" or "LogAppendTime".
func (t TimestampType) String() string {
	if t == LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// Batch is a view over the bytes of one RecordBatch v2, header included.
// The header accessors read the bytes in place; they assume len(b) >=
// HeaderSize (call Validate, or at least check the length, before trusting
// them on untrusted input).
type Batch []byte

// EqualUnstamped reports whether a and b hold the same batch but for the
// two fields a broker stamps without touching the CRC, baseOffset and
// partitionLeaderEpoch: a producer's batch and the one a log stored from
// it compare equal.
func EqualUnstamped(a, b []byte) bool {
	if len(a) != len(b) || len(a) < HeaderSize {
		return false
	}
	return bytes.Equal(a[offBatchLength:offLeaderEpoch], b[offBatchLength:offLeaderEpoch]) &&
		bytes.Equal(a[offMagic:], b[offMagic:])
}

// BaseOffset is the offset of the batch's first record (before compaction
// may have removed it).
func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }

// BatchLength is the length field: the bytes following it.
func (b Batch) BatchLength() int32 { return int32(binary.BigEndian.Uint32(b[offBatchLength:])) }

// Size is the whole batch's size according to its length field.
func (b Batch) Size() int { return int(b.BatchLength()) + LogOverhead }

// PartitionLeaderEpoch is the leader epoch stamped by the broker, -1 from a
// producer.
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
}

// Magic is the format version byte; 2 for a RecordBatch.
func (b Batch) Magic() int8 { return int8(b[offMagic]) }

// CRC is the stored CRC-32C.
func (b Batch) CRC() uint32 { return binary.BigEndian.Uint32(b[offCRC:]) }

// Attributes is the raw attributes field.
func (b Batch) Attributes() int16 { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }

// Codec is the compression codec of the record section. It may be invalid
// (5-7) on unvalidated input.
func (b Batch) Codec() Codec { return Codec(b[offAttributes+1] & attrCodecMask) }

// TimestampType says whether timestamps are CreateTime or LogAppendTime.
func (b Batch) TimestampType() TimestampType {
	if b[offAttributes+1]&attrLogAppendTime != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports whether the batch is part of a transaction.
func (b Batch) IsTransactional() bool { return b[offAttributes+1]&attrTransactional != 0 }

// IsControl reports whether the batch holds control records (transaction
// markers), not user data.
func (b Batch) IsControl() bool { return b[offAttributes+1]&attrControl != 0 }

// HasDeleteHorizon reports whether BaseTimestamp holds the compaction
// delete horizon (KIP-534) rather than the first record's timestamp.
func (b Batch) HasDeleteHorizon() bool { return b[offAttributes+1]&attrDeleteHorizon != 0 }

// LastOffsetDelta is LastOffset - BaseOffset. After compaction it may
// exceed NumRecords - 1.
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
}

// LastOffset is the offset of the batch's last record as originally written.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// NextOffset is the offset that follows the batch.
func (b Batch) NextOffset() int64 { return b.LastOffset() + 1 }

// BaseTimestamp is the timestamp record deltas are relative to (or the
// delete horizon, see HasDeleteHorizon).
func (b Batch) BaseTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])) }

// MaxTimestamp is the largest record timestamp (CreateTime) or the append
// time (LogAppendTime).
func (b Batch) MaxTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }

// ProducerID is the idempotent producer's id, -1 if none.
func (b Batch) ProducerID() int64 { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }

// ProducerEpoch is the producer's epoch, -1 if none.
func (b Batch) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }

// BaseSequence is the sequence number of the first record, -1 if none.
func (b Batch) BaseSequence() int32 { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }

// LastSequence is the sequence of the batch's last record, wrapping from
// 2^31-1 to 0 as Kafka does; -1 when BaseSequence is -1.
func (b Batch) LastSequence() int32 {
	base := b.BaseSequence()
	if base < 0 {
		return base
	}
	s := int64(base) + int64(b.LastOffsetDelta())
	if s > 1<<31-1 {
		s -= 1 << 31
	}
	return int32(s)
}

// NumRecords is the record count field.
func (b Batch) NumRecords() int32 { return int32(binary.BigEndian.Uint32(b[offRecordsCount:])) }

// ComputeCRC computes the CRC-32C over [21, len(b)), the span the stored
// CRC covers.
func (b Batch) ComputeCRC() uint32 { return crc32c.Checksum(b[crcStart:]) }

// SetBaseOffset rewrites the base offset. It is outside the CRC.
func (b Batch) SetBaseOffset(off int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off))
}

// SetPartitionLeaderEpoch rewrites the leader epoch. It is outside the CRC.
func (b Batch) SetPartitionLeaderEpoch(epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// Validate checks the batch the way a broker checks one before storing it,
// plus the fields this package relies on: at least HeaderSize bytes, a
// length field that matches len(b), magic 2, a matching CRC-32C, a known
// codec and a non-negative record count. It does not look at the records
// (the Iterator checks those).
func (b Batch) Validate() error {
	if len(b) < LogOverhead+5 {
		return corruptWrap(len(b), fmt.Errorf("%d bytes, shorter than the %d-byte framing: %w", len(b), PeekSize, ErrShortHeader))
	}
	if m := b.Magic(); m != CurrentMagic {
		return fmt.Errorf("%w %d at byte %d", ErrUnsupportedMagic, m, offMagic)
	}
	if len(b) < HeaderSize {
		return corrupt(len(b), "%d bytes, shorter than the %d-byte header", len(b), HeaderSize)
	}
	if n := b.BatchLength(); int64(n) != int64(len(b))-LogOverhead {
		return corrupt(offBatchLength, "length field %d, want %d for %d bytes", n, len(b)-LogOverhead, len(b))
	}
	if got, want := b.ComputeCRC(), b.CRC(); got != want {
		return corrupt(offCRC, "crc 0x%08x, computed 0x%08x", want, got)
	}
	if !b.Codec().Valid() {
		return corruptWrap(offAttributes+1, fmt.Errorf("%w: id %d", ErrUnknownCodec, b.Codec()))
	}
	if n := b.NumRecords(); n < 0 {
		return corrupt(offRecordsCount, "negative record count %d", n)
	}
	return nil
}

// PeekEntry reads the framing of a log entry of any format from its first
// bytes (at least PeekSize) and returns the entry's total size and magic.
// Magic 0 and 1 (legacy) and 2 are returned without error; the caller skips
// legacy entries by size. A length below the smallest legal entry, or below
// HeaderSize for magic 2, is a *CorruptionError. Another magic returns the
// size and magic with an error wrapping ErrUnsupportedMagic. Fewer than
// PeekSize bytes yields ErrShortHeader.
func PeekEntry(hdr []byte) (size int, magic int8, err error) {
	if len(hdr) < PeekSize {
		return 0, 0, fmt.Errorf("%w: %d of %d bytes", ErrShortHeader, len(hdr), PeekSize)
	}
	n := int32(binary.BigEndian.Uint32(hdr[offBatchLength:]))
	magic = int8(hdr[offMagic])
	if n < MinEntrySize {
		return 0, magic, corrupt(offBatchLength, "entry length %d below the minimum %d", n, MinEntrySize)
	}
	size = int(n) + LogOverhead
	switch {
	case magic == CurrentMagic && size < HeaderSize:
		return 0, magic, corrupt(offBatchLength, "batch length %d below the v2 minimum %d", n, HeaderSize-LogOverhead)
	case magic < 0 || magic > CurrentMagic:
		return size, magic, fmt.Errorf("%w %d at byte %d", ErrUnsupportedMagic, magic, offMagic)
	}
	return size, magic, nil
}
