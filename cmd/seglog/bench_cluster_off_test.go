//go:build !benchextras

package main

import (
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// Without the bench extras, bench cluster is refused before anything
// runs, saying how to build a seglog that has it, and the help does not
// list it.
func TestBenchClusterRefused(t *testing.T) {
	base := t.TempDir()
	r := invoke(t, "", "bench", "cluster", "--records", "100", "--dir", base)
	if r.code != 2 || !strings.Contains(r.stderr, "-tags benchextras") || !strings.Contains(r.stderr, "Usage: seglog bench") {
		t.Errorf("exit %d, stderr %q; want a usage error (2) naming the build tag", r.code, r.stderr)
	}
	if names, err := vfs.Default.List(base); err != nil || len(names) != 0 {
		t.Errorf("the refused run left %v (%v)", names, err)
	}
	if out := mustInvoke(t, "", "bench", "--help").stdout; strings.Contains(out, "  cluster ") {
		t.Errorf("bench --help lists what this binary does not have:\n%s", out)
	}
}
