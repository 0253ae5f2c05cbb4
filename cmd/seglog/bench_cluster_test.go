//go:build benchextras

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/bench/benchcluster"
	"github.com/seglog/seglog/vfs"
)

// bench cluster refuses bad flags before it starts anything or makes a
// directory, as a usage error naming the flag.
func TestBenchClusterRefusesBadFlags(t *testing.T) {
	base := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--records", "1", "--partitions", "2"}, "invalid --records 1: must be at least --partitions 2"},
		{[]string{"--partitions", "0"}, "invalid --partitions 0"},
		{[]string{"--rounds", "0"}, "invalid --rounds 0"},
		{[]string{"--record-size", "0"}, "invalid --record-size 0"},
		{[]string{"--kills", "-1"}, "invalid --kills -1"},
		{[]string{"--failover-rate", "-5"}, "invalid --failover-rate -5"},
		{[]string{"--metadata-min-age", "0s"}, "invalid --metadata-min-age 0s"},
	} {
		args := append([]string{"bench", "cluster", "--dir", base}, tc.args...)
		r := invoke(t, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("seglog %s: exit %d, stderr %q; want a usage error saying %q", strings.Join(args, " "), r.code, r.stderr, tc.want)
		}
	}
	r := invoke(t, "", "bench", "cluster", "--records", "100", "--dir", filepath.Join(base, "mnt", "nvme"))
	if r.code == 0 || !strings.Contains(r.stderr, "create it first") {
		t.Errorf("a missing --dir: exit %d, stderr %q", r.code, r.stderr)
	}
	if names, err := vfs.Default.List(base); err != nil || len(names) != 0 {
		t.Errorf("the refused runs left %v (%v)", names, err)
	}
}

// TestBenchClusterSmall runs seglog bench cluster for real on a tiny
// workload: three nodes and one, a round each, one failover, and the
// checker, so that CI runs the command end to end. It needs serve's
// cluster flags, and skips itself while serve has none.
func TestBenchClusterSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four seglog serve processes and kills one")
	}
	if help := mustInvoke(t, "", "serve", "--help").stdout; !strings.Contains(help, "--raft-listen") {
		t.Skip("seglog serve has no --raft-listen yet: no cluster to measure")
	}
	dir := t.TempDir()
	res := invoke(t, "", "bench", "cluster", "--records", "3000", "--record-size", "100", "--partitions", "2",
		"--rounds", "1", "--kills", "1", "--failover-rate", "500", "--dir", dir, "--json")
	var r benchcluster.Result
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("exit %d, %v: stdout %q\nstderr: %s", res.code, err, res.stdout, res.stderr)
	}
	if res.code != 0 {
		t.Fatalf("exit %d; checker %+v\nstderr: %s", res.code, r.Check, res.stderr)
	}
	for _, s := range []benchcluster.Side{r.Single, r.Synced, r.Cluster} {
		if s.ProduceRecsSec <= 0 || s.ConsumeMBs <= 0 || len(s.Rounds) != 1 {
			t.Errorf("%s: produce %v rec/s, consume %v MB/s, %d rounds", s.Name, s.ProduceRecsSec, s.ConsumeMBs, len(s.Rounds))
		}
	}
	if r.ProduceRatio <= 0 || r.ConsumeRatio <= 0 || r.SyncedProduceRatio <= 0 {
		t.Errorf("ratios: produce %v, consume %v, produce to the synced node %v", r.ProduceRatio, r.ConsumeRatio, r.SyncedProduceRatio)
	}
	if len(r.Failovers) != 1 {
		t.Fatalf("%d failovers, want 1: %+v", len(r.Failovers), r.Failovers)
	}
	f := r.Failovers[0]
	if f.Killed < 1 || f.NewLeader < 1 || f.NewLeader == f.Killed || f.AckSec <= 0 || f.LeaderSec <= 0 || f.RejoinSec < f.ListenSec {
		t.Errorf("failover %+v", f)
	}
	// Every record the writer produced was acknowledged or failed, and
	// every acknowledged one read back (the checker, which passed).
	if c := r.Check; c == nil || c.Acked == 0 || c.Acked+c.Failed != r.FailoverRecords || c.Read < c.Acked || !c.OK() {
		t.Errorf("checker %+v for %d records produced", c, r.FailoverRecords)
	}
	if names, err := vfs.Default.List(dir); err != nil || len(names) != 0 {
		t.Errorf("the run left %v (%v)", names, err)
	}
}
