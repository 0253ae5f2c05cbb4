package crc32c

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// TestMatchesHashCRC32: every length from 0 to 9,000 bytes (the folding
// path starts at foldMin and changes shape every 256 bytes), at every
// alignment mod 64, from random and zero starting registers, plus a few
// large inputs, gives exactly hash/crc32's answer.
func TestMatchesHashCRC32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 9000+64)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for n := 0; n <= 9000; n++ {
		off := n % 64
		p := buf[off : off+n]
		for _, init := range []uint32{0, rng.Uint32()} {
			want := crc32.Update(init, castagnoli, p)
			if got := Update(init, p); got != want {
				t.Fatalf("Update(%#x, %d bytes at +%d) = %#x, want %#x", init, n, off, got, want)
			}
		}
	}
	for _, n := range []int{64 << 10, 100<<10 + 61, 1<<20 + 13} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		if got, want := Checksum(p), crc32.Checksum(p, castagnoli); got != want {
			t.Fatalf("Checksum of %d bytes = %#x, want %#x", n, got, want)
		}
	}
}

// TestFoldUsed makes sure the test above exercised the folding code on the
// machines meant to use it; elsewhere it says so.
func TestFoldUsed(t *testing.T) {
	if !hasFold {
		t.Log("this CPU cannot fold (no AVX-512 VPCLMULQDQ): only the hash/crc32 path was tested")
		return
	}
	// A single flipped bit anywhere in a folded input changes the result.
	p := make([]byte, 8192)
	base := Checksum(p)
	for _, i := range []int{0, 3, 255, 256, 4095, 8191} {
		p[i] ^= 1
		if Checksum(p) == base {
			t.Fatalf("flipping byte %d did not change the checksum", i)
		}
		p[i] ^= 1
	}
}

// TestConstants checks the polynomial arithmetic the fold constants come
// from (xPowModP, reflect64) against hash/crc32: the CRC of a message with one 1 bit, n bits
// before the end, is x^(n+32) mod P (reflected, without the inversions).
func TestConstants(t *testing.T) {
	for _, n := range []int{0, 1, 7, 31, 64, 2047, 2111} {
		nbytes := n/8 + 1
		msg := make([]byte, nbytes)
		// The bit for x^n when the message is nbytes long: the last byte
		// holds x^7..x^0 in bits 0..7.
		k := n
		msg[nbytes-1-k/8] = 1 << (7 - k%8)
		raw := ^crc32.Update(0xFFFFFFFF, castagnoli, msg) // zero register, no final inversion
		// reflect64's top half is the register's reflected form.
		if got := uint32(reflect64(xPowModP(n+32)) >> 32); got != raw {
			t.Fatalf("x^%d: hash/crc32 says %#x, xPowModP and reflect64 say %#x", n+32, raw, got)
		}
	}
}

func BenchmarkChecksum(b *testing.B) {
	for _, n := range []int{1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 100 << 10} {
		p := make([]byte, n)
		b.Run(fmt.Sprintf("crc32c/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				Checksum(p)
			}
		})
		b.Run(fmt.Sprintf("hash-crc32/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.Checksum(p, castagnoli)
			}
		})
	}
}

// FuzzChecksum: any input, from any register, gives hash/crc32's answer.
func FuzzChecksum(f *testing.F) {
	f.Add(uint32(0), make([]byte, 5000))
	f.Add(uint32(0xdeadbeef), bytes.Repeat([]byte("seglog"), 1000))
	f.Fuzz(func(t *testing.T, init uint32, p []byte) {
		if got, want := Update(init, p), crc32.Update(init, castagnoli, p); got != want {
			t.Fatalf("Update(%#x, %d bytes) = %#x, want %#x", init, len(p), got, want)
		}
	})
}
