package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
)

// TestGarbageArgs: malformed command lines exit non-zero with a message,
// never panic.
func TestGarbageArgs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	file := filepath.Join(t.TempDir(), "plain-file")
	writeVFS(t, file, []byte("not a directory"))
	for _, args := range [][]string{
		{"no-such-command"},
		{"produce"},
		{"produce", dir, dir},
		{"produce", dir, "--no-such-flag"},
		{"produce", dir, "--batch", "many"},
		{"produce", dir, "--batches"},
		{"produce", dir, "--batches", filepath.Join(dir, "missing")},
		{"produce", file},
		{"consume"},
		{"consume", filepath.Join(t.TempDir(), "missing")},
		{"consume", file},
		{"consume", dir, "--from", "abc"},
		{"consume", dir, "--max", "1e3"},
		{"demo", "--records", "-5"},
		{"demo", "--dir", file, "--records", "10"},
	} {
		r := invoke(t, "", args...)
		if r.code == 0 || !strings.HasPrefix(r.stderr, "seglog: ") {
			t.Errorf("seglog %v: exit %d, stderr %q; want a non-zero exit and a message", args, r.code, r.stderr)
		}
		if strings.Count(r.stderr, "seglog: seglog:") > 0 {
			t.Errorf("seglog %v: doubled prefix in %q", args, r.stderr)
		}
	}
	// Help works for every command and says what the command does; the
	// commands that write list the log's writing flags.
	for _, c := range []string{"produce", "consume", "demo"} {
		r := mustInvoke(t, "", c, "--help")
		if !strings.Contains(r.stdout, "Usage:") || (c != "consume") != strings.Contains(r.stdout, "--segment-bytes") {
			t.Errorf("%s --help lacks usage or has the wrong log flags:\n%s", c, r.stdout)
		}
	}
}

// TestGarbageInputs feeds produce random and mutated batch files and
// random stdin, and consume random segment files. Each run must end with a
// clean exit or an error message; a panic fails the test. Whatever produce
// accepted must read back.
func TestGarbageInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	corpus := readVFS(t, filepath.Join(corpusDir, "none.batches"))
	first := splitBatches(t, corpus)[0]

	inputs := [][]byte{{}, {0}, make([]byte, record.PeekSize), make([]byte, record.HeaderSize)}
	for range 4 {
		b := make([]byte, rng.IntN(3000))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		inputs = append(inputs, b)
	}
	for range 12 {
		// A valid batch with a few random bytes changed: mostly CRC
		// failures, sometimes framing and header-field errors.
		b := append([]byte(nil), first...)
		for range 1 + rng.IntN(3) {
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		}
		inputs = append(inputs, b)
	}
	for range 6 {
		// Header fields only, with a valid CRC where possible: lengths and
		// counts that lie.
		b := append([]byte(nil), first...)
		b[8+rng.IntN(record.HeaderSize-8)] ^= byte(1 + rng.IntN(255))
		inputs = append(inputs, b)
	}
	// Small index files keep each of the many opens cheap.
	small := []string{"--max-index-bytes", "4096"}
	for i, in := range inputs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			// Opens are bound by fsync latency, not CPU.
			t.Parallel()
			file := filepath.Join(t.TempDir(), "in.batches")
			writeVFS(t, file, in)
			dir := filepath.Join(t.TempDir(), "log")
			r := invoke(t, "", append([]string{"produce", dir, "--batches", file}, small...)...)
			if r.code != 0 && !strings.Contains(r.stderr, "batch 0 at byte 0") {
				t.Errorf("exit %d without naming the batch: %q", r.code, r.stderr)
			}
			if r.code == 0 {
				// Accepted: it must read back without error.
				mustInvoke(t, "", "consume", dir, "--json")
			}

			r = invoke(t, string(in), append([]string{"produce", filepath.Join(t.TempDir(), "lines")}, small...)...)
			if r.code != 0 && r.stderr == "" {
				t.Errorf("as lines: exit %d with no message", r.code)
			}

			// The same bytes as a segment file of an existing log.
			seg := filepath.Join(t.TempDir(), "seg")
			mustInvoke(t, "x\n", append([]string{"produce", seg}, small...)...)
			writeVFS(t, filepath.Join(seg, segment.FileName(1, segment.LogSuffix)), in)
			if r := invoke(t, "", "consume", seg, "--json", "--from", "0"); r.code != 0 && r.stderr == "" {
				t.Errorf("as a segment: exit %d with no message", r.code)
			}
		})
	}
}
