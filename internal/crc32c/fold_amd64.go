package crc32c

import "golang.org/x/sys/cpu"

// hasFold: folding needs 512-bit registers (AVX-512F, which x/sys/cpu
// reports only when the OS saves them) and the 512-bit carry-less multiply.
var hasFold = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ

// fold256 folds p (a multiple of 256 bytes long) into state, 256 bytes at a
// time, with the lane constants k, and returns the CRC of the resulting
// state from a zero register, without inversions.
//
//go:noescape
func fold256(state *[256]byte, p []byte, k *[2]uint64) uint32
