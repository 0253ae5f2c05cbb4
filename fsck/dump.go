package fsck

import (
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/seglog/seglog/layout"
)

// IndexEntry is one decoded entry of an index file.
type IndexEntry struct {
	// Pos is the entry's byte position in the index file.
	Pos int64
	// Offset is the absolute offset the entry names.
	Offset int64
	// Position is the .log position of an offset-index entry.
	Position int64
	// Timestamp is the timestamp of a time-index entry.
	Timestamp int64
}

// FileKind classifies a segment-directory file by name: ".log", ".index",
// ".timeindex", ".txnindex", ".snapshot" (ignoring a .deleted, .cleaned or
// .swap suffix) with the base offset in its name; ok is false for other
// names.
func FileKind(name string) (kind string, base int64, ok bool) {
	f, ok, _ := layout.ParseSegmentFile(filepath.Base(name))
	return f.Kind, f.Base, ok
}

// Leftover says whether name is the leftover of an interrupted deletion,
// compaction or swap (a segment file with a .deleted, .cleaned or .swap
// suffix), and what the log's recovery does with it: the words fsck
// reports it with.
func Leftover(name string) (detail string, ok bool) {
	f, ok, _ := layout.ParseSegmentFile(filepath.Base(name))
	if !ok || f.Temp == "" {
		return "", false
	}
	return leftoverDetail(f.Temp), true
}

// DecodeIndex decodes the bytes of an .index (timeIndex false) or
// .timeindex file of the segment at base. Trailing all-zero entries (a
// preallocated, untrimmed file) are not returned; zeros counts them, and
// partial counts the bytes of an incomplete final entry.
func DecodeIndex(data []byte, base int64, timeIndex bool) (entries []IndexEntry, zeros, partial int) {
	es := 8
	if timeIndex {
		es = 12
	}
	n := len(data) / es
	partial = len(data) % es
	k := n
	for k > 0 && allZero(data[(k-1)*es:k*es]) {
		k--
	}
	entries = make([]IndexEntry, 0, k)
	for i := 0; i < k; i++ {
		e := data[i*es:]
		if timeIndex {
			entries = append(entries, IndexEntry{Pos: int64(i * es), Timestamp: int64(binary.BigEndian.Uint64(e)),
				Offset: base + int64(int32(binary.BigEndian.Uint32(e[8:])))})
		} else {
			entries = append(entries, IndexEntry{Pos: int64(i * es), Offset: base + int64(int32(binary.BigEndian.Uint32(e))),
				Position: int64(int32(binary.BigEndian.Uint32(e[4:])))})
		}
	}
	return entries, n - k, partial
}

// TxnEntry is one entry of a .txnindex file.
type TxnEntry struct {
	Pos                                             int64
	Version                                         int16
	ProducerID, FirstOffset, LastOffset, LastStable int64
}

// DecodeTxnIndex decodes a .txnindex file's 34-byte entries; partial counts
// the bytes of an incomplete final entry.
func DecodeTxnIndex(data []byte) (entries []TxnEntry, partial int) {
	for i := 0; i+34 <= len(data); i += 34 {
		e := data[i:]
		entries = append(entries, TxnEntry{Pos: int64(i), Version: int16(binary.BigEndian.Uint16(e)),
			ProducerID: int64(binary.BigEndian.Uint64(e[2:])), FirstOffset: int64(binary.BigEndian.Uint64(e[10:])),
			LastOffset: int64(binary.BigEndian.Uint64(e[18:])), LastStable: int64(binary.BigEndian.Uint64(e[26:]))})
	}
	return entries, len(data) % 34
}

// String renders an entry for dumps.
func (e IndexEntry) String() string {
	return fmt.Sprintf("offset: %d position: %d", e.Offset, e.Position)
}
