package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchStore(t *testing.T) {
	r := mustInvoke(t, "", "bench", "store", "--dir", t.TempDir(), "--records", "600", "--batch", "100", "--rounds", "1",
		"--open-partitions", "60", "--fill-every", "7", "--groups", "5")
	for _, want := range []string{"600 keyed records of 1024 B over 12 partitions, 100 per call", "60 partitions (9 holding records)",
		"5 groups × 12 partitions", "ratio"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("no %q in:\n%s", want, r.stdout)
		}
	}
	r = mustInvoke(t, "", "bench", "store", "--dir", t.TempDir(), "--records", "240", "--partitions", "3", "--rounds", "1",
		"--open-partitions", "10", "--groups", "2", "--json")
	var res map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if res["workload"] != "store" || !(res["produce_ratio"].(float64) > 0) || !(res["commit_ratio"].(float64) > 0) || res["filled_partitions"] != float64(1) {
		t.Fatalf("JSON %s", r.stdout)
	}
	if r := invoke(t, "", "bench", "store", "--groups", "0"); r.code != 2 || !strings.Contains(r.stderr, "--groups") {
		t.Fatalf("--groups 0: exit %d, %q", r.code, r.stderr)
	}
}
