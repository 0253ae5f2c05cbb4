package lint

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// benchExtraPackages are what only a seglog built with -tags benchextras
// may link: franz-go's client and in-process broker (bench serve, package
// bench/benchserve), gonum's plot (bench --plot, bench/benchplot) and the
// two raft log stores bench raft compares seglog's with. The first two
// were a third of a first build's CPU time (docs/benchmarks.md, "The bench
// extras").
var benchExtraPackages = []string{
	"github.com/twmb/franz-go/pkg/kgo",
	"github.com/twmb/franz-go/pkg/kfake",
	"gonum.org/v1/plot",
	"github.com/seglog/seglog/bench/benchserve",
	"github.com/seglog/seglog/bench/benchcluster",
	"github.com/seglog/seglog/bench/benchplot",
	"github.com/hashicorp/raft-wal",
	"github.com/seglog/seglog/bench/raftbench",
}

// TestDefaultBinaryLinksNoBenchExtras fails when the default seglog binary
// imports, directly or not, a package of the bench extras, and checks that
// the tagged build does link them (so the check sees what it looks for).
func TestDefaultBinaryLinksNoBenchExtras(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the binary's packages: %v", err)
	}
	deps := func(tags ...string) []string {
		args := append([]string{"list", "-deps"}, tags...)
		cmd := exec.Command(gobin, append(args, "./cmd/seglog")...)
		cmd.Dir = moduleRoot(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v", strings.Join(cmd.Args[1:], " "), err)
		}
		return strings.Fields(string(out))
	}
	plain, tagged := deps(), deps("-tags", "benchextras")
	for _, p := range benchExtraPackages {
		if slices.Contains(plain, p) {
			t.Errorf("the default seglog binary links %s: only -tags benchextras may", p)
		}
		if !slices.Contains(tagged, p) {
			t.Errorf("seglog built with -tags benchextras does not link %s: is this list out of date?", p)
		}
	}
}
