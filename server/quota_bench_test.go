package server

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduceQuota runs a producer throttled to producer_byte_rate
// (1 MiB/s) and reports the rate it achieves, as a ratio to the quota,
// once the measurement's first windows have passed: a new client may
// send ten windows' worth at once (Kafka's rate divides by at least ten
// windows), so the steady state is what the quota bounds. It reports the
// warm-up's rate too (a burst of ten windows' worth and then throttled:
// about the quota over the first measurement). Each iteration
// is one whole run (use -benchtime=1x); it takes quotaBenchWarm +
// quotaBenchRun.
//
//	go test ./server -run '^$' -bench BenchmarkProduceQuota -benchtime=1x
func BenchmarkProduceQuota(b *testing.B) {
	const (
		quota       = 1 << 20
		recordBytes = 64 << 10
		// A client at its quota sends in bursts as old windows leave
		// the measurement, one per measurement (11 s): the run spans
		// whole measurements and starts between two bursts, so it
		// counts each once.
		quotaBenchWarm = 16500 * time.Millisecond
		quotaBenchRun  = 44 * time.Second
	)
	ts := startServer(b, "", Options{})
	if err := ts.st.CreateTopic("quota", 1, store.DefaultTopicConfig()); err != nil {
		b.Fatal(err)
	}
	if err := ts.srv.localQuotas.Alter([]ClientQuotaChange{{Entity: QuotaEntity{ClientID: "bench"},
		Set: map[string]float64{QuotaProducerByteRate: quota}}}); err != nil {
		b.Fatal(err)
	}
	cl := ts.client(kgo.ClientID("bench"), kgo.DefaultProduceTopic("quota"), kgo.ProducerBatchMaxBytes(2*recordBytes))
	ctx := context.Background()
	// Random, so the batch's compression does not shrink what the quota
	// counts (the request's size on the wire).
	value := make([]byte, recordBytes)
	rand.Read(value)
	var ratio, burst float64
	for range b.N {
		start := time.Now()
		var sent, warmSent int64
		var measured time.Time
		for {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			sent += recordBytes
			now := time.Now()
			if measured.IsZero() && now.Sub(start) >= quotaBenchWarm {
				measured, warmSent = now, sent
			}
			if !measured.IsZero() && now.Sub(measured) >= quotaBenchRun {
				ratio = float64(sent-warmSent) / now.Sub(measured).Seconds() / quota
				burst = float64(warmSent) / measured.Sub(start).Seconds() / quota
				break
			}
		}
	}
	b.ReportMetric(ratio, "rate/quota")
	b.ReportMetric(burst, "warmup-rate/quota")
}
