package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	pb "go.etcd.io/raft/v3/raftpb"
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
//	int16 version, uint8 etcd raft EntryType, Data (the rest of the value)
//
// Version 0 was hashicorp raft's layout, never written by this one.
const entryVersion = 1

// entryValueOverhead is the value's framing beside Data.
const entryValueOverhead = 2 + 1

// Errors a caller can match.
var (
	// ErrBadEntry is Append's refusal of a call: entries not following
	// each other or the log, a term lower than the one before it or above
	// 2^31-1 (a leader epoch is an int32), a producer entry whose data is
	// not a batch, an entry too large for a batch. Nothing is stored.
	ErrBadEntry = errors.New("replica: entry refused")
	// ErrNotAnEntry: a stored batch is a control batch that is not one of
	// raft's entries, or holds a malformed entry. It matches
	// seglog.ErrCorrupt.
	ErrNotAnEntry = fmt.Errorf("%w: a batch that is not a raft entry", seglog.ErrCorrupt)
)

// isProducer reports whether e is a producer batch: a normal entry with
// data that is not a command (a DeleteRecords entry). The empty normal
// entry is the one a new leader appends.
func isProducer(e *pb.Entry) bool {
	return e.GetType() == pb.EntryType_EntryNormal && len(e.GetData()) > 0 && !isCommand(e.GetData())
}

// A DeleteRecords entry moves the partition's log start on every replica
// that applies it (docs/cluster-partitions.md, "DeleteRecords"). It is a
// normal entry whose data is
//
//	"SGDR", int16 version (1), int64 offset
//
// 14 bytes, fewer than any batch's header (record.HeaderSize), so no
// producer batch is ever taken for one: a producer entry is a whole,
// checked batch. It is stored as a control batch like raft's other
// entries (entry type EntryNormal, the data after it), which consumers
// skip.
const (
	commandMagic   = "SGDR"
	commandVersion = 1
	commandSize    = len(commandMagic) + 2 + 8
)

// isCommand reports whether data is a DeleteRecords entry's.
func isCommand(data []byte) bool {
	return len(data) == commandSize && string(data[:len(commandMagic)]) == commandMagic &&
		binary.BigEndian.Uint16(data[len(commandMagic):]) == commandVersion
}

// DeleteRecordsEntry is the data of an entry that moves the log start to
// offset, to propose.
func DeleteRecordsEntry(offset int64) []byte {
	b := append(make([]byte, 0, commandSize), commandMagic...)
	b = binary.BigEndian.AppendUint16(b, commandVersion)
	return binary.BigEndian.AppendUint64(b, uint64(offset))
}

// DeleteRecordsOffset returns the offset a DeleteRecords entry moves the
// log start to, and whether e is one. A negative offset is returned as
// stored: the applier refuses it.
func DeleteRecordsOffset(e *pb.Entry) (int64, bool) {
	if e.GetType() != pb.EntryType_EntryNormal || !isCommand(e.GetData()) {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(e.GetData()[len(commandMagic)+2:])), true
}

// isEmpty reports whether e is an empty normal entry, the one a new
// leader appends: it is stored as no batch (an anchor keeps it).
func isEmpty(e *pb.Entry) bool {
	return e.GetType() == pb.EntryType_EntryNormal && len(e.GetData()) == 0
}

// checkEntry refuses, before anything is written, an entry Append cannot
// store. checked says the entry's batch is this node's own proposal,
// checked whole before it was proposed (Proposed), whose CRC is not
// computed again. No entry is held to the partition's MaxBatchBytes: a
// producer's batch was held to max.message.bytes by the leader that
// proposed it, and a limit lowered since (or raised since this Store
// opened) must not make a replica refuse it, for ever, at every retry
// (seglog.Log.AppendEpochBatch keeps what its leader accepted); raft's
// own entries are not a producer's.
func checkEntry(e *pb.Entry, checked bool) error {
	if e.GetTerm() > math.MaxInt32 {
		return fmt.Errorf("%w: entry %d has term %d, above the largest leader epoch %d", ErrBadEntry, e.GetIndex(), e.GetTerm(), math.MaxInt32)
	}
	if e.GetIndex() == 0 || e.GetIndex() > math.MaxInt64 {
		return fmt.Errorf("%w: index %d", ErrBadEntry, e.GetIndex())
	}
	if !isProducer(e) {
		return nil
	}
	b := record.Batch(e.GetData())
	// The CRC and framing are checked here so that a bad batch in the
	// middle of a call stores nothing; AppendEpochBatches checks them
	// again with the record walk. A batch this node proposed was checked
	// whole before it was proposed (Proposed): only the header this
	// check and the append read is made sure of.
	if checked {
		if len(b) < record.HeaderSize || int64(b.BatchLength()) != int64(len(b))-record.LogOverhead {
			return fmt.Errorf("%w: entry %d: a proposed batch of %d bytes with length field %d", ErrBadEntry, e.GetIndex(), len(b), b.BatchLength())
		}
	} else if err := b.Validate(); err != nil {
		return fmt.Errorf("%w: entry %d: %w", ErrBadEntry, e.GetIndex(), err)
	}
	if b.IsControl() {
		return fmt.Errorf("%w: entry %d: a producer entry may not be a control batch", ErrBadEntry, e.GetIndex())
	}
	if b.NumRecords() <= 0 || int64(b.LastOffsetDelta())+1 != int64(b.NumRecords()) {
		return fmt.Errorf("%w: entry %d: lastOffsetDelta %d with %d records", ErrBadEntry, e.GetIndex(), b.LastOffsetDelta(), b.NumRecords())
	}
	return nil
}

// buildControl encodes a raft entry as a control batch of one record, into
// bld (Reset first). The record has no timestamp (-1): raft's entries are
// not the producers' and must not move the time index.
func buildControl(bld *record.Builder, e *pb.Entry, val []byte) (record.Batch, []byte, error) {
	val = binary.BigEndian.AppendUint16(val[:0], entryVersion)
	val = append(val, byte(e.GetType()))
	val = append(val, e.GetData()...)
	var key [record.ControlKeySize]byte
	bld.Reset()
	bld.SetControl(true)
	if err := bld.Add(record.Record{Timestamp: -1, Key: record.AppendControlKey(key[:0], ControlType), Value: val}); err != nil {
		return nil, val, err
	}
	b, err := bld.Build()
	return b, val, err
}

// decodeEntry makes the entry index from a stored, CRC-checked batch. Its
// Data is a copy. Type is left unset for a normal entry, and Data nil when
// empty, as raft makes them, so that an entry's size (which Entries'
// maxSize counts) is the one raft proposed.
func decodeEntry(b record.Batch, index uint64) (*pb.Entry, error) {
	e := &pb.Entry{Index: new(index), Term: new(uint64(max(b.PartitionLeaderEpoch(), 0)))}
	if !b.IsControl() {
		e.Data = append([]byte(nil), b...)
		return e, nil
	}
	n := 0
	for r, err := range b.Records() {
		if err != nil {
			return nil, fmt.Errorf("%w: at offset %d: %w", ErrNotAnEntry, b.BaseOffset(), err)
		}
		if n++; n > 1 {
			return nil, fmt.Errorf("%w: control batch at offset %d holds more than one record", ErrNotAnEntry, b.BaseOffset())
		}
		_, typ, err := record.ParseControlKey(r.Key)
		if err != nil || typ != ControlType {
			return nil, fmt.Errorf("%w: control batch at offset %d has type %v", ErrNotAnEntry, b.BaseOffset(), typ)
		}
		if err := decodeValue(r.Value, e); err != nil {
			return nil, fmt.Errorf("%w: at offset %d: %s", ErrNotAnEntry, b.BaseOffset(), err)
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: empty control batch at offset %d", ErrNotAnEntry, b.BaseOffset())
	}
	return e, nil
}

// decodeValue parses an entry's value into e.
func decodeValue(v []byte, e *pb.Entry) error {
	if len(v) < entryValueOverhead {
		return fmt.Errorf("value of %d bytes", len(v))
	}
	if ver := binary.BigEndian.Uint16(v); ver != entryVersion {
		return fmt.Errorf("value version %d, this build reads %d", ver, entryVersion)
	}
	typ := pb.EntryType(v[2])
	switch typ {
	case pb.EntryType_EntryNormal:
		// An empty one is never stored (an anchor keeps it); one with
		// data only as a command.
		if len(v) > entryValueOverhead && !isCommand(v[entryValueOverhead:]) {
			return errors.New("a normal entry with data stored as a control batch")
		}
	case pb.EntryType_EntryConfChange, pb.EntryType_EntryConfChangeV2:
		e.Type = typ.Enum()
	default:
		return fmt.Errorf("entry type %d", typ)
	}
	if len(v) > entryValueOverhead {
		e.Data = append([]byte(nil), v[entryValueOverhead:]...)
	}
	return nil
}
