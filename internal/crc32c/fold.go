package crc32c

import (
	"encoding/binary"
	"hash/crc32"
)

// The folding method. A CRC is the remainder of the message, read as a
// polynomial over GF(2), times x^32, modulo P (0x1EDC6F41). Kafka's CRC is
// the reflected kind: the first byte's lowest bit is the highest power. In
// that order a 16-byte lane loaded little-endian has bit k for x^(127-k),
// its low 8 bytes L and high 8 bytes H standing for L·x^64 + H.
//
// Moving a lane 2048 bits (256 bytes) further down the message multiplies
// it by x^2048, and modulo P that is L·(x^2112 mod P) + H·(x^2048 mod P):
// two 64×32-bit carry-less products, at most 95 bits, so a lane again. A
// carry-less multiply of two reflected 64-bit values yields their product
// times x (its 127 bits land one place too high in a reflected 128-bit
// lane), so the constants are taken one power lower: x^2111 and x^2047.
//
// Sixteen lanes (four 512-bit registers, 256 bytes) are folded forward
// together, each onto the lane 256 bytes further on, XORed with the data
// there. What remains after the last fold is a 256-byte block with the same
// remainder as everything folded into it, so the CRC of that block and the
// unfolded tail, from a zero register, is the CRC of the whole message:
// fold256 computes the block's with the CRC32 instruction, hash/crc32 the
// tail's.

// foldMin is the shortest input folded: below it the 256 to 511 bytes
// left to the CRC32 instruction anyway are most of the work, and folding
// first is slower (measured: 68 ns against 50 ns at 1 KiB, 90 ns against
// 99 ns at 2 KiB, 2× faster from 16 KiB).
const foldMin = 2048

// foldConst holds, for each 128-bit lane, the constant for the low 8 bytes
// (x^2111 mod P) and for the high 8 bytes (x^2047 mod P), as reflected
// 64-bit values.
var foldConst = [2]uint64{reflect64(xPowModP(2111)), reflect64(xPowModP(2047))}

// updateFold is Update for len(p) >= foldMin on a CPU that can fold.
func updateFold(crc uint32, p []byte) uint32 {
	var state [256]byte
	copy(state[:], p)
	// A CRC register c over message M equals a zero register over M with c
	// XORed into its first 4 bytes (little-endian). hash/crc32 keeps the
	// register inverted.
	first := binary.LittleEndian.Uint32(state[:4])
	binary.LittleEndian.PutUint32(state[:4], first^^crc)
	n := (len(p) - 256) &^ 255
	r := fold256(&state, p[256:256+n], &foldConst)
	// r is the register over the folded block; hash/crc32 keeps it
	// inverted, and inverts what it returns.
	return crc32.Update(^r, castagnoli, p[256+n:])
}

// xPowModP returns x^n mod P as a polynomial with bit d for x^d.
func xPowModP(n int) uint32 {
	result, base := uint32(1), uint32(2) // x^0, x^1
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			result = mulModP(result, base)
		}
		base = mulModP(base, base)
	}
	return result
}

// mulModP multiplies a and b modulo P, all with bit d for x^d.
func mulModP(a, b uint32) uint32 {
	var prod uint64
	for i := range 32 {
		if b&(1<<i) != 0 {
			prod ^= uint64(a) << i
		}
	}
	const poly = 1<<32 | uint64(0x1EDC6F41)
	for d := 63; d >= 32; d-- {
		if prod&(1<<d) != 0 {
			prod ^= poly << (d - 32)
		}
	}
	return uint32(prod)
}

// reflect64 returns the reflected 64-bit form of a polynomial of degree
// below 32: bit 63-d for x^d.
func reflect64(p uint32) uint64 {
	var r uint64
	for d := range 32 {
		if p&(1<<d) != 0 {
			r |= 1 << (63 - d)
		}
	}
	return r
}
