//go:build benchextras

package main

import (
	"encoding/json"
	"testing"

	"github.com/seglog/seglog/bench/benchserve"
)

// TestBenchServeSmall runs seglog bench serve on a tiny workload: every
// system produces and consumes everything, and the figures are filled in.
func TestBenchServeSmall(t *testing.T) {
	res := mustInvoke(t, "", "bench", "serve", "--records", "600", "--partitions", "3",
		"--latency-records", "5", "--consume-rounds", "2", "--dir", t.TempDir(), "--json")
	var r benchserve.Result
	if err := json.Unmarshal([]byte(res.stdout), &r); err != nil {
		t.Fatalf("%v: %s", err, res.stdout)
	}
	for _, s := range []benchserve.Side{r.Direct, r.Seglog, r.Kfake} {
		if s.ProduceRecsSec <= 0 {
			t.Errorf("%s: no produce rate", s.Name)
		}
	}
	for _, s := range []benchserve.Side{r.Seglog, r.Copy, r.Kfake} {
		if s.ConsumeMBs <= 0 {
			t.Errorf("%s: no consume rate", s.Name)
		}
	}
	if r.Seglog.RawFetchMBs <= 0 || r.Copy.RawFetchMBs <= 0 {
		t.Errorf("raw fetch rates %v and %v", r.Seglog.RawFetchMBs, r.Copy.RawFetchMBs)
	}
	// The server's CPU time comes in /proc's 10 ms ticks, which a run
	// this small may not reach: only the rate is checked (benchRawProduce
	// itself checks that every batch was stored at the offsets answered).
	if r.Seglog.RawProduceRecsSec <= 0 || r.Seglog.RawProduceCPUSecPerGB < 0 {
		t.Errorf("raw produce rate %v, CPU %v", r.Seglog.RawProduceRecsSec, r.Seglog.RawProduceCPUSecPerGB)
	}
	// getrusage counts in microseconds: any produce registers.
	if r.Seglog.ClientCPUSecPerGB <= 0 || r.Seglog.RawProduceClientCPUSecPerGB <= 0 || r.Direct.ProduceCPUSecPerGB <= 0 || r.Seglog.ConsumeClientCPUSecPerGB <= 0 {
		t.Errorf("own CPU per GB: kgo producer %v, raw producer %v, direct append %v, kgo consumers %v",
			r.Seglog.ClientCPUSecPerGB, r.Seglog.RawProduceClientCPUSecPerGB, r.Direct.ProduceCPUSecPerGB, r.Seglog.ConsumeClientCPUSecPerGB)
	}
	if r.Seglog.P99Ms <= 0 || r.Seglog.P99Ms < r.Seglog.P50Ms {
		t.Errorf("latency p50 %v p99 %v", r.Seglog.P50Ms, r.Seglog.P99Ms)
	}
}
