package server

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

func strp(s string) *string { return &s }

// TestClientQuotasKadm: kadm's AlterClientQuotas and DescribeClientQuotas
// round trip, validate_only changes nothing, Kafka's refusals come back
// per entity, and the quotas survive a restart.
func TestClientQuotasKadm(t *testing.T) {
	ts := startServer(t, "", Options{})
	adm := kadm.NewClient(ts.client())
	ctx := context.Background()
	user := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: QuotaEntityUser, Name: n}
	}
	client := func(n *string) kadm.ClientQuotaEntityComponent {
		return kadm.ClientQuotaEntityComponent{Type: QuotaEntityClientID, Name: n}
	}
	set := func(k string, v float64) kadm.AlterClientQuotaOp { return kadm.AlterClientQuotaOp{Key: k, Value: v} }
	entries := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{user(strp("alice")), client(strp("app"))}, Ops: []kadm.AlterClientQuotaOp{set(QuotaProducerByteRate, 1024)}},
		{Entity: kadm.ClientQuotaEntity{user(nil)}, Ops: []kadm.AlterClientQuotaOp{set(QuotaConsumerByteRate, 2048), set(QuotaRequestPercentage, 25)}},
		{Entity: kadm.ClientQuotaEntity{client(nil)}, Ops: []kadm.AlterClientQuotaOp{set(QuotaProducerByteRate, 4096)}},
	}
	res, err := adm.ValidateAlterClientQuotas(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("validate %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	if d, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(d) != 0 {
		t.Fatalf("after validate_only: %v %v", d, err)
	}
	bad := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{user(strp("bob"))}, Ops: []kadm.AlterClientQuotaOp{set("bogus", 1)}},
		{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: strp("1.2.3.4")}}, Ops: []kadm.AlterClientQuotaOp{set(QuotaProducerByteRate, 1)}},
		{Entity: kadm.ClientQuotaEntity{user(strp(""))}, Ops: []kadm.AlterClientQuotaOp{set(QuotaProducerByteRate, 1)}},
	}
	res, err = adm.AlterClientQuotas(ctx, append(bad, entries...))
	if err != nil {
		t.Fatal(err)
	}
	want := []error{kerr.InvalidRequest, kerr.UnsupportedVersion, kerr.InvalidRequest, nil, nil, nil}
	for i, r := range res {
		if !errors.Is(r.Err, want[i]) && r.Err != want[i] {
			t.Errorf("entry %d %v: %v (%s), want %v", i, r.Entity, r.Err, r.ErrMessage, want[i])
		}
	}
	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) []string {
		t.Helper()
		d, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range d {
			out = append(out, q.Entity.String())
		}
		return out
	}
	exact := func(typ, name string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchName: strp(name), MatchType: kmsg.QuotasMatchTypeExact}
	}
	def := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeDefault}
	}
	anyOf := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeAny}
	}
	for _, c := range []struct {
		strict bool
		comps  []kadm.DescribeClientQuotaComponent
		want   string
	}{
		{false, nil, "{client-id=<default>} {user=<default>} {user=alice, client-id=app}"},
		{false, []kadm.DescribeClientQuotaComponent{exact(QuotaEntityUser, "alice")}, "{user=alice, client-id=app}"},
		{true, []kadm.DescribeClientQuotaComponent{exact(QuotaEntityUser, "alice")}, ""},
		{false, []kadm.DescribeClientQuotaComponent{def(QuotaEntityUser)}, "{user=<default>}"},
		{false, []kadm.DescribeClientQuotaComponent{anyOf(QuotaEntityClientID)}, "{client-id=<default>} {user=alice, client-id=app}"},
		{true, []kadm.DescribeClientQuotaComponent{anyOf(QuotaEntityClientID)}, "{client-id=<default>}"},
	} {
		if got := strings.Join(describe(c.strict, c.comps...), " "); got != c.want {
			t.Errorf("describe strict=%v %v: %q, want %q", c.strict, c.comps, got, c.want)
		}
	}
	d, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{def(QuotaEntityUser)})
	if err != nil || len(d) != 1 || len(d[0].Values) != 2 || d[0].Values[0] != (kadm.ClientQuotaValue{Key: QuotaConsumerByteRate, Value: 2048}) ||
		d[0].Values[1] != (kadm.ClientQuotaValue{Key: QuotaRequestPercentage, Value: 25}) {
		t.Fatalf("default user's values: %+v %v", d, err)
	}
	// Removing the last key removes the entity.
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{client(nil)},
		Ops: []kadm.AlterClientQuotaOp{{Key: QuotaProducerByteRate, Remove: true}}}}); err != nil {
		t.Fatal(err)
	}
	dir := ts.dir
	ts.stop()
	ts = startServer(t, dir, Options{})
	adm = kadm.NewClient(ts.client())
	if got := strings.Join(describe(false), " "); got != "{user=<default>} {user=alice, client-id=app}" {
		t.Fatalf("after a restart: %q", got)
	}
}

// quotaServer serves with a fake quota clock and a raw connection whose
// client id ("test") has the given quotas.
func quotaServer(t *testing.T, values map[string]float64) (*testServer, *fakeClock, *rawConn) {
	t.Helper()
	clk := newFakeClock()
	ts := startServer(t, "", Options{quotaClock: clk})
	for _, topic := range []string{"q", "f"} {
		if err := ts.st.CreateTopic(topic, 1, store.DefaultTopicConfig()); err != nil {
			t.Fatal(err)
		}
	}
	c := dialRaw(t, ts.addr)
	if values != nil {
		setTestQuota(t, c, values)
	}
	return ts, clk, c
}

func setTestQuota(t *testing.T, c *rawConn, values map[string]float64) {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: QuotaEntityClientID, Name: strp("test")}}
	for k, v := range values {
		e.Ops = append(e.Ops, kmsg.AlterClientQuotasRequestEntryOp{Key: k, Value: v})
	}
	req.Entries = append(req.Entries, e)
	resp := c.do(req).(*kmsg.AlterClientQuotasResponse)
	if resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("setting the quota: error %d", resp.Entries[0].ErrorCode)
	}
}

// bigBatch is a batch of about n bytes of values.
func bigBatch(t *testing.T, n int) []byte {
	t.Helper()
	b := record.NewBuilder(record.None)
	b.SetBaseTimestamp(time.Now().UnixMilli())
	b.SetPartitionLeaderEpoch(-1)
	b.SetProducer(-1, -1, -1)
	if err := b.AddRecord(0, 0, nil, make([]byte, n), nil); err != nil {
		t.Fatal(err)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), out...)
}

// expectMuted checks that the connection's next request waits for the
// mute of ms to end on the quota clock: the request is held until the
// clock has moved the whole of ms, then answered.
func expectMuted(t *testing.T, ts *testServer, clk *fakeClock, c *rawConn, ms int64) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	corr := c.send(req)
	// The request is held either by the answering goroutine (read before
	// the mute began: the answer's write and the mute's start race the
	// reader's next read) or by the reader, which does not read it.
	q := &ts.srv.quota.quotaCounters
	held := func() bool { return q.mutedHandlers.Load() == 1 || q.mutedReaders.Load() == 1 }
	testutil.WaitFor(t, "the next request held by the mute", held)
	clk.Advance(time.Duration(ms-1) * time.Millisecond)
	if !held() {
		t.Fatalf("unmuted 1 ms early (%d handlers, %d readers held)", q.mutedHandlers.Load(), q.mutedReaders.Load())
	}
	clk.Advance(time.Millisecond)
	c.recv(req, corr)
	if n := ts.srv.quota.mutedHandlers.Load(); n != 0 {
		t.Fatalf("%d held after the mute", n)
	}
}

// TestProduceOverQuota: a produce over producer_byte_rate is stored and
// answered at once with Kafka's throttle for its size, and the connection
// is then muted for that long.
func TestProduceOverQuota(t *testing.T) {
	const bound = 1000
	ts, clk, c := quotaServer(t, map[string]float64{QuotaProducerByteRate: bound})
	req := produceReq(9, -1, "q", 0, bigBatch(t, 30000))
	frame, corr := c.frame(req)
	if _, err := c.nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	resp := c.recv(req, corr).(*kmsg.ProduceResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("produce: error %d offset %d", p.ErrorCode, p.BaseOffset)
	}
	// Kafka counts the request's size over the minimum 10 s: a rate of
	// size/10 B/s, and (size/10-1000)/1000 × 10000 ms = size-10000 ms.
	size := int64(len(frame) - 4)
	want := size - 10000
	if int64(resp.ThrottleMillis) != want {
		t.Fatalf("throttle %d ms, want %d for a %d-byte request", resp.ThrottleMillis, want, size)
	}
	l, err := ts.st.Log("q", 0)
	if err != nil || l.EndOffset() != 1 {
		t.Fatalf("the throttled batch is not stored: %v", err)
	}
	expectMuted(t, ts, clk, c, want)
	th := ts.srv.Metrics().Throttles
	if th[quotaProduce].Quota != QuotaProducerByteRate || th[quotaProduce].Throttles != 1 ||
		th[quotaProduce].Seconds != float64(want)/1000 || th[quotaFetch].Throttles != 0 || th[quotaRequest].Throttles != 0 {
		t.Fatalf("throttle metrics %+v", th)
	}
}

// TestFetchOverQuota: a fetch over consumer_byte_rate is answered empty
// with the throttle its response would have earned, and the connection
// muted; the bytes it did not send are not counted.
func TestFetchOverQuota(t *testing.T) {
	const bound = 10
	ts, clk, c := quotaServer(t, nil)
	if p := produceOne(t, c, 9, "f", bigBatch(t, 500)); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	freq := fetchReq(12, 0, "f", map[int32]int64{0: 0})
	corr := c.send(freq)
	full, err := c.readFrame()
	if err != nil || int32(binary.BigEndian.Uint32(full)) != corr {
		t.Fatalf("unthrottled fetch: %v", err)
	}
	setTestQuota(t, c, map[string]float64{QuotaConsumerByteRate: bound})
	want := int64(len(full))*1000/bound - 10000 // (size/10-bound)/bound × 10000
	for range 2 {
		resp := c.do(freq).(*kmsg.FetchResponse)
		if len(resp.Topics) != 0 || resp.ErrorCode != 0 {
			t.Fatalf("throttled fetch answered %d topics, error %d", len(resp.Topics), resp.ErrorCode)
		}
		if int64(resp.ThrottleMillis) != want {
			t.Fatalf("throttle %d ms, want %d for a %d-byte response", resp.ThrottleMillis, want, len(full))
		}
		// Taken back: the same fetch earns the throttle again, less the
		// part of the window it starts in that has passed (Kafka starts
		// windows on the old ones' boundaries: the mute ended want%1000
		// ms into one).
		expectMuted(t, ts, clk, c, want)
		want -= want % 1000
	}
	if th := ts.srv.Metrics().Throttles[quotaFetch]; th.Quota != QuotaConsumerByteRate || th.Throttles != 2 {
		t.Fatalf("fetch throttle metrics %+v", th)
	}
}

// TestRequestQuotaOnEveryResponse: a client over request_percentage finds
// the throttle (at most one window) in any response with the field.
func TestRequestQuotaOnEveryResponse(t *testing.T) {
	ts, clk, c := quotaServer(t, map[string]float64{QuotaRequestPercentage: 1})
	m := ts.srv.quota
	// Ten seconds of one thread's time in the client's name.
	m.record(quotaRequest, "", "test", requestPercentage(10*time.Second), m.nowMs())
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	if got := c.do(md).(*kmsg.MetadataResponse).ThrottleMillis; int64(got) != maxRequestThrottleMs {
		t.Fatalf("metadata throttle %d, want %d", got, maxRequestThrottleMs)
	}
	clk.WaitForTimers(t, 1) // the mute, armed once the answer is written
	clk.Advance(time.Duration(maxRequestThrottleMs) * time.Millisecond)
	dq := kmsg.NewPtrDescribeClientQuotasRequest()
	dq.SetVersion(1)
	resp := c.do(dq).(*kmsg.DescribeClientQuotasResponse)
	if int64(resp.ThrottleMillis) != maxRequestThrottleMs || len(resp.Entries) != 1 {
		t.Fatalf("describe: throttle %d, %d entries", resp.ThrottleMillis, len(resp.Entries))
	}
	expectMuted(t, ts, clk, c, maxRequestThrottleMs)
}

// TestProduceBeforeKIP219Delayed: a Produce below v6, whose client does
// not wait out a throttle itself, gets its answer only once the mute has
// passed, as Kafka delays it; the batch is stored at once.
func TestProduceBeforeKIP219Delayed(t *testing.T) {
	ts, clk, c := quotaServer(t, map[string]float64{QuotaProducerByteRate: 1000})
	req := produceReq(5, -1, "q", 0, bigBatch(t, 30000))
	frame, corr := c.frame(req)
	if _, err := c.nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	want := int64(len(frame)-4) - 10000
	testutil.WaitFor(t, "the answer held by the mute", func() bool { return ts.srv.quota.mutedHandlers.Load() == 1 })
	if l, err := ts.st.Log("q", 0); err != nil || l.EndOffset() != 1 {
		t.Fatalf("the batch is not stored before the answer: %v", err)
	}
	clk.Advance(time.Duration(want-1) * time.Millisecond)
	if n := ts.srv.quota.mutedHandlers.Load(); n != 1 {
		t.Fatalf("answered 1 ms early (%d held)", n)
	}
	clk.Advance(time.Millisecond)
	resp := c.recv(req, corr).(*kmsg.ProduceResponse)
	if int64(resp.ThrottleMillis) != want || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("throttle %d ms, want %d; error %d", resp.ThrottleMillis, want, resp.Topics[0].Partitions[0].ErrorCode)
	}
	// Not muted again after the delayed answer.
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	c.do(md)
}
