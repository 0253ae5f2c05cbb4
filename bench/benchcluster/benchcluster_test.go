package benchcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/internal/nemesis"
)

// validConfig is a Config Check accepts.
func validConfig() Config {
	return Config{Records: 100, RecordSize: 10, Partitions: 2, Rounds: 1, Kills: 1, FailoverRate: 10, MetadataMinAge: time.Millisecond}
}

// Check refuses every Config that cannot run, naming the field, and
// accepts the edges that can (no kills, no rate limit, as many records as
// partitions).
func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Partitions = 0 }, "partitions 0"},
		{func(c *Config) { c.Records = 1 }, "--records 1: must be at least --partitions 2"},
		{func(c *Config) { c.RecordSize = 0 }, "record size 0"},
		{func(c *Config) { c.Rounds = 0 }, "rounds 0"},
		{func(c *Config) { c.Kills = -1 }, "kills -1"},
		{func(c *Config) { c.FailoverRate = -1 }, "failover rate -1"},
		{func(c *Config) { c.MetadataMinAge = 0 }, "metadata min age 0s"},
	} {
		c := validConfig()
		tc.change(&c)
		if err := c.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", c, err, tc.want)
		}
	}
	c := validConfig()
	c.Kills, c.FailoverRate, c.Records = 0, 0, c.Partitions
	if err := c.Check(); err != nil {
		t.Errorf("%+v: %v", c, err)
	}
}

// The first acknowledgment after a time is found per partition, whatever
// the other partitions' acknowledgments around it.
func TestFirstAckAfter(t *testing.T) {
	w := &writer{lastAck: make([]time.Time, 2)}
	t0 := time.Unix(1000, 0)
	ack := func(p int32, ms int) {
		at := t0.Add(time.Duration(ms) * time.Millisecond)
		w.acked = append(w.acked, nemesis.Record{TP: nemesis.TP{Topic: failoverTopic, Partition: p}, Value: fmt.Sprint(ms)})
		w.ackTimes = append(w.ackTimes, at)
		w.lastAck[p] = at
	}
	ack(0, 1)
	ack(1, 2)
	ack(0, 3)
	kill := t0.Add(5 * time.Millisecond)
	if got := w.firstAckAfter(0, kill); !got.IsZero() {
		t.Fatalf("an ack before the kill was taken for one after it: %v", got)
	}
	ack(1, 10)
	ack(0, 20)
	ack(1, 25)
	ack(0, 30)
	if got, want := w.firstAckAfter(0, kill), t0.Add(20*time.Millisecond); !got.Equal(want) {
		t.Errorf("partition 0: first ack after the kill at %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	if got, want := w.firstAckAfter(1, kill), t0.Add(10*time.Millisecond); !got.Equal(want) {
		t.Errorf("partition 1: first ack after the kill at %v, want %v", got.Sub(t0), want.Sub(t0))
	}
}

// A node's log keeps its end within its bound, and a panic is quoted from
// its message, not from the end of its stack.
func TestNodeLogTail(t *testing.T) {
	var l nodeLog
	for i := range 10_000 {
		fmt.Fprintf(&l, "line %d\n", i)
	}
	if l.buf.Len() > logKept {
		t.Errorf("%d bytes kept, bound %d", l.buf.Len(), logKept)
	}
	if got := l.tail(2); got != "line 9998\nline 9999" {
		t.Errorf("tail(2) = %q", got)
	}
	fmt.Fprintf(&l, "panic: tocommit(6) is out of range [lastIndex(1)]\n\ngoroutine 39 [running]:\n")
	for i := range 50 {
		fmt.Fprintf(&l, "frame %d\n", i)
	}
	got := l.tail(3)
	if got != "panic: tocommit(6) is out of range [lastIndex(1)]\n\ngoroutine 39 [running]:" {
		t.Errorf("tail of a panic = %q", got)
	}
}

// sampleResult is a run's Result as Run fills it.
func sampleResult(violations ...string) *Result {
	c := validConfig()
	c.Rounds, c.Kills = 2, 2
	r := &Result{Config: c, LoadBefore: 2.5, LoadAfter: 3.25,
		Single:       Side{Name: "1 node, RF 1", ProduceRecsSec: 60000, ProduceMBs: 61.4, ConsumeMBs: 220, ProduceCPUSecPerGB: 5.5, ConsumeCPUSecPerGB: 0.5},
		Synced:       Side{Name: "1 node, RF 1, synced", ProduceRecsSec: 40000, ProduceMBs: 41, ConsumeMBs: 200, ProduceCPUSecPerGB: 7.5, ConsumeCPUSecPerGB: 0.25},
		Cluster:      Side{Name: "3 nodes, RF 3", ProduceRecsSec: 24000, ProduceMBs: 24.6, ConsumeMBs: 160, ProduceCPUSecPerGB: 60, ConsumeCPUSecPerGB: 2},
		ProduceRatio: 0.4, ConsumeRatio: 0.73,
		ProduceRatios: []float64{0.38, 0.42}, ConsumeRatios: []float64{0.7, 0.76},
		SyncedProduceRatio: 0.61, SyncedProduceRatios: []float64{0.55, 0.67},
		Failovers: []Failover{
			{Partition: 0, Killed: 1, NewLeader: 2, AckSec: 1.6, LeaderSec: 1.5, ListenSec: 1.28, RejoinSec: 1.68},
			{Partition: 1, Killed: 3, NewLeader: 1, AckSec: 1.25, LeaderSec: 1.14, ListenSec: 0.31, RejoinSec: 1.14},
		},
		FailoverRecords: 8121,
		Check:           &Check{Acked: 8120, Failed: 1, Uncertain: 1, Read: 8121, Violations: violations},
	}
	r.Single.Rounds = []Round{{ProduceRecsSec: 58000, ConsumeMBs: 210}, {ProduceRecsSec: 62000, ConsumeMBs: 230}}
	r.Synced.Rounds = []Round{{ProduceRecsSec: 39000, ConsumeMBs: 190}, {ProduceRecsSec: 41000, ConsumeMBs: 212}}
	r.Cluster.Rounds = []Round{{ProduceRecsSec: 22040, ConsumeMBs: 147}, {ProduceRecsSec: 26040, ConsumeMBs: 174.8}}
	summarizeFailovers(r)
	return r
}

// Write prints both systems, the ratios with their range, every kill, the
// failover medians and maxima and the checker's verdict.
func TestWrite(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, sampleResult()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"100 records of 10 bytes to 2 partitions per round",
		"2 rounds, each started by the next system; medians; load average 2.5 before, 3.2 after;",
		"synced: the same node, topics of flush.messages=1",
		"        1 node, RF 1          60000          61.4           220                      5.50                      0.50",
		"1 node, RF 1, synced          40000          41.0           200                      7.50                      0.25",
		"       3 nodes, RF 3          24000          24.6           160                     60.00                      2.00",
		"3 nodes, RF 3 / 1 node, RF 1: produce 0.40x [0.38-0.42], consume 0.73x [0.70-0.76]",
		"3 nodes, RF 3 / 1 node, RF 1, synced: produce 0.61x [0.55-0.67]\n",
		"\n  round 1: produce 22040 / 58000 / 39000 rec/s, consume 147 / 210 / 190 MB/s\n  round 2: produce 26040 / 62000 / 41000 rec/s, consume 175 / 230 / 212 MB/s\n" +
			"  (each round: 3 nodes, RF 3 / 1 node, RF 1 / 1 node, RF 1, synced)\n",
		"(10 records/s offered, client metadata refresh after 1ms at the soonest)",
		"     1          0            1           2        1.600              1.500                 1.280          1.680",
		"kill -> first ack on that partition: median 1.425 s, max 1.600 s over 2 kills",
		"kill -> Metadata names a new leader: median 1.320 s, max 1.500 s",
		"listening after median 0.795 s, every replica in sync after median 1.410 s",
		"checker: 8121 records produced (a final mark per partition included), 8120 acknowledged, 1 failed (1 of them stored), 8121 read back: every acknowledged record read back once, at its offset",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A run without kills prints no failover section; a broken rule is
// printed as such, each violation on its line, and bounded.
func TestWriteNoKillsAndViolations(t *testing.T) {
	r := sampleResult()
	r.Config.Kills, r.Failovers, r.Check = 0, nil, nil
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "failover") || strings.Contains(b.String(), "checker") {
		t.Errorf("a run without kills printed a failover section:\n%s", b.String())
	}
	var vs []string
	for i := range maxListed + 5 {
		vs = append(vs, fmt.Sprintf("acked record lost: \"f%d\" at bench-failover-0 offset %d", i, i))
	}
	b.Reset()
	if err := Write(&b, sampleResult(vs...)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{fmt.Sprintf("%d VIOLATIONS", maxListed+5), "\n  " + vs[0] + "\n", "  ... and 5 more"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, vs[maxListed]) {
		t.Errorf("more than %d violations listed", maxListed)
	}
	if sampleResult(vs...).Check.OK() || !sampleResult().Check.OK() {
		t.Error("Check.OK does not follow the violations")
	}
}

// A failover phase that failed after an outage was measured prints that
// outage, "never" for what did not happen, medians without it, and that
// the checker did not run.
func TestWriteFailedFailover(t *testing.T) {
	r := sampleResult()
	r.Failovers = []Failover{{Partition: 0, Killed: 1, NewLeader: 2, AckSec: 1.04, LeaderSec: 1, ListenSec: 0.4, RejoinSec: -1}}
	r.Check = nil
	summarizeFailovers(r)
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"     1          0            1           2        1.040              1.000                 0.400          never",
		"kill -> first ack on that partition: median 1.040 s, max 1.040 s over 1 kills",
		"listening after median 0.400 s, every replica in sync: never",
		"checker: not run, the failover phase failed after 1 of 2 kills",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRoundGivesUp: against a broker that never answers, a round's
// producer fails after deliveryTimeout with kgo's record timeout, instead of hanging the
// run (as a cluster whose disks were full did).
func TestRoundGivesUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	old := deliveryTimeout
	deliveryTimeout = time.Second // kgo's least
	defer func() { deliveryTimeout = old }()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := roundClient([]string{ln.Addr().String()}, 10*time.Millisecond, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = produceAll(ctx, cl, "t", 10, []byte("v"))
	if !errors.Is(err, kgo.ErrRecordTimeout) {
		t.Fatalf("round against a silent broker: %v, want kgo.ErrRecordTimeout", err)
	}
}
