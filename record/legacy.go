package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Legacy (v0/v1) message framing, as far as a log reader checks it:
// offset(8) size(4) crc(4) magic(1) attributes(1) [timestamp(8), v1 only]
// key length(4) key value length(4) value. The CRC-32 (IEEE) covers the
// bytes from the magic byte to the end.
const (
	// LegacyCRCOffset is the position of a legacy entry's CRC-32.
	LegacyCRCOffset = LogOverhead
	// LegacyV1MinSize is the size of the smallest v1 entry: null key and
	// value. (The smallest v0 entry is PeekEntry's minimum.)
	LegacyV1MinSize = LogOverhead + 22
)

// LegacyCRCError is a legacy entry whose stored CRC-32 is not the one its
// bytes give.
type LegacyCRCError struct {
	Magic            int8
	Stored, Computed uint32
}

// Error gives the stored and the computed CRC.
func (e *LegacyCRCError) Error() string {
	return fmt.Sprintf("legacy v%d entry: stored CRC-32 0x%08x, computed 0x%08x", e.Magic, e.Stored, e.Computed)
}

// CheckLegacy verifies a whole legacy (v0/v1) entry, framed by PeekEntry,
// as Kafka's loader does: a v1 entry is at least LegacyV1MinSize bytes,
// and its CRC-32 matches. It is the one legacy check: recovery, fsck and
// compaction call it. Damage is a *CorruptionError positioned in the
// entry, at its length field (8) for a short v1 entry, at its CRC
// (LegacyCRCOffset) with a *LegacyCRCError reason for a CRC mismatch.
func CheckLegacy(entry []byte) error {
	if len(entry) < PeekSize {
		return &CorruptionError{Pos: offBatchLength, Reason: fmt.Errorf("legacy entry of %d bytes, below the minimum %d", len(entry), PeekSize)}
	}
	magic := int8(entry[MagicOffset])
	if magic == 1 && len(entry) < LegacyV1MinSize {
		return &CorruptionError{Pos: offBatchLength, Reason: fmt.Errorf("v1 entry of %d bytes, below the minimum %d", len(entry), LegacyV1MinSize)}
	}
	stored := binary.BigEndian.Uint32(entry[LegacyCRCOffset:])
	if computed := crc32.ChecksumIEEE(entry[MagicOffset:]); computed != stored {
		return &CorruptionError{Pos: LegacyCRCOffset, Reason: &LegacyCRCError{Magic: magic, Stored: stored, Computed: computed}}
	}
	return nil
}
