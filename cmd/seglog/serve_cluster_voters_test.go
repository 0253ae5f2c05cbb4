package main

import (
	"bufio"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog/vfs/vfstest"
)

// TestServeClusterVotersChecked: a node of a two-voter cluster restarted
// with another --voters list (a third voter added, or the other voter
// left out, as a user's walk did) exits 1 naming both voter sets and
// saying what to do, before it serves; its DIR holds the bytes it held
// (opening and closing the store and the metadata log, as every start
// does, rewrites the store's lock file and the log's clean-shutdown
// marker, indexes and checkpoints with the same bytes: their times
// change). Started with the cluster's list in another order, it
// serves, and the cluster takes acks=all writes again. Without the check
// it served, printing "node 2 of 3 voters".
func TestServeClusterVotersChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cluster nodes")
	}
	base := t.TempDir()
	rafts := freeAddrs(t, 3) // serve binds the first two; the third is never bound
	voters := "1@" + rafts[0] + ",2@" + rafts[1]
	node := func(id int, voters string) []string {
		return []string{"--voters", voters, "--node-id", fmt.Sprint(id), "--raft-listen", rafts[id-1]}
	}
	dir2 := filepath.Join(base, "node-2")
	background := func(voters string) func() int {
		t.Helper()
		var stderr lockedBuffer
		two := seglogProcess(t, &stderr, append([]string{"serve", dir2, "--listen", "127.0.0.1:0"}, node(2, voters)...)...)
		if err := two.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { two.Process.Kill() })
		return func() int {
			if err := two.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			return exitCode(t, two.Wait(), &stderr)
		}
	}
	// Node 2 in the background: node 1's start waits for a quorum.
	stop2 := background(voters)
	addr, stop1 := startServe(t, filepath.Join(base, "node-1"), node(1, voters)...)
	if got := produceCreating(t, addr, "orders", "a", "b"); len(got) != 2 || got[1] != 1 {
		t.Fatalf("acknowledged at %v, want offsets 0 and 1", got)
	}
	if code := stop2(); code != 0 {
		t.Fatalf("node 2 exited %d", code)
	}

	before := withoutTimes(dirSnapshot(t, dir2))
	stored := "holds voters 1@" + rafts[0] + ",2@" + rafts[1]
	for _, tc := range []struct{ what, voters, given string }{
		{"a third voter added", voters + ",3@" + rafts[2], "given voters 1,2,3,"},
		{"node 1 left out", "2@" + rafts[1], "given voters 2,"},
	} {
		code, msg := refusedServe(t, append([]string{"serve", dir2, "--listen", "127.0.0.1:0"}, node(2, tc.voters)...)...)
		if code != 1 || !strings.Contains(msg, tc.given) || !strings.Contains(msg, stored) ||
			!strings.Contains(msg, "membership changes are not supported") || strings.Contains(msg, "voters, raft on") {
			t.Errorf("node 2 with %s: exit %d, stderr %q; want 1, both voter sets and what to do", tc.what, code, msg)
		}
	}
	vfstest.Unchanged(t, "the refused serves", before, withoutTimes(dirSnapshot(t, dir2)))

	// The cluster's list in another order: node 2 rejoins, and the RF 2
	// topic takes an acks=all write, which needs it.
	stop2 = background("2@" + rafts[1] + ",1@" + rafts[0])
	if got := produceCreating(t, addr, "orders", "c"); len(got) != 1 || got[0] != 2 {
		t.Fatalf("with node 2 back: acknowledged at %v, want offset 2", got)
	}
	if code := stop2(); code != 0 {
		t.Fatalf("node 2 exited %d", code)
	}
	if code := stop1(); code != 0 {
		t.Fatalf("node 1 exited %d", code)
	}
}

// withoutTimes is a dirSnapshot without the modification times: what
// each entry is and holds.
func withoutTimes(snap map[string]string) map[string]string {
	out := make(map[string]string, len(snap))
	for name, desc := range snap {
		f := strings.Fields(desc) // mode, size, time, and a file's hash
		out[name] = strings.Join(slices.Delete(f, 2, 3), " ")
	}
	return out
}

// TestServeClusterVotersDiffer: the first start of a new two-voter
// cluster whose nodes were given different --voters lists (node 1's
// names a third voter) is refused on both sides: each serve exits 1
// naming both lists, before either listens for clients (refusedServe
// fails the test if node 1 prints its address). Without the check each
// node bootstrapped the metadata with its own list.
func TestServeClusterVotersDiffer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cluster nodes")
	}
	base := t.TempDir()
	rafts := freeAddrs(t, 3) // serve binds the first two; the third is never bound
	two := "1@" + rafts[0] + ",2@" + rafts[1]
	three := two + ",3@" + rafts[2]
	node := func(id int, voters string) []string {
		return []string{"serve", filepath.Join(base, fmt.Sprint("node-", id)), "--listen", "127.0.0.1:0",
			"--voters", voters, "--node-id", fmt.Sprint(id), "--raft-listen", rafts[id-1]}
	}
	var stderr2 lockedBuffer
	serve2 := seglogProcess(t, &stderr2, node(2, two)...)
	out2, err := serve2.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve2.Process.Kill() })

	code, msg := refusedServe(t, node(1, three)...)
	for _, s := range []string{"the nodes were not given the same voters", "voters " + two, "voters " + three, "must be given the same --voters"} {
		if code != 1 || !strings.Contains(msg, s) {
			t.Errorf("node 1: exit %d, stderr %q; want 1 and %q", code, msg, s)
		}
	}
	if lines := bufio.NewScanner(out2); lines.Scan() {
		t.Fatalf("node 2 started: %s", lines.Text())
	}
	code = exitCode(t, serve2.Wait(), &stderr2)
	msg = stderr2.String()
	for _, s := range []string{"the nodes were not given the same voters", "voters " + two, "voters " + three} {
		if code != 1 || !strings.Contains(msg, s) {
			t.Errorf("node 2: exit %d, stderr %q; want 1 and %q", code, msg, s)
		}
	}
}

// freeAddrs returns n loopback addresses nothing listens on now, each
// bound and let go, for the test to give its serves (or to leave
// unbound, a voter that is down).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ln.Addr().String())
		ln.Close()
	}
	return out
}
