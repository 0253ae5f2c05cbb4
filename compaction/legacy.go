package compaction

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/seglog/seglog/record"
)

// Legacy (v0/v1) messages, §2 of the format notes: [offset int64][size
// int32][crc uint32][magic int8][attributes int8][timestamp int64, v1
// only][key int32-prefixed][value int32-prefixed]. A compressed message is
// a wrapper whose value holds the inner messages; v0 inner offsets are
// absolute, v1 inner offsets relative, the wrapper's offset being that of
// the last inner message.

const (
	legacyCRCAt   = record.LogOverhead
	legacyMagicAt = legacyCRCAt + 4
	legacyCodecs  = 0x07
	legacyLogTime = 0x08 // v1: the timestamp is the log append time
)

// legacyMsg is one parsed legacy message.
type legacyMsg struct {
	offset     int64
	magic      int8
	attrs      int8
	ts         int64 // -1 for v0
	key, value []byte
	raw        []byte // the whole entry
}

func (m *legacyMsg) codec() record.Codec { return record.Codec(m.attrs & legacyCodecs) }

// parseLegacy parses one entry, checking its framing and CRC-32. Damage is
// a *record.CorruptionError with the position inside e.
func parseLegacy(e []byte) (legacyMsg, error) {
	bad := func(pos int, format string, args ...any) error {
		return &record.CorruptionError{Pos: int64(pos), Reason: fmt.Errorf(format, args...)}
	}
	if len(e) < legacyMagicAt+2 {
		return legacyMsg{}, bad(0, "legacy entry of %d bytes", len(e))
	}
	m := legacyMsg{offset: int64(binary.BigEndian.Uint64(e)), magic: int8(e[legacyMagicAt]),
		attrs: int8(e[legacyMagicAt+1]), ts: -1, raw: e}
	if int(binary.BigEndian.Uint32(e[8:]))+record.LogOverhead != len(e) {
		return m, bad(8, "legacy entry length does not match its %d bytes", len(e))
	}
	if want, got := binary.BigEndian.Uint32(e[legacyCRCAt:]), crc32.ChecksumIEEE(e[legacyMagicAt:]); want != got {
		return m, bad(legacyCRCAt, "legacy v%d entry: stored CRC-32 0x%08x, computed 0x%08x", m.magic, want, got)
	}
	p := legacyMagicAt + 2
	if m.magic == 1 {
		if len(e) < p+8 {
			return m, bad(p, "legacy v1 entry too short for its timestamp")
		}
		m.ts = int64(binary.BigEndian.Uint64(e[p:]))
		p += 8
	}
	var err error
	if m.key, p, err = legacyBytes(e, p, "key"); err != nil {
		return m, err
	}
	if m.value, p, err = legacyBytes(e, p, "value"); err != nil {
		return m, err
	}
	if p != len(e) {
		return m, bad(p, "legacy entry has %d bytes after its value", len(e)-p)
	}
	return m, nil
}

func legacyBytes(e []byte, p int, field string) ([]byte, int, error) {
	if len(e) < p+4 {
		return nil, p, &record.CorruptionError{Pos: int64(p), Reason: fmt.Errorf("legacy entry too short for its %s length", field)}
	}
	n := int32(binary.BigEndian.Uint32(e[p:]))
	p += 4
	if n < 0 {
		return nil, p, nil
	}
	if int64(n) > int64(len(e)-p) {
		return nil, p, &record.CorruptionError{Pos: int64(p - 4), Reason: fmt.Errorf("legacy %s of %d bytes, %d left", field, n, len(e)-p)}
	}
	return e[p : p+int(n) : p+int(n)], p + int(n), nil
}

// legacyInner expands a compressed wrapper into its messages, with
// absolute offsets (and, for a log-append-time v1 wrapper, its
// timestamp). buf is reused for the expansion; the messages alias it.
func legacyInner(w legacyMsg, buf []byte, out []legacyMsg) ([]legacyMsg, []byte, error) {
	data, err := legacyDecompress(buf[:0], w.codec(), w.value, record.DefaultMaxDecompressed)
	if err != nil {
		return out, data, err
	}
	start := len(out)
	for p := 0; p < len(data); {
		if len(data)-p < record.LogOverhead {
			return out, data, fmt.Errorf("%w: inner message cut short", errLegacyOpaque)
		}
		n := int(binary.BigEndian.Uint32(data[p+8:])) + record.LogOverhead
		if n < record.LogOverhead || n > len(data)-p {
			return out, data, fmt.Errorf("%w: inner message length", errLegacyOpaque)
		}
		m, err := parseLegacy(data[p : p+n : p+n])
		if err != nil || m.codec() != record.None || m.magic != w.magic {
			// Bytes inside a CRC-checked wrapper that do not parse: the
			// producer wrote them so; leave the wrapper as it is.
			return out, data, fmt.Errorf("%w: inner message: %v", errLegacyOpaque, err)
		}
		out = append(out, m)
		p += n
	}
	inner := out[start:]
	if len(inner) == 0 {
		return out, data, fmt.Errorf("%w: empty wrapper", errLegacyOpaque)
	}
	if w.magic == 1 {
		base := w.offset - inner[len(inner)-1].offset
		for i := range inner {
			inner[i].offset += base
			if w.attrs&legacyLogTime != 0 {
				inner[i].ts = w.ts
			}
		}
	}
	for i := 1; i < len(inner); i++ {
		if inner[i].offset <= inner[i-1].offset {
			return out, data, fmt.Errorf("%w: inner offsets out of order", errLegacyOpaque)
		}
	}
	if inner[len(inner)-1].offset != w.offset {
		return out, data, fmt.Errorf("%w: wrapper offset %d, last inner %d", errLegacyOpaque, w.offset, inner[len(inner)-1].offset)
	}
	return out, data, nil
}

// buildLegacyWrapper re-encodes a compressed wrapper holding kept (a
// non-empty subset of its inner messages, in order), as Kafka's cleaner
// does: same magic, codec and timestamp type; the wrapper's offset is the
// last kept message's; v1 inner offsets become relative to the first kept;
// a create-time v1 wrapper's timestamp is the largest kept. It appends the
// entry to dst.
func buildLegacyWrapper(dst []byte, w legacyMsg, kept []legacyMsg, scratch []byte) ([]byte, []byte, error) {
	inner := scratch[:0]
	first, last := kept[0].offset, kept[len(kept)-1].offset
	ts := int64(-1)
	for _, m := range kept {
		p := len(inner)
		inner = append(inner, m.raw...)
		off := m.offset
		if w.magic == 1 {
			off -= first
			ts = max(ts, m.ts)
		}
		binary.BigEndian.PutUint64(inner[p:], uint64(off))
	}
	if w.magic == 1 && w.attrs&legacyLogTime != 0 {
		ts = w.ts
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(last))
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // size, crc
	dst = append(dst, byte(w.magic), byte(w.attrs))
	if w.magic == 1 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	}
	dst = binary.BigEndian.AppendUint32(dst, 0xffffffff) // null key
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var err error
	if dst, err = legacyCompress(dst, w.codec(), inner); err != nil {
		return dst[:start], inner, err
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	binary.BigEndian.PutUint32(dst[start+8:], uint32(len(dst)-start-record.LogOverhead))
	binary.BigEndian.PutUint32(dst[start+legacyCRCAt:], crc32.ChecksumIEEE(dst[start+legacyMagicAt:]))
	return dst, inner, nil
}
