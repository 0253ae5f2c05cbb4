package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Encoding errors. Every refusal of Decode matches one of them, so a caller
// can tell an entry written by a newer version (ErrUnsupportedVersion,
// ErrUnknownCommand) from damage (ErrBadEncoding).
var (
	// ErrBadEncoding reports bytes that are not a command or snapshot of
	// a known version: truncated, trailing bytes, a length past the end,
	// a duplicate map key, a value out of range.
	ErrBadEncoding = errors.New("meta: bad encoding")
	// ErrUnsupportedVersion reports an encoding version this code does
	// not know, as a newer node may write; it is refused, never guessed.
	ErrUnsupportedVersion = errors.New("meta: unsupported encoding version")
	// ErrUnknownCommand reports a command type this code does not know.
	ErrUnknownCommand = errors.New("meta: unknown command type")
)

// MaxCommandBytes bounds one encoded command. The largest command is a
// CreateTopic of store.MaxPartitions partitions, a few bytes per replica
// (under 1 MiB at replication factor 3); the bound keeps an entry well
// inside a batch of the metadata log (DefaultSegmentBytes).
const MaxCommandBytes = 4 << 20

// writer appends the encoding's primitives to a buffer. Integers are
// varints (zigzag for signed), strings and byte slices a uvarint length
// and the bytes, so a small command is a few dozen bytes.
type writer struct{ b []byte }

func (w *writer) u8(v uint8)       { w.b = append(w.b, v) }
func (w *writer) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *writer) str(s string)     { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *writer) bool(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

func (w *writer) int32s(v []int32) {
	w.uvarint(uint64(len(v)))
	for _, x := range v {
		w.varint(int64(x))
	}
}

func (w *writer) strs(v []string) {
	w.uvarint(uint64(len(v)))
	for _, s := range v {
		w.str(s)
	}
}

// strMap writes a map in sorted key order, so equal maps encode equally
// on every node.
func (w *writer) strMap(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.uvarint(uint64(len(keys)))
	for _, k := range keys {
		w.str(k)
		w.str(m[k])
	}
}

// reader decodes what writer wrote. The first fault sticks in err and
// every later read returns zero values, so decoders read straight through
// and check once. No read allocates more than the bytes left can hold: a
// count is checked against the remaining length (each element takes at
// least one byte) before anything is made.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrBadEncoding, fmt.Sprintf(format, args...))
	}
}

func (r *reader) u8() uint8 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.fail("truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int32() int32 {
	v := r.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("%d is out of int32 range", v)
		return 0
	}
	return int32(v)
}

func (r *reader) bool() bool {
	switch v := r.u8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail("bool %d", v)
		return false
	}
}

// count reads a length and checks that the bytes left can hold that many
// elements of at least min bytes each.
func (r *reader) count(min int) int {
	n := r.uvarint()
	if r.err != nil {
		return 0
	}
	if n > uint64(len(r.b)/min) {
		r.fail("length %d with %d bytes left", n, len(r.b))
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.count(1)
	if r.err != nil {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) int32s() []int32 {
	n := r.count(1)
	if r.err != nil || n == 0 {
		return nil
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = r.int32()
	}
	return v
}

func (r *reader) strs() []string {
	n := r.count(1)
	if r.err != nil || n == 0 {
		return nil
	}
	v := make([]string, n)
	for i := range v {
		v[i] = r.str()
	}
	return v
}

// strMap reads a map and refuses keys out of order or repeated, so every
// map has one encoding and encode(decode(x)) is x for any x decoded.
func (r *reader) strMap() map[string]string {
	n := r.count(2)
	if r.err != nil || n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	prev := ""
	for i := 0; i < n && r.err == nil; i++ {
		k := r.str()
		if i > 0 && k <= prev {
			r.fail("map key %q after %q", k, prev)
			return nil
		}
		m[k] = r.str()
		prev = k
	}
	return m
}

// done reports the sticky error, or trailing bytes.
func (r *reader) done() error {
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}
