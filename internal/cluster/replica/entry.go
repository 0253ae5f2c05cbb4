package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// ControlType is the control record type of the batches holding raft's
// own entries. Kafka's types are 0 to 6 and grow one at a time, with each
// KIP that needs one (KRaft added 3 to 6); a number this far up will not
// meet one of them for decades, and clients skip control batches whatever
// their type (kgo drops every control record; Java parses an unknown type
// as ControlRecordType.UNKNOWN and skips it).
const ControlType record.ControlType = 0x5241 // "RA"

// entryVersion is the version of the control record's value layout:
//
//	int16 version, uint8 raft LogType,
//	uint32 len(Data), Data, uint32 len(Extensions), Extensions
const entryVersion = 0

// entryValueOverhead is the value's framing beside Data and Extensions.
const entryValueOverhead = 2 + 1 + 4 + 4

// controlOverhead bounds a control batch's bytes beside its value: the
// batch header, the record's framing and the control key.
const controlOverhead = record.HeaderSize + 32 + record.ControlKeySize

// Errors a caller can match.
var (
	// ErrBadEntry is StoreLogs' refusal of a call: entries not following
	// the last index or each other, a term lower than the last one or
	// above 2^31-1 (a leader epoch is an int32), a command whose data is
	// not a batch, an entry too large for a batch. Nothing is stored.
	ErrBadEntry = errors.New("replica: entry refused")
	// ErrExtensions: a LogCommand entry carries Extensions, which a
	// producer batch cannot hold (see the package doc). It matches
	// ErrBadEntry too.
	ErrExtensions = errors.New("replica: a command entry with extensions")
	// ErrMiddleRange is DeleteRange's refusal of a range strictly inside
	// the log, which raft never asks for. Nothing is deleted.
	ErrMiddleRange = errors.New("replica: only a prefix or a suffix of the log may be deleted")
	// ErrNotAnEntry: a stored batch is a control batch that is not one of
	// raft's entries, or holds a malformed entry. It matches
	// seglog.ErrCorrupt.
	ErrNotAnEntry = fmt.Errorf("%w: a batch that is not a raft entry", seglog.ErrCorrupt)
)

// checkEntry refuses, before anything is written, an entry StoreLogs
// cannot store. maxBatch is the partition's MaxBatchBytes.
func checkEntry(l *raft.Log, maxBatch int) error {
	if l.Term > math.MaxInt32 {
		return fmt.Errorf("%w: entry %d has term %d, above the largest leader epoch %d", ErrBadEntry, l.Index, l.Term, math.MaxInt32)
	}
	if l.Index == 0 {
		return fmt.Errorf("%w: index 0", ErrBadEntry)
	}
	if l.Type != raft.LogCommand {
		if n := len(l.Data) + len(l.Extensions) + entryValueOverhead + controlOverhead; n > maxBatch {
			return fmt.Errorf("%w: %v entry %d needs a batch of %d bytes, the limit is %d", ErrBadEntry, l.Type, l.Index, n, maxBatch)
		}
		return nil
	}
	if len(l.Extensions) > 0 {
		return fmt.Errorf("%w: %w: entry %d", ErrBadEntry, ErrExtensions, l.Index)
	}
	b := record.Batch(l.Data)
	if len(b) > maxBatch {
		return fmt.Errorf("%w: %w: entry %d is a batch of %d bytes, the limit is %d", ErrBadEntry, seglog.ErrBatchTooLarge, l.Index, len(b), maxBatch)
	}
	// The CRC and framing are checked here so that a bad batch in the
	// middle of a call stores nothing; AppendEpochBatch checks them again
	// with the record walk.
	if err := b.Validate(); err != nil {
		return fmt.Errorf("%w: entry %d: %w", ErrBadEntry, l.Index, err)
	}
	if b.IsControl() {
		return fmt.Errorf("%w: entry %d: a command may not be a control batch", ErrBadEntry, l.Index)
	}
	if b.NumRecords() <= 0 || int64(b.LastOffsetDelta())+1 != int64(b.NumRecords()) {
		return fmt.Errorf("%w: entry %d: lastOffsetDelta %d with %d records", ErrBadEntry, l.Index, b.LastOffsetDelta(), b.NumRecords())
	}
	return nil
}

// buildControl encodes a non-command entry as a control batch of one
// record, into bld (Reset first). The record's timestamp is AppendedAt in
// milliseconds, -1 for a zero time.
func buildControl(bld *record.Builder, l *raft.Log, val []byte) (record.Batch, []byte, error) {
	val = binary.BigEndian.AppendUint16(val[:0], entryVersion)
	val = append(val, byte(l.Type))
	val = binary.BigEndian.AppendUint32(val, uint32(len(l.Data)))
	val = append(val, l.Data...)
	val = binary.BigEndian.AppendUint32(val, uint32(len(l.Extensions)))
	val = append(val, l.Extensions...)
	ts := int64(-1)
	if !l.AppendedAt.IsZero() {
		ts = l.AppendedAt.UnixMilli()
	}
	var key [record.ControlKeySize]byte
	bld.Reset()
	bld.SetControl(true)
	if err := bld.Add(record.Record{Timestamp: ts, Key: record.AppendControlKey(key[:0], ControlType), Value: val}); err != nil {
		return nil, val, err
	}
	b, err := bld.Build()
	return b, val, err
}

// decodeEntry fills out from a stored, CRC-checked batch. A command's Data
// is a copy of the batch; out's other byte slices are copies too.
func decodeEntry(b record.Batch, index uint64, out *raft.Log) error {
	*out = raft.Log{Index: index, Term: uint64(b.PartitionLeaderEpoch())}
	if !b.IsControl() {
		out.Type = raft.LogCommand
		out.Data = append([]byte(nil), b...)
		out.AppendedAt = fromMillis(b.MaxTimestamp())
		return nil
	}
	n := 0
	for r, err := range b.Records() {
		if err != nil {
			return fmt.Errorf("%w: at offset %d: %w", ErrNotAnEntry, b.BaseOffset(), err)
		}
		if n++; n > 1 {
			return fmt.Errorf("%w: control batch at offset %d holds more than one record", ErrNotAnEntry, b.BaseOffset())
		}
		_, typ, err := record.ParseControlKey(r.Key)
		if err != nil || typ != ControlType {
			return fmt.Errorf("%w: control batch at offset %d has type %v", ErrNotAnEntry, b.BaseOffset(), typ)
		}
		if err := decodeValue(r.Value, out); err != nil {
			return fmt.Errorf("%w: at offset %d: %s", ErrNotAnEntry, b.BaseOffset(), err)
		}
		out.AppendedAt = fromMillis(r.Timestamp)
	}
	if n == 0 {
		return fmt.Errorf("%w: empty control batch at offset %d", ErrNotAnEntry, b.BaseOffset())
	}
	return nil
}

// decodeValue parses an entry's value; lengths are checked against the
// bytes there, never trusted to size anything.
func decodeValue(v []byte, out *raft.Log) error {
	if len(v) < entryValueOverhead {
		return fmt.Errorf("value of %d bytes", len(v))
	}
	if ver := binary.BigEndian.Uint16(v); ver != entryVersion {
		return fmt.Errorf("value version %d, this build reads %d", ver, entryVersion)
	}
	out.Type = raft.LogType(v[2])
	if out.Type == raft.LogCommand {
		return errors.New("a command stored as a control batch")
	}
	v = v[3:]
	field := func() ([]byte, error) {
		if len(v) < 4 {
			return nil, errors.New("value cut short")
		}
		n := binary.BigEndian.Uint32(v)
		if uint64(n) > uint64(len(v)-4) {
			return nil, fmt.Errorf("a field of %d bytes in %d", n, len(v)-4)
		}
		f := v[4 : 4+n]
		v = v[4+n:]
		if n == 0 {
			return nil, nil
		}
		return append([]byte(nil), f...), nil
	}
	var err error
	if out.Data, err = field(); err != nil {
		return err
	}
	if out.Extensions, err = field(); err != nil {
		return err
	}
	if len(v) != 0 {
		return fmt.Errorf("%d bytes after the value", len(v))
	}
	return nil
}

func fromMillis(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
