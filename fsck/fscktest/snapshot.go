package fscktest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// Snapshot is the content of every file of some directories: path -> bytes.
// Tests take one before and one after an operation to prove what it
// changed (or that it changed nothing).
type Snapshot map[string][]byte

// TakeSnapshot reads every regular file directly inside each of dirs
// (subdirectories are not entered, so a Kafka log.dir can be given beside
// its partition directory).
func TakeSnapshot(t testing.TB, fsys vfs.FS, dirs ...string) Snapshot {
	t.Helper()
	s := Snapshot{}
	for _, dir := range dirs {
		names, err := fsys.List(dir)
		if err != nil {
			t.Fatalf("snapshot %s: %v", dir, err)
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			fi, err := fsys.Stat(p)
			if err != nil {
				t.Fatalf("snapshot %s: %v", p, err)
			}
			if fi.IsDir() {
				continue
			}
			s[p] = vfstest.ReadFile(t, fsys, p)
		}
	}
	return s
}

// Diff lists how after differs from s, one line per file: added, removed,
// size changed, or the first differing byte. Empty means identical.
func (s Snapshot) Diff(after Snapshot) []string {
	var out []string
	for _, p := range s.sortedUnion(after) {
		a, inA := s[p]
		b, inB := after[p]
		switch {
		case !inB:
			out = append(out, fmt.Sprintf("%s: removed (%d bytes)", p, len(a)))
		case !inA:
			out = append(out, fmt.Sprintf("%s: added (%d bytes)", p, len(b)))
		case len(a) != len(b):
			out = append(out, fmt.Sprintf("%s: size %d -> %d", p, len(a), len(b)))
		case !bytes.Equal(a, b):
			i := 0
			for a[i] == b[i] {
				i++
			}
			out = append(out, fmt.Sprintf("%s: contents differ from byte %d", p, i))
		}
	}
	return out
}

func (s Snapshot) sortedUnion(o Snapshot) []string {
	var ps []string
	for p := range s {
		ps = append(ps, p)
	}
	for p := range o {
		if _, ok := s[p]; !ok {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// CopyDir copies every file directly inside dir from one filesystem to
// another, so each case can damage its own copy of one written log.
func CopyDir(t testing.TB, from, to vfs.FS, dir string) {
	t.Helper()
	names, err := from.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		vfstest.WriteFile(t, to, p, vfstest.ReadFile(t, from, p))
	}
}
