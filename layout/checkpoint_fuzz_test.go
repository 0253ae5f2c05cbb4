package layout

import (
	"errors"
	"slices"
	"testing"
)

// FuzzParseCheckpoint feeds arbitrary bytes to the Kafka offset-checkpoint
// parser: it never panics, refuses with ErrBadCheckpoint, and what it
// accepts formats and parses back to the same entries.
func FuzzParseCheckpoint(f *testing.F) {
	f.Add([]byte("0\n2\nbookings 0 17\nbookings 1 4\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte(""))
	f.Add([]byte("0\n1\n__consumer_offsets 49 9223372036854775807\n"))
	f.Add([]byte("1\n1\nt 0 1\n"))
	f.Add([]byte("0\n3\nt 0 1\n"))
	f.Add([]byte("0\n1\nt -1 -5\n"))
	f.Add([]byte("0\n999999999999\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ParseCheckpoint("/c", data)
		if err != nil {
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		again, err := ParseCheckpoint("/c", FormatCheckpoint(entries))
		if err != nil {
			t.Fatalf("formatted %v does not parse: %v", entries, err)
		}
		if !slices.Equal(entries, again) {
			t.Fatalf("round trip: %v became %v", entries, again)
		}
	})
}
