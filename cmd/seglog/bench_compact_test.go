package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seglog/seglog/bench"
)

func TestBenchCompact(t *testing.T) {
	r := mustInvoke(t, "", "bench", "compact", "--keys", "20,2000", "--records", "5000", "--map-bytes", "65536", "--dir", t.TempDir(), "--json")
	var res bench.CompactResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %q", err, r.stdout)
	}
	if res.Workload != "compact" || len(res.Runs) != 2 || res.Runs[0].Keys != 20 || res.Runs[1].Keys != 2000 ||
		res.Runs[0].InputMBps <= 0 || res.Runs[0].MapBytes != 65536 {
		t.Fatalf("result %+v", res)
	}
	r = invoke(t, "", "bench", "compact", "--keys", "10,zero")
	if r.code != 2 || !strings.Contains(r.stderr, `invalid key count "zero"`) {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}
