//go:build !amd64

package crc32c

const hasFold = false

func fold256(state *[256]byte, p []byte, k *[2]uint64) uint32 {
	panic("crc32c: folding is amd64 only")
}
