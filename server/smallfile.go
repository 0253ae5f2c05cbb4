package server

import (
	"encoding/binary"

	"github.com/seglog/seglog/internal/crc32c"
)

// smallFile is the frame the server's small files share: the SASL
// credentials, the ACLs and the client quotas (auth_creds.go,
// acl_store.go, quota_store.go). Big-endian: a 4-byte magic, a uint16
// version, a uint32 entry count, the entries (each file's own), and a
// CRC-32C of every byte before it. One frame so the three check damage
// alike; each file keeps its own entries and its own typed error.
type smallFile struct {
	magic   string // 4 bytes
	version uint16
	kind    string // the file's name in "not a seglog ... file"
	// minEntry is the smallest entry's size: it bounds the count a
	// header may claim by the bytes left, so no list is sized by an
	// untrusted count.
	minEntry int
}

// smallHeaderSize is the frame's header: magic, version and count.
const smallHeaderSize = 4 + 2 + 4

// begin starts a file of count entries; the caller appends them, then
// seal.
func (f smallFile) begin(count int) []byte {
	b := binary.BigEndian.AppendUint16([]byte(f.magic), f.version)
	return binary.BigEndian.AppendUint32(b, uint32(count))
}

// seal appends the checksum of b.
func (f smallFile) seal(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32c.Checksum(b))
}

// open checks b's frame and returns its entry count and where the
// entries end (they start at smallHeaderSize). A damaged frame is bad's
// error, the file's own type, at the byte where it stops making sense.
func (f smallFile) open(b []byte, bad func(off int, format string, args ...any) error) (count, end int, err error) {
	if len(b) < smallHeaderSize+4 {
		return 0, 0, bad(len(b), "file of %d bytes is shorter than a header and checksum", len(b))
	}
	if string(b[:4]) != f.magic {
		return 0, 0, bad(0, "not a seglog %s file (magic %q)", f.kind, b[:4])
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != f.version {
		return 0, 0, bad(4, "version %d, this seglog reads version %d", v, f.version)
	}
	end = len(b) - 4
	if sum, want := crc32c.Checksum(b[:end]), binary.BigEndian.Uint32(b[end:]); sum != want {
		return 0, 0, bad(end, "checksum %08x does not match bytes 0 to %d (%08x)", want, end-1, sum)
	}
	n := binary.BigEndian.Uint32(b[6:])
	if int64(n) > int64(end-smallHeaderSize)/int64(f.minEntry) {
		return 0, 0, bad(6, "%d entries cannot fit in %d bytes", n, end-smallHeaderSize)
	}
	return int(n), end, nil
}
