package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/record"
)

// Header keys of the raft.Log fields that have no Kafka record field.
const (
	hdrType   = "raft.type"
	hdrExt    = "raft.ext"
	hdrAt     = "raft.at"
	hdrCommit = "raft.commit"
)

// ErrBadEntry reports an entry that cannot be stored (index 0, a term over
// 2^31−1, more bytes than a batch holds, an index that does not follow the
// log) or a stored record that does not decode as one.
var ErrBadEntry = errors.New("raftlog: bad entry")

// toOffset and toIndex are the only conversions between raft indexes
// (first entry 1) and Kafka offsets (first record 0), as KRaft numbers its
// log.
func toOffset(index uint64) int64 { return int64(index - 1) }
func toIndex(offset int64) uint64 { return uint64(offset) + 1 }

// checkEntry refuses what the mapping cannot represent.
func checkEntry(l *raft.Log) error {
	switch {
	case l.Index == 0:
		return fmt.Errorf("%w: index 0 (raft indexes start at 1)", ErrBadEntry)
	case l.Index > math.MaxInt64:
		return fmt.Errorf("%w: index %d is beyond Kafka's offsets", ErrBadEntry, l.Index)
	case l.Term > math.MaxInt32:
		return fmt.Errorf("%w: term %d does not fit a partition leader epoch", ErrBadEntry, l.Term)
	}
	return nil
}

// encode turns l into a record; commit, when non-zero, is the commit index
// staged with this batch. hdrs is scratch space for the headers. now (ms)
// is the record timestamp of an entry without a usable AppendedAt (zero or
// before 1970): Kafka tools and the time index want a real time, and the
// missing raft.at header keeps AppendedAt's zero exact.
func encode(l *raft.Log, commit uint64, hdrs []record.Header, now int64) record.Record {
	hdrs = hdrs[:0]
	if l.Type != raft.LogCommand {
		hdrs = append(hdrs, record.Header{Key: hdrType, Value: []byte{byte(l.Type)}})
	}
	if len(l.Extensions) > 0 {
		hdrs = append(hdrs, record.Header{Key: hdrExt, Value: l.Extensions})
	}
	ts := now
	if !l.AppendedAt.IsZero() {
		var at [12]byte
		binary.BigEndian.PutUint64(at[:], uint64(l.AppendedAt.Unix()))
		binary.BigEndian.PutUint32(at[8:], uint32(l.AppendedAt.Nanosecond()))
		hdrs = append(hdrs, record.Header{Key: hdrAt, Value: at[:]})
		if ms := l.AppendedAt.UnixMilli(); ms > 0 {
			ts = ms
		}
	}
	if commit != 0 {
		hdrs = append(hdrs, record.Header{Key: hdrCommit, Value: binary.BigEndian.AppendUint64(nil, commit)})
	}
	return record.Record{Timestamp: ts, Value: l.Data, Headers: hdrs}
}

// decode fills out from r, stored in a batch of the given epoch. The
// record's slices are copied: they alias a buffer the caller reuses.
func decode(r record.Record, epoch int32, out *raft.Log) error {
	*out = raft.Log{Index: toIndex(r.Offset), Term: uint64(epoch), Type: raft.LogCommand}
	if epoch < 0 {
		return fmt.Errorf("%w: offset %d: batch has no leader epoch", ErrBadEntry, r.Offset)
	}
	if r.Value != nil {
		out.Data = append(make([]byte, 0, len(r.Value)), r.Value...)
	}
	for _, h := range r.Headers {
		switch h.Key {
		case hdrType:
			if len(h.Value) != 1 {
				return fmt.Errorf("%w: offset %d: %s header of %d bytes", ErrBadEntry, r.Offset, hdrType, len(h.Value))
			}
			out.Type = raft.LogType(h.Value[0])
		case hdrExt:
			out.Extensions = append([]byte(nil), h.Value...)
		case hdrAt:
			if len(h.Value) != 12 {
				return fmt.Errorf("%w: offset %d: %s header of %d bytes", ErrBadEntry, r.Offset, hdrAt, len(h.Value))
			}
			sec := int64(binary.BigEndian.Uint64(h.Value))
			nsec := int64(binary.BigEndian.Uint32(h.Value[8:]))
			out.AppendedAt = time.Unix(sec, nsec)
		}
	}
	return nil
}

// commitOf returns the commit index r carries, 0 if none.
func commitOf(r record.Record) uint64 {
	for _, h := range r.Headers {
		if h.Key == hdrCommit && len(h.Value) == 8 {
			return binary.BigEndian.Uint64(h.Value)
		}
	}
	return 0
}
