package record

import "math/bits"

// Kafka's varints are zig-zag encoded base-128, little-endian groups of 7
// bits. Java rejects a 32-bit varint longer than 5 bytes and a 64-bit one
// longer than 10; we do the same and also reject final bytes carrying bits
// beyond the type's width, so an accepted varint always has one meaning.

// varintErr classifies a varint failure for the caller's message.
type varintErr uint8

const (
	varintOK varintErr = iota
	varintShort
	varintOverlong
)

// varint32 decodes a 32-bit varint from b at i, returning the zig-zag
// decoded value and the index after it.
func varint32(b []byte, i int) (int32, int, varintErr) {
	var x uint32
	for s := uint(0); s < 35; s += 7 {
		if i >= len(b) {
			return 0, i, varintShort
		}
		c := b[i]
		i++
		if s == 28 && c > 0x0f {
			return 0, i, varintOverlong
		}
		x |= uint32(c&0x7f) << s
		if c < 0x80 {
			return int32(x>>1) ^ -int32(x&1), i, varintOK
		}
	}
	return 0, i, varintOverlong
}

// varint64 decodes a 64-bit varint from b at i.
func varint64(b []byte, i int) (int64, int, varintErr) {
	var x uint64
	for s := uint(0); s < 70; s += 7 {
		if i >= len(b) {
			return 0, i, varintShort
		}
		c := b[i]
		i++
		if s == 63 && c > 0x01 {
			return 0, i, varintOverlong
		}
		x |= uint64(c&0x7f) << s
		if c < 0x80 {
			return int64(x>>1) ^ -int64(x&1), i, varintOK
		}
	}
	return 0, i, varintOverlong
}

// varintLen is the encoded size of v as a zig-zag varint.
func varintLen(v int64) int { return uvarintLen(zigzag(v)) }

// uvarintLen is the encoded size of u as a varint ((l*9+64)/64 is l/7
// rounded up). Record fields mostly take one or two bytes, so those are
// tested first: the branches predict well, while BSR, which bits.Len64
// compiles to, was measured to slow the builder down by a tenth.
func uvarintLen(u uint64) int {
	if u < 1<<7 {
		return 1
	}
	if u < 1<<14 {
		return 2
	}
	return (bits.Len64(u)*9 + 64) / 64
}

// zigzag maps signed to unsigned so that small magnitudes stay small.
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// putUvarintAt stores u at b[i:], which must have room for it, and returns
// the index after it.
func putUvarintAt(b []byte, i int, u uint64) int {
	for u >= 0x80 {
		b[i] = byte(u) | 0x80
		u >>= 7
		i++
	}
	b[i] = byte(u)
	return i + 1
}

// appendVarint appends v zig-zag encoded.
func appendVarint(b []byte, v int64) []byte {
	u := zigzag(v)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// varintFast decodes a one- or two-byte varint at i, the sizes nearly all
// record fields take; n is 0 when the caller must use varint32 (longer,
// short of bytes, or malformed). It is small enough to be inlined.
func varintFast(b []byte, i int) (v int32, n int) {
	if i < len(b) {
		c := uint32(b[i])
		if c < 0x80 {
			return int32(c>>1) ^ -int32(c&1), 1
		}
		if i+1 < len(b) && b[i+1] < 0x80 {
			x := c&0x7f | uint32(b[i+1])<<7
			return int32(x>>1) ^ -int32(x&1), 2
		}
	}
	return 0, 0
}
