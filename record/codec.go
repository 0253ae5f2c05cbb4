package record

import (
	"fmt"
	"strings"
)

// Codec is the compression codec of a batch, stored in bits 0-2 of the
// attributes.
type Codec int8

// The codecs Kafka defines. Values 5-7 are invalid in a batch.
const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

// Codecs lists every known codec, in id order.
var Codecs = []Codec{None, Gzip, Snappy, LZ4, Zstd}

var codecNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

// Valid reports whether c is one of the five known codecs.
func (c Codec) Valid() bool { return c >= None && c <= Zstd }

// String returns the codec's Kafka name ("none", "gzip", ...).
func (c Codec) String() string {
	if c.Valid() {
		return codecNames[c]
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// ParseCodec parses a Kafka codec name, case-insensitively. The error wraps
// ErrUnknownCodec.
func ParseCodec(s string) (Codec, error) {
	for i, n := range codecNames {
		if strings.EqualFold(s, n) {
			return Codec(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownCodec, s)
}
