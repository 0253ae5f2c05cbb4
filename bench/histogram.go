package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds from 1 ns to 100 s with 3
// significant digits: a 170 µs fsync and a 1 µs append are both resolved
// to 0.1%, and anything slower than 100 s is clamped (and then is the
// story anyway).
const (
	histMin = 1
	histMax = int64(100 * time.Second)
	histSig = 3
)

// recorder is one goroutine's latency histogram; merge them at the end.
type recorder struct{ h *hdrhistogram.Histogram }

func newRecorder() *recorder { return &recorder{hdrhistogram.New(histMin, histMax, histSig)} }

func (r *recorder) record(d time.Duration) {
	v := min(max(int64(d), histMin), histMax)
	_ = r.h.RecordValue(v) // in range by construction
}

func (r *recorder) merge(o *recorder) { r.h.Merge(o.h) }

func (r *recorder) summary() Latency {
	if r.h.TotalCount() == 0 {
		return Latency{}
	}
	us := func(v int64) float64 { return float64(v) / 1e3 }
	return Latency{
		P50:  us(r.h.ValueAtQuantile(50)),
		P90:  us(r.h.ValueAtQuantile(90)),
		P99:  us(r.h.ValueAtQuantile(99)),
		P999: us(r.h.ValueAtQuantile(99.9)),
		Max:  us(r.h.Max()),
		Mean: r.h.Mean() / 1e3,
	}
}
