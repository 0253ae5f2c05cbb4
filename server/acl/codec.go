package acl

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The binary form of one ACL, shared by the single node's ACL file and
// the cluster's metadata commands and snapshot: resource type, pattern
// type, operation and permission (one byte each, Kafka's codes), then
// the name, the principal and the host, each a uvarint length and the
// bytes.

// MinEncodedLen is the fewest bytes an encoded ACL takes: four codes
// and three one-byte strings with their lengths. It bounds the count a
// header may claim for the bytes that follow it.
const MinEncodedLen = 4 + 3*2

// Append appends a's encoding to b.
func Append(b []byte, a ACL) []byte {
	b = append(b, byte(a.ResourceType), byte(a.Pattern), byte(a.Operation), byte(a.Permission))
	for _, s := range []string{a.Name, a.Principal, a.Host} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// DecodeError is an encoded ACL that does not parse: Offset is the byte,
// from the start of what Decode was given, where it stops making sense.
type DecodeError struct {
	Offset int
	Reason string
}

// Error says where and why.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("acl entry damaged at byte %d: %s", e.Offset, e.Reason)
}

// Decode parses one ACL at the start of b and returns it with the bytes
// after it. A truncated, over-long or invalid entry (Validate) is a
// *DecodeError; nothing is allocated beyond the strings b holds.
func Decode(b []byte) (ACL, []byte, error) {
	all := len(b)
	bad := func(format string, args ...any) (ACL, []byte, error) {
		return ACL{}, nil, &DecodeError{Offset: all - len(b), Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) < 4 {
		return bad("entry cut short")
	}
	a := ACL{ResourceType: kmsg.ACLResourceType(b[0]), Pattern: kmsg.ACLResourcePatternType(b[1]),
		Operation: kmsg.ACLOperation(b[2]), Permission: kmsg.ACLPermissionType(b[3])}
	b = b[4:]
	for _, s := range []*string{&a.Name, &a.Principal, &a.Host} {
		n, k := binary.Uvarint(b)
		if k <= 0 {
			return bad("bad length")
		}
		if n > MaxStringLen || n > uint64(len(b)-k) {
			return bad("string of %d bytes with %d left", n, len(b)-k)
		}
		*s = string(b[k : k+int(n)])
		b = b[k+int(n):]
	}
	if err := Validate(a); err != nil {
		// The entry as a whole is wrong: its first byte.
		return ACL{}, nil, &DecodeError{Offset: 0, Reason: err.Error()}
	}
	return a, b, nil
}
