//go:build !benchextras

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// benchServeRefusal is how bench serve --records 1 --partitions 2 is
// refused (TestBadCommandLinesChangeNothing): a binary without the bench
// extras refuses any bench serve, naming the tag.
const benchServeRefusal = "-tags benchextras"

// benchRaftRefusal is how bench raft --rounds 0 is refused
// (TestBadCommandLinesChangeNothing): like bench serve, by the stub.
const benchRaftRefusal = "-tags benchextras"

// Without the bench extras, --plot, bench serve and bench raft are refused
// before anything runs, saying how to build a seglog that has them, and
// the help lists none of them.
func TestBenchExtrasRefused(t *testing.T) {
	base := t.TempDir()
	for _, args := range [][]string{
		{"bench", "write", "--records", "10", "--dir", base, "--plot", filepath.Join(base, "w.png")},
		{"bench", "durable", "--plot", filepath.Join(base, "d.png"), "--dir", base},
		{"bench", "serve", "--records", "100", "--dir", base},
		{"bench", "raft", "--rounds", "1", "--dir", base},
	} {
		r := invoke(t, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "-tags benchextras") || !strings.Contains(r.stderr, "Usage: seglog bench") {
			t.Errorf("seglog %s: exit %d, stderr %q; want a usage error (2) naming the build tag", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if names, err := vfs.Default.List(base); err != nil || len(names) != 0 {
		t.Errorf("the refused runs left %v (%v)", names, err)
	}
	for _, args := range [][]string{{"bench", "--help"}, {"bench", "write", "--help"}} {
		out := mustInvoke(t, "", args...).stdout
		if strings.Contains(out, "--plot string") || strings.Contains(out, "  serve ") || strings.Contains(out, "  raft ") {
			t.Errorf("seglog %s lists what this binary does not have:\n%s", strings.Join(args, " "), out)
		}
	}
	if out := mustInvoke(t, "", "bench", "--help").stdout; !strings.Contains(out, "go build -tags benchextras") {
		t.Errorf("bench --help does not say how to get --plot, bench serve and bench raft:\n%s", out)
	}
}
