package main

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
)

// TestServeClusterUnreachableVoterNamed: a node whose --voters gives
// voter 2 a port nothing listens on and voter 3 one that hangs up (not a
// seglog raft port), stopped with Ctrl-C, says which voters it could not
// reach, at which address and why, and what to check; while it waits it
// logs each at Warn. A user's walk with one port mistyped in --voters
// saw only "waiting for the cluster's controller", then "stopped before
// the cluster had a controller (are a majority of --voters running?)",
// which they were. Two stops: while the node asks the other voters
// whether it is new (its first start), and, past that, while it waits
// for a controller.
func TestServeClusterUnreachableVoterNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster node")
	}
	free := func() string { return freeAddrs(t, 1)[0] } // serve binds it, or nothing does
	hangUp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangUp.Close()
	go func() {
		for {
			c, err := hangUp.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	refused, closes := free(), hangUp.Addr().String()
	base := t.TempDir()

	for _, c := range []struct {
		name, logLevel, waiting, what string
	}{
		// The Info line is printed once the node has asked every voter.
		{"asking", "info", "asking the other voters whether it is new",
			"stopped while waiting for another voter to say whether this node is new (its DIR holds no metadata): "},
		{"waiting", "warn", "waiting for the cluster's controller",
			"stopped before the cluster had a controller: "},
	} {
		self := free()
		voters := "1@" + self + ",2@" + refused + ",3@" + closes
		var stderr lockedBuffer
		serve := seglogProcess(t, &stderr, "serve", filepath.Join(base, c.name), "--listen", "127.0.0.1:0", "--log-level", c.logLevel,
			"--voters", voters, "--node-id", "1", "--raft-listen", self)
		if err := serve.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { serve.Process.Kill() })
		testutil.WaitFor(t, c.name+": serve to say "+c.waiting, func() bool {
			out := stderr.String()
			if c.name == "waiting" {
				// The node's Warn about each voter comes after 5 s of
				// failed dials, about when it stops asking.
				return strings.Contains(out, c.waiting) && strings.Contains(out, "voter=2 addr="+refused) &&
					strings.Contains(out, "voter=3 addr="+closes)
			}
			return strings.Contains(out, c.waiting)
		})
		if err := serve.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		code := exitCode(t, serve.Wait(), &stderr)
		out := stderr.String()
		if code != 1 || !strings.Contains(out, c.what+"could not reach voter 2 at "+refused+" ") ||
			!strings.Contains(out, "connection refused") || !strings.Contains(out, "voter 3 at "+closes+" ") ||
			!strings.Contains(out, "closed the connection without answering") || !strings.Contains(out, "check --voters") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant 1, naming voters 2 and 3, their addresses and errors, and what to check", c.name, code, out)
		}
		if c.name == "waiting" {
			for _, want := range []string{"voter=2 addr=" + refused, "voter=3 addr=" + closes} {
				if !hasLine(out, `level=WARN msg="cluster: cannot reach a voter`, want) {
					t.Errorf("%s: no Warn line with %s in stderr:\n%s", c.name, want, out)
				}
			}
		}
	}
}

// hasLine reports whether a line of out holds every one of parts.
func hasLine(out string, parts ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
