//go:build benchextras

package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seglog/seglog/bench/raftbench"
	"github.com/seglog/seglog/vfs"
)

// benchRaftTiny is a run of seglog bench raft that takes milliseconds: one
// round, two cheap shapes.
var benchRaftTiny = []string{"bench", "raft", "--rounds", "1", "--round-time", "2ms", "--only", `^(Set|Get) \(`}

// TestBenchRaftTable runs seglog bench raft small: each selected shape
// has a row with a time for both stores and seglog's ratio, raft-boltdb
// is not among them, and nothing is left in --dir.
func TestBenchRaftTable(t *testing.T) {
	dir := t.TempDir()
	r := mustInvoke(t, "", append(benchRaftTiny, "--dir", dir)...)
	for _, p := range []string{raftbench.PeerSeglog, raftbench.PeerWAL} {
		if !strings.Contains(r.stdout, p) {
			t.Errorf("no column for %s:\n%s", p, r.stdout)
		}
	}
	if strings.Contains(r.stdout, raftbench.PeerBolt) {
		t.Errorf("a raft-boltdb column in a run without it:\n%s", r.stdout)
	}
	// A row: the shape, two times in µs, one ratio.
	num := `\d+\.\d`
	for _, shape := range []string{"Set (8-byte value, one key)", "Get (one of two keys set)"} {
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(shape) + ` +` + num + `\S* +` + num + `\S* +` + num + `\S*$`)
		if !row.MatchString(r.stdout) {
			t.Errorf("no row of two times and a ratio for %s:\n%s", shape, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "SetUint64") || strings.Contains(r.stdout, "StoreLogs") {
		t.Errorf("--only let other shapes run:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "bench raft: Set (8-byte value, one key), round 1/1: raft-wal") {
		t.Errorf("no progress line per store on stderr:\n%s", r.stderr)
	}
	if names, err := vfs.Default.List(dir); err != nil || len(names) != 0 {
		t.Errorf("the run left %v (%v)", names, err)
	}
}

// TestBenchRaftJSON: --json prints the results as one array (what
// bench/peers -raft -from reads), both stores measured, seglog's ratio to
// raft-wal set; --peers leaves the other out.
func TestBenchRaftJSON(t *testing.T) {
	r := mustInvoke(t, "", append(benchRaftTiny, "--dir", t.TempDir(), "--json")...)
	var res []raftbench.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(res) != 2*2 {
		t.Fatalf("%d results, want 2 shapes × 2 stores: %+v", len(res), res)
	}
	for _, x := range res {
		if x.Error != "" || x.PerSec <= 0 || x.Rounds != 1 {
			t.Errorf("%+v: want one measured round", x)
		}
		if x.Peer == raftbench.PeerSeglog && x.Ratio <= 0 {
			t.Errorf("%+v: want a ratio to raft-wal", x)
		}
	}

	r = mustInvoke(t, "", append(benchRaftTiny, "--dir", t.TempDir(), "--json", "--peers", "seglog")...)
	res = nil
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	for _, x := range res {
		if x.Peer != raftbench.PeerSeglog || x.Ratio != 0 {
			t.Errorf("--peers seglog: %+v", x)
		}
	}
	if len(res) != 2 {
		t.Errorf("--peers seglog: %d results, want 2", len(res))
	}
}

// TestBenchRaftRefused: flags that select nothing or do not parse, and a
// missing --dir, are refused before anything is created.
func TestBenchRaftRefused(t *testing.T) {
	base := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--only", "("}, "invalid --only"},
		{[]string{"--only", "nothing like it"}, "matches no shape"},
		{[]string{"--peers", "etcd"}, "matches none of"},
		{[]string{"--round-time", "0s"}, "invalid --round-time"},
		{[]string{"--commands", "0"}, "invalid --commands 0"},
	} {
		r := invoke(t, "", append([]string{"bench", "raft", "--dir", base}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("bench raft %v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	r := invoke(t, "", "bench", "raft", "--dir", filepath.Join(base, "mnt", "nvme"))
	if r.code == 0 || !strings.Contains(r.stderr, "create it first") {
		t.Errorf("missing --dir: exit %d, stderr %q", r.code, r.stderr)
	}
	if names, err := vfs.Default.List(base); err != nil || len(names) != 0 {
		t.Errorf("the refused runs left %v (%v)", names, err)
	}
}
