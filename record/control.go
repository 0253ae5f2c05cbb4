package record

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record, from its key.
type ControlType int16

// Control record types. Readers ignore types they do not know.
const (
	ControlAbort          ControlType = 0
	ControlCommit         ControlType = 1
	ControlLeaderChange   ControlType = 2
	ControlSnapshotHeader ControlType = 3
	ControlSnapshotFooter ControlType = 4
	ControlKRaftVersion   ControlType = 5
	ControlKRaftVoters    ControlType = 6
)

// String names the type ("ABORT", "COMMIT", ...).
func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	case ControlLeaderChange:
		return "LEADER_CHANGE"
	case ControlSnapshotHeader:
		return "SNAPSHOT_HEADER"
	case ControlSnapshotFooter:
		return "SNAPSHOT_FOOTER"
	case ControlKRaftVersion:
		return "KRAFT_VERSION"
	case ControlKRaftVoters:
		return "KRAFT_VOTERS"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// ControlKeySize is the size of a control record's key: int16 version,
// int16 type.
const ControlKeySize = 4

// ParseControlKey decodes the key of a control record. Versions above 0
// are accepted (the layout of the first two fields is fixed); a negative
// version or a short key is corruption.
func ParseControlKey(key []byte) (version int16, typ ControlType, err error) {
	if len(key) < ControlKeySize {
		return 0, 0, &CorruptionError{Reason: fmt.Errorf("control key of %d bytes, need %d", len(key), ControlKeySize)}
	}
	version = int16(binary.BigEndian.Uint16(key))
	if version < 0 {
		return 0, 0, &CorruptionError{Reason: fmt.Errorf("control key version %d", version)}
	}
	return version, ControlType(binary.BigEndian.Uint16(key[2:])), nil
}

// Marker is a transaction marker: the single record of a control batch
// that commits or aborts a producer's transaction.
type Marker struct {
	Type             ControlType // ControlCommit or ControlAbort
	Version          int16       // version of the marker value
	CoordinatorEpoch int32
}

// markerValueSize is the v0 value: int16 version, int32 coordinator epoch.
const markerValueSize = 6

// ParseMarker decodes a COMMIT or ABORT control record. Later value
// versions may append fields, which are ignored, as Kafka does. Errors are
// *CorruptionError values with Pos 0: they concern the record's key or
// value, whose position in the batch the caller knows.
func ParseMarker(r Record) (Marker, error) {
	_, typ, err := ParseControlKey(r.Key)
	if err != nil {
		return Marker{}, err
	}
	if typ != ControlCommit && typ != ControlAbort {
		return Marker{}, &CorruptionError{Reason: fmt.Errorf("control type %v is not a transaction marker", typ)}
	}
	if len(r.Value) < markerValueSize {
		return Marker{}, &CorruptionError{Reason: fmt.Errorf("%v marker value of %d bytes, need %d", typ, len(r.Value), markerValueSize)}
	}
	v := int16(binary.BigEndian.Uint16(r.Value))
	if v < 0 {
		return Marker{}, &CorruptionError{Reason: fmt.Errorf("%v marker version %d", typ, v)}
	}
	return Marker{Type: typ, Version: v, CoordinatorEpoch: int32(binary.BigEndian.Uint32(r.Value[2:]))}, nil
}

// AppendControlKey appends a version-0 control key of type t.
func AppendControlKey(dst []byte, t ControlType) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(dst, 0), uint16(t))
}

// AppendMarkerValue appends a transaction marker's value (version m.Version,
// coordinator epoch).
func AppendMarkerValue(dst []byte, m Marker) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(m.Version))
	return binary.BigEndian.AppendUint32(dst, uint32(m.CoordinatorEpoch))
}

// BuildMarker builds a control batch holding one transaction marker for
// the given producer, with record offset delta 0 and timestamp ts, into
// bld (which is Reset first and left marked as a transactional control
// batch). Kafka writes markers uncompressed; bld's codec is used as is.
func BuildMarker(bld *Builder, m Marker, producerID int64, producerEpoch int16, ts int64) (Batch, error) {
	bld.Reset()
	bld.SetControl(true)
	bld.SetTransactional(true)
	bld.SetProducer(producerID, producerEpoch, -1)
	var key [ControlKeySize]byte
	var val [markerValueSize]byte
	if err := bld.Add(Record{Offset: bld.baseOffset, Timestamp: ts,
		Key: AppendControlKey(key[:0], m.Type), Value: AppendMarkerValue(val[:0], m)}); err != nil {
		return nil, err
	}
	return bld.Build()
}
