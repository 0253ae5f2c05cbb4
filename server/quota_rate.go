package server

import (
	"math"
	"time"
)

// Kafka's quota windows: rates are measured over quota.window.num samples
// of quota.window.size.seconds each (11 × 1 s by default), as Kafka's
// ClientQuotaManager measures them.
const (
	quotaWindowNum  = 11
	quotaWindowSize = time.Second
	quotaWindowMs   = int64(quotaWindowSize / time.Millisecond)
)

// maxRequestThrottleMs bounds a request_percentage throttle to one
// window, as Kafka's ClientRequestQuotaManager does; a byte-rate throttle
// is not bounded (ClientQuotaManager's QuotaUtils.throttleTime).
const maxRequestThrottleMs = quotaWindowMs

// rateSample is one window of a rate: when it started (ms) and the total
// recorded in it.
type rateSample struct {
	start int64
	value float64
}

// quotaRate is Kafka's Rate over a SampledStat (WindowedSum) with
// quotaWindowNum samples of quotaWindowMs, rewritten so that a throttle
// computed here is the throttle Kafka computes for the same recordings at
// the same instants. Times are milliseconds, as Kafka's timeMs. Not safe
// for concurrent use: the quota manager's lock guards it.
type quotaRate struct {
	samples []rateSample // at most quotaWindowNum
	current int
	last    int64 // the last recording, for expiring idle rates
}

// record adds value at now: a new sample starts once the current one is
// a window old (SampledStat.record, advance), on the window boundary
// nearest before now counting from the current one's end, as Kafka's
// SampledStat aligns them, so time between recordings is not lost from
// the measurement.
func (r *quotaRate) record(value float64, now int64) {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, rateSample{start: now})
	}
	if cur := r.samples[r.current].start; now-cur >= quotaWindowMs {
		end := cur + quotaWindowMs
		start := now - (now-end)%quotaWindowMs
		r.current = (r.current + 1) % quotaWindowNum
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, rateSample{start: start})
		} else {
			r.samples[r.current] = rateSample{start: start}
		}
	}
	r.samples[r.current].value += value
	r.last = now
}

// purge resets the samples that are a whole measurement (every window)
// old, as SampledStat.purgeObsoleteSamples does.
func (r *quotaRate) purge(now int64) {
	for i := range r.samples {
		if now-r.samples[i].start >= quotaWindowNum*quotaWindowMs {
			r.samples[i] = rateSample{start: now}
		}
	}
}

// windowMs is the span the rate divides by (Rate.windowSize): from the
// oldest sample to now, but never less than quotaWindowNum-1 whole
// windows, so a client's first burst is spread over the whole measurement
// instead of counting as an enormous rate; at least 1 ms.
func (r *quotaRate) windowMs(now int64) int64 {
	r.purge(now)
	if len(r.samples) == 0 {
		r.samples = append(r.samples, rateSample{start: now})
	}
	oldest := r.samples[0].start
	for _, s := range r.samples[1:] {
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full := elapsed / quotaWindowMs; full < quotaWindowNum-1 {
		elapsed += (quotaWindowNum - 1 - full) * quotaWindowMs
	}
	return max(elapsed, 1)
}

// measure is the rate per second at now (Rate.measure).
func (r *quotaRate) measure(now int64) float64 {
	r.purge(now)
	var total float64
	for _, s := range r.samples {
		total += s.value
	}
	return total / (float64(r.windowMs(now)) / 1000)
}

// throttleMs is how long a client measured at rate must wait for its rate
// to fall to bound with nothing more recorded (QuotaUtils.throttleTime):
// with O the observed rate and T the bound over a window W, a delay X
// with O·W/(W+X) = T, so X = (O-T)/T·W, rounded as Java's Math.round.
// Zero when the rate is within the bound.
func throttleMs(rate, bound float64, windowMs int64) int64 {
	if rate <= bound {
		return 0
	}
	x := (rate - bound) / bound * float64(windowMs)
	if x >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int64(math.Floor(x + 0.5))
}

// idle reports whether every sample of r is obsolete at now: the rate
// measures zero and a fresh one would measure the same, so the manager
// may forget it.
func (r *quotaRate) idle(now int64) bool {
	return now-r.last >= quotaWindowNum*quotaWindowMs
}
