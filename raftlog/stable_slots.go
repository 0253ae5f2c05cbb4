package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/seglog/seglog/internal/crc32c"
)

// The quorum-state file is two slots of equal, fixed size, written in
// turn: each Set writes the whole state into the slot that does not hold
// the newest one and fdatasyncs once. The file's size never changes after
// it is created, so that fdatasync flushes data only. A power loss tears
// at most the slot being written; the other one still holds the state
// before the Set.
//
// A slot:
//
//	0   magic "SGQS"
//	4   version (1 byte), then 3 zero bytes
//	8   CRC-32C of bytes 12 .. 28+length
//	12  slot size, uint32 (the file is two of them)
//	16  sequence number, uint64: the higher valid one is the state
//	24  payload length, uint32
//	28  payload: the encoded state
//
// and the rest of the slot is unused (stale bytes of older states, or
// zeros). Integers are big-endian, as Kafka's are.
const (
	stableMagic   = "SGQS"
	stableVersion = 1

	slotHeader = 28
	// minSlot is a new file's slot size: one page, far more than raft's
	// three keys take (about 60 bytes).
	minSlot = 4 << 10
	// maxSlot bounds a slot, and so what Open reads (two of them) and
	// what a caller may Set in all: a larger state is refused.
	maxSlot = 16 << 20
	// maxStableFile bounds the read of the file, in either format: the
	// JSON one was bounded by 16 MiB too.
	maxStableFile = 2 * maxSlot
)

// ErrBadStableFile matches every *StableFileError.
var ErrBadStableFile = errors.New("raftlog: unreadable stable-store file")

// StableFileError is a quorum-state file that Open cannot read: neither of
// its two slots holds a valid state, or it is in neither the slot format
// nor the older JSON one. Open refuses it rather than start raft with a
// forgotten term and vote; the error matches ErrBadStableFile.
type StableFileError struct {
	// Path is the file.
	Path string
	// Pos is the byte position of the first fault found.
	Pos int64
	// Reason says what is wrong, for each slot.
	Reason string
	// Err is the underlying error, if any (vfs.ErrFileTooLarge, a JSON
	// syntax error).
	Err error
}

// Error names the file, the byte and the fault.
func (e *StableFileError) Error() string {
	return fmt.Sprintf("raftlog: %s at byte %d: %s; the term and vote raft needs cannot be read, so the store is not opened", e.Path, e.Pos, e.Reason)
}

// Unwrap makes the error match ErrBadStableFile, and Err.
func (e *StableFileError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrBadStableFile, e.Err}
	}
	return []error{ErrBadStableFile}
}

// slotSizeFor is the slot size a file must have to hold a slot of need
// bytes: at least cur (slots never shrink) and minSlot, doubled until it
// fits; 0 if it would exceed maxSlot.
func slotSizeFor(cur, need int) int {
	size := max(cur, minSlot)
	for size < need {
		size *= 2
	}
	if size > maxSlot {
		return 0
	}
	return size
}

// appendState encodes the state after dst: the bytes keys (a uvarint
// count, then each key and value as uvarint length and bytes), then the
// uint64 keys (a count, then each key and its value in 8 bytes).
func appendState(dst []byte, b map[string][]byte, u map[string]uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	for k, v := range b {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(u)))
	for k, v := range u {
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint64(dst, v)
	}
	return dst
}

// stateDecoder reads appendState's encoding; every length is checked
// against the bytes left before anything is allocated, so a damaged
// payload costs at most its own size.
type stateDecoder struct {
	p   []byte
	off int
	err string
}

func (d *stateDecoder) fail(at int, reason string) {
	if d.err == "" {
		d.off, d.err = at, reason
	}
}

func (d *stateDecoder) uvarint(what string) uint64 {
	if d.err != "" {
		return 0
	}
	v, n := binary.Uvarint(d.p[d.off:])
	if n <= 0 {
		d.fail(d.off, "bad "+what)
		return 0
	}
	d.off += n
	return v
}

func (d *stateDecoder) bytes(what string) []byte {
	at := d.off
	n := d.uvarint(what + " length")
	if d.err != "" {
		return nil
	}
	if n > uint64(len(d.p)-d.off) {
		d.fail(at, fmt.Sprintf("%s length %d runs past the payload", what, n))
		return nil
	}
	b := d.p[d.off : d.off+int(n)]
	d.off += int(n)
	return b
}

// decodeState decodes a payload; on failure it returns the offset in the
// payload of the fault and what it is.
func decodeState(p []byte) (map[string][]byte, map[string]uint64, int, string) {
	d := &stateDecoder{p: p}
	b := map[string][]byte{}
	u := map[string]uint64{}
	// Each entry takes at least two bytes, so a count is checked by
	// running out of payload, not trusted for an allocation.
	for n := d.uvarint("key count"); n > 0 && d.err == ""; n-- {
		at := d.off
		k := d.bytes("key")
		v := d.bytes("value")
		if d.err != "" {
			break
		}
		if _, dup := b[string(k)]; dup {
			d.fail(at, fmt.Sprintf("key %q appears twice", k))
			break
		}
		b[string(k)] = append([]byte{}, v...)
	}
	for n := d.uvarint("uint64 key count"); n > 0 && d.err == ""; n-- {
		at := d.off
		k := d.bytes("key")
		if d.err != "" {
			break
		}
		if len(d.p)-d.off < 8 {
			d.fail(d.off, "uint64 value runs past the payload")
			break
		}
		if _, dup := u[string(k)]; dup {
			d.fail(at, fmt.Sprintf("uint64 key %q appears twice", k))
			break
		}
		u[string(k)] = binary.BigEndian.Uint64(d.p[d.off:])
		d.off += 8
	}
	if d.err == "" && d.off != len(p) {
		d.fail(d.off, fmt.Sprintf("%d bytes after the state", len(p)-d.off))
	}
	if d.err != "" {
		return nil, nil, d.off, d.err
	}
	return b, u, 0, ""
}

// putSlotHeader fills buf[:slotHeader] for the payload in buf[slotHeader:].
func putSlotHeader(buf []byte, slot int, seq uint64) {
	copy(buf, stableMagic)
	buf[4] = stableVersion
	buf[5], buf[6], buf[7] = 0, 0, 0
	binary.BigEndian.PutUint32(buf[12:], uint32(slot))
	binary.BigEndian.PutUint64(buf[16:], seq)
	binary.BigEndian.PutUint32(buf[24:], uint32(len(buf)-slotHeader))
	binary.BigEndian.PutUint32(buf[8:], crc32c.Checksum(buf[12:]))
}

// slotState is one decoded slot.
type slotState struct {
	seq   uint64
	bytes map[string][]byte
	u64   map[string]uint64
}

// readSlot decodes the slot of the given size in b (len(b) == slot). A
// bad slot returns the offset in b of the fault and what it is.
func readSlot(b []byte, slot int) (slotState, int, string) {
	if len(b) < slotHeader || len(b) != slot {
		return slotState{}, 0, fmt.Sprintf("slot of %d bytes", len(b))
	}
	if string(b[:4]) != stableMagic {
		return slotState{}, 0, fmt.Sprintf("magic %q, want %q", b[:4], stableMagic)
	}
	if b[4] != stableVersion || b[5]|b[6]|b[7] != 0 {
		return slotState{}, 4, fmt.Sprintf("version %d (flags % x), want %d", b[4], b[5:8], stableVersion)
	}
	if got := binary.BigEndian.Uint32(b[12:]); got != uint32(slot) {
		return slotState{}, 12, fmt.Sprintf("slot size %d in a file of %d-byte slots", got, slot)
	}
	n := binary.BigEndian.Uint32(b[24:])
	if uint64(n) > uint64(slot-slotHeader) {
		return slotState{}, 24, fmt.Sprintf("payload length %d exceeds the slot's %d", n, slot-slotHeader)
	}
	end := slotHeader + int(n)
	if got, want := crc32c.Checksum(b[12:end]), binary.BigEndian.Uint32(b[8:]); got != want {
		return slotState{}, 8, fmt.Sprintf("checksum %08x, computed %08x (a torn or damaged slot)", want, got)
	}
	bm, um, at, reason := decodeState(b[slotHeader:end])
	if reason != "" {
		return slotState{}, slotHeader + at, "payload: " + reason
	}
	return slotState{seq: binary.BigEndian.Uint64(b[16:]), bytes: bm, u64: um}, 0, ""
}

// isSlotFileSize reports a size the slot format can have: two slots of a
// power of two between minSlot and maxSlot.
func isSlotFileSize(n int) bool {
	slot := n / 2
	return n%2 == 0 && slot >= minSlot && slot <= maxSlot && bits.OnesCount(uint(slot)) == 1
}

// readSlots picks the valid slot with the higher sequence number from a
// whole slot file. It returns the index of that slot and, when the other
// slot is invalid but not blank (torn by a crash during a Set, or
// damaged), what is wrong with it; or a *StableFileError for path when
// neither is valid.
func readSlots(path string, data []byte) (slotState, int, string, error) {
	if !isSlotFileSize(len(data)) {
		return slotState{}, 0, "", &StableFileError{Path: path, Pos: int64(len(data)),
			Reason: fmt.Sprintf("size %d is not two slots of a power of two between %d and %d bytes", len(data), minSlot, maxSlot)}
	}
	slot := len(data) / 2
	var (
		st     [2]slotState
		ok     [2]bool
		faults [2]string
		pos    [2]int64
	)
	for i := range 2 {
		base := i * slot
		s, at, reason := readSlot(data[base:base+slot], slot)
		st[i], ok[i] = s, reason == ""
		pos[i] = int64(base + at)
		faults[i] = fmt.Sprintf("slot %d (byte %d): %s", i, pos[i], reason)
	}
	chosen := -1
	switch {
	case ok[0] && (!ok[1] || st[0].seq >= st[1].seq):
		chosen = 0
	case ok[1]:
		chosen = 1
	}
	if chosen >= 0 {
		other, note := 1-chosen, ""
		if !ok[other] && !blank(data[other*slot:(other+1)*slot]) {
			note = faults[other]
		}
		return st[chosen], chosen, note, nil
	}
	return slotState{}, 0, "", &StableFileError{Path: path, Pos: pos[0],
		Reason: "both slots are damaged: " + faults[0] + "; " + faults[1]}
}

// blank reports a slot never written: all zeros, as a new file's second
// slot was before the first Set wrote it.
func blank(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
