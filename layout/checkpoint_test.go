package layout

import (
	"errors"
	"testing"
)

// TestCheckpointLookup: of duplicate lines the last counts, as Kafka reads
// a checkpoint into a map; a log's own file of one entry is the log's
// whatever it names, a log.dir's is not.
func TestCheckpointLookup(t *testing.T) {
	entries, err := ParseCheckpoint("/c", []byte("0\n3\nt 5 1\nu 5 2\nt 05 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if i := Lookup(entries, "t", 5, false); i != 2 {
		t.Fatalf("Lookup of t-5 = %d, want the last line, 2", i)
	}
	if i := Lookup(entries, "v", 0, true); i != -1 {
		t.Fatalf("Lookup of a missing line among three = %d", i)
	}
	one := entries[:1]
	if Lookup(one, "renamed", 0, true) != 0 || Lookup(one, "renamed", 0, false) != -1 {
		t.Fatal("a single entry: the log's own in its directory, nobody's in a log.dir")
	}
}

// TestParseLeaderEpochs: the text only (the order is the reader's to
// judge), a 32-bit epoch, positions in errors.
func TestParseLeaderEpochs(t *testing.T) {
	lines, err := ParseLeaderEpochs("/e", []byte("0\n2\n5 10\n3 20\n"))
	if err != nil || len(lines) != 2 || lines[1] != (EpochLine{Epoch: 3, StartOffset: 20, Pos: 9}) {
		t.Fatalf("ParseLeaderEpochs = %+v, %v", lines, err)
	}
	if got := FormatLeaderEpochs(lines); string(got) != "0\n2\n5 10\n3 20\n" {
		t.Fatalf("FormatLeaderEpochs = %q", got)
	}
	var ce *CheckpointError
	if _, err := ParseLeaderEpochs("/e", []byte("0\n1\n2147483648 0\n")); !errors.As(err, &ce) || ce.Line != 3 || ce.Pos != 4 {
		t.Fatalf("an epoch beyond int32: %v", err)
	}
}
