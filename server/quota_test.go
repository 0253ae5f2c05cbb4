package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/crc32c"
	"github.com/seglog/seglog/vfs"
)

// TestQuotaRateKafkaFormula checks the measured rate and throttle against
// Kafka's Rate and QuotaUtils.throttleTime worked by hand: over 11 windows
// of 1 s, a rate divides by at least 10 windows, and the throttle is
// (rate-bound)/bound × window.
func TestQuotaRateKafkaFormula(t *testing.T) {
	var r quotaRate
	const bound = 1000.0
	r.record(20000, 0)
	// 20000 B over the minimum 10 s: 2000 B/s, twice the bound.
	if got := r.measure(0); got != 2000 {
		t.Fatalf("rate %v, want 2000", got)
	}
	if got := throttleMs(r.measure(0), bound, r.windowMs(0)); got != 10000 {
		t.Fatalf("throttle %d ms, want 10000", got)
	}
	// 2.5 s later, a second window: 25000 B over 10.5 s, and the throttle
	// (25000/10.5-1000)/1000 × 10500 = 14500 ms.
	r.record(5000, 2500)
	if got := r.windowMs(2500); got != 10500 {
		t.Fatalf("window %d ms, want 10500", got)
	}
	if got := throttleMs(r.measure(2500), bound, r.windowMs(2500)); got != 14500 {
		t.Fatalf("throttle %d ms, want 14500", got)
	}
	// The second window started on the boundary at 2 s (Kafka aligns
	// windows). At 11 s the first window (20000 B) is a whole measurement
	// old and no longer counts: 5000 B from 2 s, over the minimum 10 s, is
	// within the bound.
	r.record(0, 11000)
	if got := r.windowMs(11000); got != 10000 {
		t.Fatalf("window %d ms, want 10000", got)
	}
	if got := r.measure(11000); got != 500 {
		t.Fatalf("rate %v, want 500", got)
	}
	if got := throttleMs(r.measure(11000), bound, r.windowMs(11000)); got != 0 {
		t.Fatalf("throttle %d ms within quota", got)
	}
	// Java's Math.round: half up.
	if got := throttleMs(1500, 1000, 1); got != 1 {
		t.Fatalf("throttle of 0.5 ms rounds to %d, want 1", got)
	}
}

// TestQuotaRequestThrottleBounded: a request_percentage throttle is at
// most one window, a byte-rate one is not (Kafka's two managers).
func TestQuotaRequestThrottleBounded(t *testing.T) {
	clk := newFakeClock()
	cfg := newQuotaConfig([]ClientQuota{{Entity: QuotaEntity{ClientID: "c"},
		Values: map[string]float64{QuotaRequestPercentage: 1, QuotaProducerByteRate: 100}}})
	m := newQuotaManager(clk, func() *quotaConfig { return cfg })
	now := m.nowMs()
	// 5 s of one thread is 500 percent-seconds: 50%/s over 10 s, 49
	// over the bound of 1: 490 s unbounded.
	if got := m.record(quotaRequest, "", "c", requestPercentage(5*time.Second), now); got != maxRequestThrottleMs {
		t.Fatalf("request throttle %d ms, want the bound %d", got, maxRequestThrottleMs)
	}
	if got := m.record(quotaProduce, "", "c", 3000, now); got != 20000 {
		t.Fatalf("produce throttle %d ms, want (300-100)/100 × 10000 = 20000", got)
	}
	// Another client id has no quota and no rate.
	if got := m.record(quotaProduce, "", "d", 1e9, now); got != 0 {
		t.Fatalf("unquoted client throttled %d ms", got)
	}
}

// TestQuotaPrecedence removes Kafka's eight levels one by one, most
// specific first, and checks which applies and which rate it shares.
func TestQuotaPrecedence(t *testing.T) {
	levels := []struct {
		e   QuotaEntity
		key sensorKey
	}{
		{QuotaEntity{User: "u", ClientID: "c"}, sensorKey{quotaProduce, "u", "c"}},
		{QuotaEntity{User: "u", DefaultClientID: true}, sensorKey{quotaProduce, "u", "c"}},
		{QuotaEntity{User: "u"}, sensorKey{quotaProduce, "u", ""}},
		{QuotaEntity{DefaultUser: true, ClientID: "c"}, sensorKey{quotaProduce, "u", "c"}},
		{QuotaEntity{DefaultUser: true, DefaultClientID: true}, sensorKey{quotaProduce, "u", "c"}},
		{QuotaEntity{DefaultUser: true}, sensorKey{quotaProduce, "u", ""}},
		{QuotaEntity{ClientID: "c"}, sensorKey{quotaProduce, "", "c"}},
		{QuotaEntity{DefaultClientID: true}, sensorKey{quotaProduce, "", "c"}},
	}
	var list []ClientQuota
	for i, l := range levels {
		list = append(list, ClientQuota{Entity: l.e, Values: map[string]float64{QuotaProducerByteRate: float64(i + 1)}})
	}
	// A consumer quota on the most specific entity does not hide the
	// produce quotas below it: precedence is per key.
	list = append(list, ClientQuota{Entity: QuotaEntity{User: "u", ClientID: "x"}, Values: map[string]float64{QuotaConsumerByteRate: 9}})
	cfg := newQuotaConfig(list)
	for i, l := range levels {
		key, bound, ok := cfg.resolve(quotaProduce, "u", "c")
		if !ok || bound != float64(i+1) || key != l.key {
			t.Fatalf("with levels %d.. configured: %v %v %v, want level %d %v (%v)", i+1, key, bound, ok, i+1, l.key, l.e)
		}
		cfg = cfg.apply([]ClientQuotaChange{{Entity: l.e, Remove: []string{QuotaProducerByteRate}}})
	}
	if _, _, ok := cfg.resolve(quotaProduce, "u", "c"); ok {
		t.Fatal("a quota with every level removed")
	}
	// Without SASL there is no user: only client-id quotas apply.
	cfg = newQuotaConfig(list)
	if key, bound, _ := cfg.resolve(quotaProduce, "", "c"); bound != 7 || key != (sensorKey{quotaProduce, "", "c"}) {
		t.Fatalf("no user: %v %v, want the client id's quota 7", key, bound)
	}
	// An empty client id matches only the user's own levels.
	if key, bound, _ := cfg.resolve(quotaProduce, "u", ""); bound != 3 || key != (sensorKey{quotaProduce, "u", ""}) {
		t.Fatalf("empty client id: %v %v, want the user's quota 3", key, bound)
	}
	x := cfg
	if _, bound, _ := x.resolve(quotaFetch, "u", "x"); bound != 9 {
		t.Fatalf("consumer quota %v, want 9", bound)
	}
}

// TestQuotaChangeChecks: what CheckQuotaChange refuses.
func TestQuotaChangeChecks(t *testing.T) {
	ok := ClientQuotaChange{Entity: QuotaEntity{User: "u"}, Set: map[string]float64{QuotaProducerByteRate: 1024, QuotaRequestPercentage: 12.5}}
	if err := CheckQuotaChange(ok); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]ClientQuotaChange{
		"empty entity":      {Set: map[string]float64{QuotaProducerByteRate: 1}},
		"named and default": {Entity: QuotaEntity{User: "u", DefaultUser: true}, Set: map[string]float64{QuotaProducerByteRate: 1}},
		"unknown key":       {Entity: QuotaEntity{User: "u"}, Set: map[string]float64{"controller_mutation_rate": 1}},
		"zero":              {Entity: QuotaEntity{User: "u"}, Set: map[string]float64{QuotaProducerByteRate: 0}},
		"fractional bytes":  {Entity: QuotaEntity{User: "u"}, Set: map[string]float64{QuotaConsumerByteRate: 1.5}},
		"set and removed":   {Entity: QuotaEntity{User: "u"}, Set: map[string]float64{QuotaConsumerByteRate: 1}, Remove: []string{QuotaConsumerByteRate}},
	} {
		if err := CheckQuotaChange(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestQuotasFile: changes survive a reload, and a damaged file is a
// *QuotasError naming the file and byte, never a partial config.
func TestQuotasFile(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/data"
	if err := fs.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	q, err := LoadQuotas(fs, dir)
	if err != nil || len(q.List()) != 0 {
		t.Fatalf("no file: %v %v", q.List(), err)
	}
	changes := []ClientQuotaChange{
		{Entity: QuotaEntity{User: "alice", ClientID: "app"}, Set: map[string]float64{QuotaProducerByteRate: 1 << 20, QuotaRequestPercentage: 50}},
		{Entity: QuotaEntity{DefaultUser: true}, Set: map[string]float64{QuotaConsumerByteRate: 2 << 20}},
		{Entity: QuotaEntity{DefaultClientID: true}, Set: map[string]float64{QuotaProducerByteRate: 4096}},
	}
	if err := q.Alter(changes); err != nil {
		t.Fatal(err)
	}
	if err := q.Alter([]ClientQuotaChange{{Entity: QuotaEntity{DefaultClientID: true}, Remove: []string{QuotaProducerByteRate}}}); err != nil {
		t.Fatal(err)
	}
	q2, err := LoadQuotas(fs, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := q2.List()
	if len(got) != 2 || got[0].Entity != (QuotaEntity{DefaultUser: true}) || got[0].Values[QuotaConsumerByteRate] != 2<<20 ||
		got[1].Entity != (QuotaEntity{User: "alice", ClientID: "app"}) || got[1].Values[QuotaRequestPercentage] != 50 || len(got[1].Values) != 2 {
		t.Fatalf("reloaded %+v", got)
	}
	// A refused change writes nothing.
	if err := q2.Alter([]ClientQuotaChange{{Entity: QuotaEntity{User: "bob"}, Set: map[string]float64{"bogus": 1}}}); err == nil {
		t.Fatal("bogus key accepted")
	}
	path := filepath.Join(dir, QuotasFile)
	good, err := vfs.ReadFileLimit(fs, path, maxQuotaFile)
	if err != nil {
		t.Fatal(err)
	}
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x40
		if err := vfs.WriteFileAtomic(fs, path, bad); err != nil {
			t.Fatal(err)
		}
		_, err := LoadQuotas(fs, dir)
		var qe *QuotasError
		if !errors.As(err, &qe) || qe.File != path || qe.Offset < 0 || qe.Offset > int64(len(good)) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	for _, n := range []int{0, 3, quotaHeaderSize, len(good) - 1} {
		if err := vfs.WriteFileAtomic(fs, path, good[:n]); err != nil {
			t.Fatal(err)
		}
		var qe *QuotasError
		if _, err := LoadQuotas(fs, dir); !errors.As(err, &qe) {
			t.Fatalf("cut to %d bytes: %v", n, err)
		}
	}
	// Records that parse but claim more entries than fit, with a valid
	// checksum, are refused by the count, not by allocating it.
	lie := encodeQuotas(nil)
	lie[6], lie[7], lie[8], lie[9] = 0xff, 0xff, 0xff, 0xff
	lie = append(lie[:len(lie)-4], 0, 0, 0, 0)
	if err := vfs.WriteFileAtomic(fs, path, fixCRC(lie)); err != nil {
		t.Fatal(err)
	}
	var qe *QuotasError
	if _, err := LoadQuotas(fs, dir); !errors.As(err, &qe) || qe.Offset != 6 {
		t.Fatalf("huge count: %v", err)
	}
	// The number of entities is bounded, and a change past it writes
	// nothing.
	if err := fs.Remove(path); err != nil {
		t.Fatal(err)
	}
	q3, err := LoadQuotas(fs, dir)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]ClientQuotaChange, maxQuotaEntities+1)
	for i := range many {
		many[i] = ClientQuotaChange{Entity: QuotaEntity{ClientID: fmt.Sprint("c", i)}, Set: map[string]float64{QuotaProducerByteRate: 1}}
	}
	if err := q3.Alter(many); err == nil || len(q3.List()) != 0 {
		t.Fatalf("%d entities: %v", len(q3.List()), err)
	}
	if err := q3.Alter(many[:maxQuotaEntities]); err != nil {
		t.Fatal(err)
	}
}

// fixCRC rewrites a quotas file's trailing checksum.
func fixCRC(b []byte) []byte {
	end := len(b) - 4
	return binary.BigEndian.AppendUint32(b[:end], crc32c.Checksum(b[:end]))
}

// stubQuotaCluster is a QuotaCluster whose list a test sets.
type stubQuotaCluster struct {
	version uint64
	list    []ClientQuota
	reads   int
}

func (s *stubQuotaCluster) QuotasVersion() uint64 { return s.version }
func (s *stubQuotaCluster) ClientQuotas() []ClientQuota {
	s.reads++
	return s.list
}
func (s *stubQuotaCluster) AlterClientQuotas(context.Context, []ClientQuotaChange) error { return nil }

// TestClusterQuotasCache: a cluster's quotas are read again only when its
// version moves, and then take effect.
func TestClusterQuotasCache(t *testing.T) {
	qc := &stubQuotaCluster{version: 1}
	cache := &clusterQuotas{qc: qc}
	m := newQuotaManager(newFakeClock(), cache.config)
	if got := m.record(quotaProduce, "", "c", 1e9, m.nowMs()); got != 0 {
		t.Fatalf("throttled %d ms with no quotas", got)
	}
	qc.list = []ClientQuota{{Entity: QuotaEntity{ClientID: "c"}, Values: map[string]float64{QuotaProducerByteRate: 1}}}
	if got := m.record(quotaProduce, "", "c", 1e9, m.nowMs()); got != 0 || qc.reads != 1 {
		t.Fatalf("same version: throttle %d, %d reads", got, qc.reads)
	}
	qc.version++
	if got := m.record(quotaProduce, "", "c", 1e9, m.nowMs()); got == 0 || qc.reads != 2 {
		t.Fatalf("new version: throttle %d, %d reads", got, qc.reads)
	}
}
