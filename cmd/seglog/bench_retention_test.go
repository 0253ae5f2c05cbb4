package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchRetention(t *testing.T) {
	r := mustInvoke(t, "", "bench", "retention", "--memory", "--logs", "10", "--segments", "2", "--rounds", "1", "--appends", "100")
	if !strings.Contains(r.stdout, "10 logs × 2 segments (in memory)") || !strings.Contains(r.stdout, "(10 segments deleted)") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	r = mustInvoke(t, "", "bench", "retention", "--dir", t.TempDir(), "--logs", "5", "--segments", "3", "--rounds", "1", "--appends", "50", "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if res["workload"] != "retention" || res["segments_deleted"] != float64(5) || !(res["ratio"].(float64) > 0) {
		t.Fatalf("JSON %s", r.stdout)
	}
	if r := invoke(t, "", "bench", "retention", "--segments", "1"); r.code != 2 || !strings.Contains(r.stderr, "must be from 2 to") {
		t.Fatalf("--segments 1: exit %d, %q", r.code, r.stderr)
	}
}
