package layout

import (
	"errors"
	"reflect"
	"testing"
)

// TestRaftIndexRoundTrip: formatted lines parse back; malformed text is a
// *CheckpointError naming the line.
func TestRaftIndexRoundTrip(t *testing.T) {
	in := []IndexLine{{Index: 1, Offset: 0}, {Index: 1 << 63, Offset: 1<<63 - 1, Term: 1<<64 - 1}}
	got, err := ParseRaftIndex(RaftIndexFile, FormatRaftIndex(in))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].Pos = 0
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("got %v, want %v", got, in)
	}
	for _, bad := range []string{"1\n0\n", "0\n1\n-1 0 0\n", "0\n1\n1 x 0\n", "0\n1\n1 0 -1\n", "0\n2\n1 0 0\n", "0\n1\n1 0\n", "0\n1\n1 0 0 0\n"} {
		var ce *CheckpointError
		if _, err := ParseRaftIndex(RaftIndexFile, []byte(bad)); !errors.As(err, &ce) {
			t.Errorf("%q: %v, want a *CheckpointError", bad, err)
		}
	}
	for _, name := range []string{RaftIndexFile, RaftStateFile} {
		if IsLogFile(name) || PartitionOnly(name) || Misnamed(name) {
			t.Fatalf("%s is classified as a log's file; it must be a stray Kafka ignores", name)
		}
	}
}
