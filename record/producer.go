package record

import (
	"encoding/binary"
	"fmt"
)

// ValidateProducerBatch checks b as a broker checks a batch arriving from
// a producer, before assigning offsets: size within maxBytes (including
// the log overhead; ErrTooLarge), then Validate, then the producer rules
// (ErrInvalidProducerBatch): base offset 0, lastOffsetDelta + 1 ==
// NumRecords > 0, not a control batch, not LogAppendTime, and a producer
// id >= 0 requires a base sequence >= 0.
//
// It reads only the header. The records themselves are checked by
// iterating them, for instance with MaxRecordTimestamp, which a broker
// needs anyway for CreateTime batches.
func ValidateProducerBatch(b Batch, maxBytes int) error {
	if len(b) > maxBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(b), maxBytes)
	}
	if err := b.Validate(); err != nil {
		return err
	}
	switch {
	case b.BaseOffset() != 0:
		return fmt.Errorf("%w: base offset %d, producers send 0", ErrInvalidProducerBatch, b.BaseOffset())
	case b.NumRecords() == 0 || int64(b.LastOffsetDelta())+1 != int64(b.NumRecords()):
		return fmt.Errorf("%w: lastOffsetDelta %d with %d records", ErrInvalidProducerBatch, b.LastOffsetDelta(), b.NumRecords())
	case b.IsControl():
		return fmt.Errorf("%w: producers may not write control batches", ErrInvalidProducerBatch)
	case b.TimestampType() == LogAppendTime:
		return fmt.Errorf("%w: producers may not send LogAppendTime batches", ErrInvalidProducerBatch)
	case b.ProducerID() >= 0 && b.BaseSequence() < 0:
		return fmt.Errorf("%w: producer id %d with base sequence %d", ErrInvalidProducerBatch, b.ProducerID(), b.BaseSequence())
	}
	return nil
}

// AssignOffsets stamps the broker's base offset and leader epoch. Both
// fields are outside the CRC, so nothing else changes.
func (b Batch) AssignOffsets(base int64, leaderEpoch int32) {
	b.SetBaseOffset(base)
	b.SetPartitionLeaderEpoch(leaderEpoch)
}

// SetMaxTimestamp sets the max timestamp and the timestamp type. When
// either changes it recomputes the CRC and reports true; otherwise the
// bytes are left untouched.
func (b Batch) SetMaxTimestamp(ts int64, typ TimestampType) bool {
	if b.MaxTimestamp() == ts && b.TimestampType() == typ {
		return false
	}
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	if typ == LogAppendTime {
		b[offAttributes+1] |= attrLogAppendTime
	} else {
		b[offAttributes+1] &^= attrLogAppendTime
	}
	binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC())
	return true
}

// MaxRecordTimestamp iterates b's records with it (which may be nil) and
// returns the largest record timestamp, as a broker recomputes the max
// timestamp of a CreateTime batch; -1 for a batch without records. Every
// record is checked on the way, so a nil error also means the records are
// well formed. It does not check the CRC.
func MaxRecordTimestamp(b Batch, it *Iterator) (int64, error) {
	if it == nil {
		it = new(Iterator)
	}
	if err := it.Reset(b); err != nil {
		return -1, err
	}
	maxTS := int64(-1)
	for it.Next() {
		maxTS = max(maxTS, it.rec.Timestamp)
	}
	return maxTS, it.Err()
}
