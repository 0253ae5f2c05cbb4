package main

import (
	"maps"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseVoters(t *testing.T) {
	got, err := parseVoters("1@127.0.0.1:9093, 2@localhost:9094,3@[::1]:9095")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]string{1: "127.0.0.1:9093", 2: "localhost:9094", 3: "[::1]:9095"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, bad := range []struct{ in, says string }{
		{"", "want ID@HOST:PORT"},
		{"1@a:1,,2@b:2", "want ID@HOST:PORT"},
		{"127.0.0.1:9093", "want ID@HOST:PORT"},
		{"0@a:1", "id must be"},
		{"-1@a:1", "id must be"},
		{"x@a:1", "id must be"},
		{"3000000000@a:1", "id must be"},
		{"1@a", "missing port"},
		{"1@a:0", "port must be"},
		{"1@a:70000", "port must be"},
		{"1@:9093", "no host"},
		{"1@a:1,1@b:2", "appears twice"},
		{"1@a:1,2@a:1", "same address"},
	} {
		if _, err := parseVoters(bad.in); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("parseVoters(%q) = %v, want an error saying %q", bad.in, err, bad.says)
		}
	}
}

func TestCheckClusterFlags(t *testing.T) {
	voters := map[int32]string{1: "127.0.0.1:9093", 2: "127.0.0.1:9094", 3: "127.0.0.1:9095"}
	if err := checkClusterFlags(voters, 2, "0.0.0.0:9094", 3); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		node   int32
		listen string
		rf     int
		says   string
	}{
		{4, "127.0.0.1:9094", 3, "not among --voters"},
		{2, "127.0.0.1:9093", 3, "not this node's port"},
		{2, "127.0.0.1:0", 3, "not this node's port"},
		{2, "nonsense", 3, "invalid --raft-listen"},
		{2, "127.0.0.1:9094", 4, "must be 1 to the number of voters"},
	} {
		if err := checkClusterFlags(voters, bad.node, bad.listen, bad.rf); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("checkClusterFlags(node %d, %s, rf %d) = %v, want an error saying %q", bad.node, bad.listen, bad.rf, err, bad.says)
		}
	}
}

// TestServeClusterFlagsRefused: a cluster command line that cannot work
// is a usage error (exit 2) naming the flag, and DIR is not created.
func TestServeClusterFlagsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never")
	const voters = "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095"
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--voters", voters, "--node-id", "1"}, "--voters needs --raft-listen"},
		{[]string{"--voters", voters, "--raft-listen", "127.0.0.1:9093"}, "--voters needs --node-id"},
		{[]string{"--voters", voters, "--node-id", "4", "--raft-listen", "127.0.0.1:9093"}, "not among --voters"},
		{[]string{"--voters", voters, "--node-id", "1", "--raft-listen", "127.0.0.1:9094"}, "not this node's port"},
		{[]string{"--voters", "1@127.0.0.1:9093,1@127.0.0.1:9094", "--node-id", "1", "--raft-listen", "127.0.0.1:9093"}, "appears twice"},
		{[]string{"--voters", voters, "--node-id", "1", "--raft-listen", "127.0.0.1:9093", "--default-replication-factor", "4"}, "number of voters"},
		{[]string{"--voters", voters, "--node-id", "1", "--raft-listen", "127.0.0.1:9093", "--listen", "0.0.0.0:9092"}, "give --advertise"},
		{[]string{"--voters", voters, "--node-id", "1", "--raft-listen", "127.0.0.1:9093", "--listen", "127.0.0.1:9093"}, "must differ"},
		{[]string{"--voters", voters, "--node-id", "1", "--raft-listen", "127.0.0.1:9093", "--listen", "0.0.0.0:9093", "--advertise", "h:9093"}, "must differ"},
		// Two spellings of one host (a walk's): refused for what it is,
		// not by the second bind's "address already in use".
		{[]string{"--voters", voters, "--node-id", "1", "--raft-listen", "127.0.0.1:9093", "--listen", "localhost:9093"}, "must differ"},
		{[]string{"--raft-listen", "127.0.0.1:9093"}, "--raft-listen needs --voters"},
		{[]string{"--default-replication-factor", "2"}, "needs --voters"},
		{[]string{"--auto-leader-rebalance=false"}, "--auto-leader-rebalance needs --voters"},
		{[]string{"--leader-imbalance-check-interval", "1m"}, "--leader-imbalance-check-interval only applies with --voters"},
		{[]string{"--voters", voters, "--node-id", "1", "--raft-listen", "127.0.0.1:9093", "--leader-imbalance-check-interval", "0s"}, "--leader-imbalance-check-interval"},
	} {
		args := append([]string{"serve", dir, "--listen", "127.0.0.1:0"}, c.args...)
		r := invoke(t, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.says) {
			t.Errorf("seglog %s: exit %d, stderr %q; want exit %d saying %q", strings.Join(args, " "), r.code, r.stderr, exitUsage, c.says)
		}
		if exists(dir) {
			t.Fatalf("seglog %s created %s", strings.Join(args, " "), dir)
		}
	}
}

// TestServeClusterRaftHostWarned: a --raft-listen host that is not the
// one --voters gives for this node (here localhost against 127.0.0.1: a
// name is not resolved) is warned about, not refused, since a name may
// reach the address bound; a matching one, or every interface, is not.
func TestServeClusterRaftHostWarned(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := filepath.Join(t.TempDir(), "never")
	for _, c := range []struct {
		raft, self string
		warned     bool
	}{
		{"127.0.0.1:9093", "localhost:9093", true},
		{"127.0.0.2:9093", "127.0.0.1:9093", true},
		{"127.0.0.1:9093", "127.0.0.1:9093", false},
		{"0.0.0.0:9093", "node1.example:9093", false},
	} {
		// The Kafka port is taken, so serve stops after its checks.
		args := []string{"serve", dir, "--listen", busy.Addr().String(), "--node-id", "1", "--raft-listen", c.raft,
			"--voters", "1@" + c.self + ",2@127.0.0.1:9094,3@127.0.0.1:9095"}
		r := invoke(t, "", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "address already in use") {
			t.Fatalf("seglog %s: exit %d, stderr %q; want the busy port's error", strings.Join(args, " "), r.code, r.stderr)
		}
		if got := strings.Contains(r.stderr, "warning: --raft-listen "+c.raft+" is not this node's address"); got != c.warned {
			t.Errorf("--raft-listen %s with 1@%s: warned %v, want %v; stderr %q", c.raft, c.self, got, c.warned, r.stderr)
		}
		if exists(dir) {
			t.Fatalf("seglog %s created %s", strings.Join(args, " "), dir)
		}
	}
}
