package raftlog

import (
	"errors"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// FuzzParseEpochs feeds arbitrary bytes to the leader-epoch-checkpoint
// parser: it never panics, refuses with an *epochFileError (matching
// layout.ErrBadCheckpoint) at a byte position inside the file, accepts
// only what the cache may hold (non-negative, epochs increasing, offsets
// never decreasing), and what it accepts formats and parses back to the
// same entries.
func FuzzParseEpochs(f *testing.F) {
	// A real checkpoint, as a Store writes it across three terms.
	fs := vfs.NewMem()
	s, err := Open("/r", Options{FS: fs})
	if err != nil {
		f.Fatal(err)
	}
	for i, term := range []uint64{1, 1, 4, 9} {
		if err := s.StoreLog(&raft.Log{Index: uint64(i + 1), Term: term, Data: []byte("x")}); err != nil {
			f.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	stored := vfstest.ReadFile(f, fs, epochPath(s.log.Dir()))
	f.Add(stored)
	f.Add(stored[:len(stored)-3])
	f.Add([]byte("0\n0\n"))
	f.Add([]byte(""))
	f.Add([]byte("0\n1\n2147483647 9223372036854775807"))
	f.Add([]byte("0\n2\n5 10\n3 20\n"))
	f.Add([]byte("0\n2\n1 10\n2 5\n"))
	f.Add([]byte("0\n999999999999\n1 1\n"))
	f.Add([]byte("1\n1\n0 0\n"))
	f.Add([]byte("0\n1\n-1 0\n"))
	f.Add([]byte("0\n1\n0 0\n\n\n7 7\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseEpochs(data)
		if err != nil {
			var pe *epochFileError
			if !errors.As(err, &pe) || !errors.Is(err, layout.ErrBadCheckpoint) {
				t.Fatalf("untyped error: %v", err)
			}
			if pe.at < 0 || pe.at > len(data) {
				t.Fatalf("error at byte %d of a %d-byte file: %v", pe.at, len(data), err)
			}
			return
		}
		for i, e := range entries {
			if e.epoch < 0 || e.start < 0 || (i > 0 && (e.epoch <= entries[i-1].epoch || e.start < entries[i-1].start)) {
				t.Fatalf("accepted entry %d %+v after %v", i, e, entries[:i])
			}
		}
		again, err := parseEpochs(formatEpochs(entries))
		if err != nil {
			t.Fatalf("formatted %v does not parse: %v", entries, err)
		}
		if !slices.Equal(entries, again) {
			t.Fatalf("round trip: %v became %v", entries, again)
		}
	})
}
