package layout

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// TestCheckpointRoundTrip: what WriteCheckpoint writes, ReadCheckpoint
// reads back, in Kafka's text format.
func TestCheckpointRoundTrip(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	want := []CheckpointEntry{{Topic: "orders", Partition: 3, Offset: 12345}, {Topic: "x", Partition: 0, Offset: 0}}
	if err := WriteCheckpoint(mem, "/d/cp", want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpoint(mem, "/d/cp")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	if s := string(FormatCheckpoint(want)); s != "0\n2\norders 3 12345\nx 0 0\n" {
		t.Fatalf("format %q", s)
	}
	if _, err := ReadCheckpoint(mem, "/d/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestCheckpointRefusals: every malformed file is an ErrBadCheckpoint naming
// the byte where it goes wrong, and a file larger than any checkpoint is
// refused before it is read.
func TestCheckpointRefusals(t *testing.T) {
	for _, tc := range []struct {
		data string
		at   string // the byte position the error must name
	}{
		{"1\n0\n", "at byte 0"},
		{"0\n", "at byte 2"},
		{"0\n-1\n", "at byte 2"},
		{"0\n1000\nt 0 0\n", "at byte 2"},
		{"0\n2\nt 0 0\n", "at byte 10"},
		{"0\n1\nt 0\n", "at byte 4"},
		{"0\n1\nt x 0\n", "at byte 4"},
		{"0\n1\nt 0 0\nu 1 1\n", "at byte 10"},
	} {
		_, err := ParseCheckpoint("cp", []byte(tc.data))
		if !errors.Is(err, ErrBadCheckpoint) || !strings.Contains(err.Error(), tc.at) {
			t.Errorf("%q: %v, want ErrBadCheckpoint %s", tc.data, err, tc.at)
		}
	}
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(mem, "/d/cp", bytes.Repeat([]byte("\n"), MaxCheckpointBytes+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCheckpoint(mem, "/d/cp"); !errors.Is(err, ErrBadCheckpoint) || !errors.Is(err, vfs.ErrFileTooLarge) {
		t.Fatalf("oversized checkpoint: %v, want ErrBadCheckpoint and vfs.ErrFileTooLarge", err)
	}
}
