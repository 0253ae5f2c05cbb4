package record

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

// legacyEntry builds a legacy entry of magic with a null key and value.
func legacyEntry(magic int8) []byte {
	n := 26
	if magic == 1 {
		n = LegacyV1MinSize
	}
	e := make([]byte, n)
	binary.BigEndian.PutUint64(e, 7)
	binary.BigEndian.PutUint32(e[8:], uint32(n-LogOverhead))
	e[MagicOffset] = byte(magic)
	binary.BigEndian.PutUint32(e[n-8:], 0xffffffff) // key length -1
	binary.BigEndian.PutUint32(e[n-4:], 0xffffffff) // value length -1
	binary.BigEndian.PutUint32(e[LegacyCRCOffset:], crc32.ChecksumIEEE(e[MagicOffset:]))
	return e
}

// TestCheckLegacy: valid v0 and v1 entries pass; a flipped byte after the
// magic is a CRC mismatch at the CRC; a v1 entry shorter than its minimum
// is damage at its length field.
func TestCheckLegacy(t *testing.T) {
	for _, magic := range []int8{0, 1} {
		e := legacyEntry(magic)
		if err := CheckLegacy(e); err != nil {
			t.Fatalf("v%d: %v", magic, err)
		}
		e[MagicOffset+1] ^= 0x40
		var ce *CorruptionError
		var crc *LegacyCRCError
		if err := CheckLegacy(e); !errors.As(err, &ce) || ce.Pos != LegacyCRCOffset || !errors.As(err, &crc) || crc.Magic != magic || crc.Stored == crc.Computed {
			t.Fatalf("v%d with a flipped attribute byte: %v", magic, err)
		}
	}
	short := legacyEntry(0)
	short[MagicOffset] = 1
	var ce *CorruptionError
	if err := CheckLegacy(short); !errors.As(err, &ce) || ce.Pos != 8 || errors.As(err, new(*LegacyCRCError)) {
		t.Fatalf("a 26-byte v1 entry: %v", err)
	}
}
