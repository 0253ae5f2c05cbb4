package server

import (
	"encoding/binary"
	"math"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// connQuota is one connection's quota bookkeeping. Everything but mute is
// touched only by the goroutine answering requests.
type connQuota struct {
	start  time.Time     // the quota clock when the request began
	parked time.Duration // of the time since, what a fetch spent parked
	// bytes is the byte-rate throttle the request earned (produce), and
	// request its request_percentage throttle once measured.
	bytes, request int64
	// unmeasured is a request whose handling waits on other clients
	// (JoinGroup, SyncGroup): its time is not the client's load, as
	// Kafka's purgatory time is not request-thread time.
	unmeasured bool

	// mute is closed when the connection's mute ends; nil when it was
	// never muted. Guarded by conn.mu: the frame reader waits on it too.
	mute      chan struct{}
	muteTimer timer
}

// quotaUser is the user quotas see: the SASL principal, none without SASL.
func (c *conn) quotaUser() string {
	if c.sasl != nil && c.sasl.authenticated.Load() {
		return c.sasl.user
	}
	return ""
}

// beginQuota starts measuring a request's handling time.
func (c *conn) beginQuota(req kmsg.Request) {
	q := &c.quota
	q.start, q.parked, q.bytes = c.s.quota.clk.Now(), 0, 0
	switch req.(type) {
	case *kmsg.JoinGroupRequest, *kmsg.SyncGroupRequest:
		q.unmeasured = true
	default:
		q.unmeasured = false
	}
}

// produceQuota records a Produce request's size against the producer
// byte rate (Kafka counts the whole request); its throttle is applied
// with the response's.
func (c *conn) produceQuota(size int) {
	m := c.s.quota
	c.quota.bytes = m.record(quotaProduce, c.quotaUser(), c.clientID, float64(size), m.nowMs())
}

// requestThrottle records the request's handling time against
// request_percentage and returns the throttle the response carries: the
// larger of that and a byte-rate throttle, as Kafka's handlers take.
func (c *conn) requestThrottle() int64 {
	m := c.s.quota
	var t int64
	if !c.quota.unmeasured && !c.quota.start.IsZero() {
		d := m.clk.Now().Sub(c.quota.start) - c.quota.parked
		t = m.record(quotaRequest, c.quotaUser(), c.clientID, requestPercentage(max(d, 0)), m.nowMs())
	}
	// Measured once: a SASL exchange's answers (written without a
	// beginQuota) are exempt, as in Kafka.
	c.quota.start = time.Time{}
	c.quota.request = t
	return max(t, c.quota.bytes)
}

// throttleResponse sets a response's throttle_time_ms and returns it, and
// whether the client waits it out itself (KIP-219: the server answers at
// once and then mutes the connection) or expects the answer delayed, as
// older versions do.
func (c *conn) throttleResponse(resp kmsg.Response) (ms int64, clientWaits bool) {
	ms = c.requestThrottle()
	if c.quota.bytes > c.quota.request {
		c.s.quota.counted(quotaProduce, ms)
	} else {
		c.s.quota.counted(quotaRequest, ms)
	}
	clientWaits = true
	if tr, ok := resp.(kmsg.ThrottleResponse); ok {
		_, clientWaits = tr.Throttle()
		if st, ok := resp.(kmsg.SetThrottleResponse); ok && ms > 0 {
			st.SetThrottle(int32(min(ms, math.MaxInt32)))
		}
	}
	return ms, clientWaits
}

// counted notes a throttle of ms set by kind's quota.
func (q *quotaCounters) counted(kind quotaKind, ms int64) {
	if ms > 0 {
		q.throttles[kind].Add(1)
		q.throttleMs[kind].Add(ms)
	}
}

// metrics is the throttles given so far, per quota key.
func (q *quotaCounters) metrics() []ThrottleMetrics {
	out := make([]ThrottleMetrics, numQuotaKinds)
	for k := range out {
		out[k] = ThrottleMetrics{Quota: quotaKeys[k], Throttles: q.throttles[k].Load(),
			Seconds: float64(q.throttleMs[k].Load()) / 1000}
	}
	return out
}

// ThrottleMetrics counts the throttles of one quota key.
type ThrottleMetrics struct {
	// Quota is the key: producer_byte_rate, consumer_byte_rate or
	// request_percentage.
	Quota string
	// Throttles is how many responses carried a throttle this quota set
	// (or, for acks=0 Produce, how many mutes it set without one), and
	// Seconds their total.
	Throttles int64
	Seconds   float64
}

// A response carrying a throttle of ms is written at once and the
// connection then muted when the client waits the throttle out itself
// (throttleAfter), after the mute otherwise (throttleBefore). Two calls
// around the write rather than one taking it, so that answering a
// request allocates no closure.

// throttleBefore delays the write of a response whose client does not
// wait out its throttle.
func (c *conn) throttleBefore(ms int64, clientWaits bool) error {
	if ms > 0 && !clientWaits {
		c.startMute(ms)
		if !c.waitUnmuted(true) {
			return c.ctx.Err()
		}
	}
	return nil
}

// throttleAfter mutes the connection once the response is written.
func (c *conn) throttleAfter(ms int64, clientWaits bool) {
	if ms > 0 && clientWaits {
		c.startMute(ms)
	}
}

// fetchQuota records a Fetch's handling time and response size and
// returns the frame to send and its throttle: over either quota, an empty
// response (the bytes recorded are taken back, none were sent), as
// Kafka's fetch answers a throttled consumer.
func (c *conn) fetchQuota(f *fetchFrame, corr int32, version int16, topErr int16) (*fetchFrame, int64, bool) {
	m := c.s.quota
	rt := c.requestThrottle()
	now := m.nowMs()
	user := c.quotaUser()
	bt := m.record(quotaFetch, user, c.clientID, float64(f.size), now)
	ms := max(rt, bt)
	if ms == 0 {
		return f, 0, false
	}
	if bt > rt {
		m.counted(quotaFetch, ms)
	} else {
		m.counted(quotaRequest, ms)
	}
	m.unrecord(quotaFetch, user, c.clientID, float64(f.size), now)
	f = encodeFetch(corr, version, topErr, nil)
	// throttle_time_ms is the body's first field, after the size, the
	// correlation id and a flexible header's tags.
	at := 8
	if version >= 12 {
		at++
	}
	binary.BigEndian.PutUint32(f.out[at:], uint32(min(ms, math.MaxInt32)))
	return f, ms, true
}

// fetchMaxBytes bounds a Fetch's MaxBytes by the consumer's byte quota.
func (c *conn) fetchMaxBytes(req *kmsg.FetchRequest) {
	if b, ok := c.s.quota.maxFetchBytes(c.quotaUser(), c.clientID); ok && (req.MaxBytes <= 0 || int64(req.MaxBytes) > b) {
		req.MaxBytes = int32(max(b, 1))
	}
}

// startMute stops the connection being read or answered for ms: its
// next request waits until the quota clock has moved that far.
func (c *conn) startMute(ms int64) {
	ch := make(chan struct{})
	c.mu.Lock()
	c.quota.mute = ch
	c.mu.Unlock()
	c.quota.muteTimer = c.s.quota.clk.AfterFunc(time.Duration(ms)*time.Millisecond, func() { close(ch) })
}

// waitUnmuted waits until the connection's mute ends, false when the
// connection ends first. handler marks the goroutine answering requests,
// the reader otherwise; each is counted while it waits, so tests observe
// the mute wherever it holds the next request (read before the mute
// began, or not read yet).
func (c *conn) waitUnmuted(handler bool) bool {
	c.mu.Lock()
	ch := c.quota.mute
	c.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
	}
	n := &c.s.quota.mutedReaders
	if handler {
		n = &c.s.quota.mutedHandlers
	}
	n.Add(1)
	defer n.Add(-1)
	select {
	case <-ch:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// stopMute lets go of the mute's timer when the connection ends.
func (c *conn) stopMute() {
	if t := c.quota.muteTimer; t != nil {
		t.Stop()
	}
}

// quotaCounters are the quota manager's figures, for Metrics and tests.
type quotaCounters struct {
	// throttles and throttleMs count the throttles given, per the quota
	// that set each (the larger, when two did).
	throttles, throttleMs [numQuotaKinds]atomic.Int64
	// mutedHandlers counts connections whose next request, read, waits
	// for a mute to end; mutedReaders those whose reader waits for one
	// before reading.
	mutedHandlers, mutedReaders atomic.Int64
}
