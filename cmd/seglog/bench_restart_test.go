package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seglog/seglog/bench"
)

// TestBenchRestartSmall runs seglog bench restart on a tiny store: every
// figure is filled in, every acknowledged record is in the store at the
// end, and the table names both sides.
func TestBenchRestartSmall(t *testing.T) {
	res := mustInvoke(t, "", "bench", "restart", "--partitions", "2", "--store-bytes", "20000",
		"--produce-bytes", "3000", "--rounds", "1", "--dir", t.TempDir(), "--json")
	var r bench.RestartResult
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("%v: %s", err, res.stdout)
	}
	if r.Workload != "restart" || r.Records != 1 || r.TopicPartitions != 2 || r.Partitions <= 2 {
		t.Fatalf("result %+v", r)
	}
	for name, v := range map[string]float64{"listen": r.ListenMs, "baseline listen": r.BaselineListenMs,
		"ready": r.ReadyMs, "baseline ready": r.BaselineReadyMs, "ratio": r.Ratio, "time ratio": r.TimeRatio} {
		if v <= 0 {
			t.Errorf("%s = %v", name, v)
		}
	}
	if r.ReadyMs < r.ListenMs || r.BaselineReadyMs < r.BaselineListenMs {
		t.Errorf("ready before listening: %+v", r)
	}
	// 200 records in the store, 30 produced in each of the four rounds
	// (a warm-up and a timed one per side).
	if r.Verified != 200+4*30 {
		t.Errorf("verified %d records, want %d", r.Verified, 200+4*30)
	}

	table := mustInvoke(t, "", "bench", "restart", "--partitions", "1", "--store-bytes", "1000",
		"--produce-bytes", "0", "--rounds", "1", "--dir", t.TempDir())
	for _, want := range []string{"after SIGKILL", "after a clean stop", "SIGKILL ÷ clean stop", "load average"} {
		if !strings.Contains(table.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, table.stdout)
		}
	}
}

// TestBenchRestartFlags: a bad flag is a usage error (exit 2), refused
// before anything is built.
func TestBenchRestartFlags(t *testing.T) {
	for _, args := range [][]string{{"--partitions", "0"}, {"--record-size", "0"}, {"--rounds", "0"},
		{"--store-bytes", "-1"}, {"--produce-bytes", "-1"}} {
		r := invoke(t, "", append([]string{"bench", "restart", "--dir", t.TempDir()}, args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "invalid "+args[0]) {
			t.Errorf("bench restart %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}
