package benchcluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/internal/nemesis"
)

// failoverTopic is the failover phase's topic, replicated on every node.
const failoverTopic = "bench-failover"

// failoverBuffered bounds the records the failover producer has in
// flight: while a partition has no leader its records wait in kgo's
// buffer, and the producer blocks instead of piling up more.
const failoverBuffered = 1000

// writer is the failover phase's producer: every record a unique value,
// sent to partition seq % partitions (so each partition keeps getting
// records while its leader is dead), each acknowledgment and failure
// recorded for the checker and the time of each acknowledgment kept.
type writer struct {
	cl         *kgo.Client
	partitions int
	rate       int
	stopped    atomic.Bool
	done       chan struct{}
	closeOnce  sync.Once

	mu       sync.Mutex
	acked    []nemesis.Record
	ackTimes []time.Time // when each of acked was acknowledged, in order
	failed   []string
	lastAck  []time.Time // by partition
	sent     int
}

// startWriter starts producing to failoverTopic at cfg.FailoverRate.
func startWriter(brokers []string, cfg Config) (*writer, error) {
	cl, err := newClient(brokers, cfg.MetadataMinAge, kgo.DefaultProduceTopic(failoverTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(failoverBuffered))
	if err != nil {
		return nil, err
	}
	w := &writer{cl: cl, partitions: cfg.Partitions, rate: cfg.FailoverRate, done: make(chan struct{}),
		lastAck: make([]time.Time, cfg.Partitions)}
	go w.run()
	return w, nil
}

// run produces until stopped: rate records a second in bursts every
// 10 ms, or with no rate as fast as the buffer drains. Records are given
// no context that ends: one cancelled while buffered would fail without
// the cluster having failed it, so the stop is a flag, and Produce waits
// for room in the buffer (while a partition has no leader) as a real
// producer does.
func (w *writer) run() {
	defer close(w.done)
	const tick = 10 * time.Millisecond
	start := time.Now()
	for seq := 0; !w.stopped.Load(); seq++ {
		if w.rate > 0 {
			// Ahead of the rate: wait until the schedule catches up.
			if due := start.Add(time.Duration(seq) * time.Second / time.Duration(w.rate)); time.Until(due) > tick {
				time.Sleep(time.Until(due))
			}
		}
		value := fmt.Sprintf("f%d", seq)
		p := int32(seq % w.partitions)
		w.mu.Lock()
		w.sent++
		w.mu.Unlock()
		w.cl.Produce(context.Background(), &kgo.Record{Partition: p, Value: []byte(value)}, func(r *kgo.Record, err error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if err != nil {
				w.failed = append(w.failed, value)
				return
			}
			// The time is taken under the lock, so ackTimes is in order.
			now := time.Now()
			w.acked = append(w.acked, nemesis.Record{TP: nemesis.TP{Topic: failoverTopic, Partition: r.Partition}, Offset: r.Offset, Value: value})
			w.ackTimes = append(w.ackTimes, now)
			w.lastAck[r.Partition] = now
		})
	}
}

// firstAckAfter returns the time of the first acknowledgment on partition
// p received after t, zero if there is none yet.
func (w *writer) firstAckAfter(p int32, t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.lastAck[p].After(t) {
		return time.Time{}
	}
	var first time.Time
	for i := len(w.acked) - 1; i >= 0 && w.ackTimes[i].After(t); i-- {
		if w.acked[i].Partition == p {
			first = w.ackTimes[i]
		}
	}
	return first
}

// close stops producing and closes the client once: kgo fails the
// records it still holds, so every promise has run when it returns.
func (w *writer) close() {
	w.stopped.Store(true)
	w.closeOnce.Do(w.cl.Close)
}

// finish stops producing, waits for every record in flight to be
// acknowledged or failed, and closes the client.
func (w *writer) finish(ctx context.Context) error {
	w.stopped.Store(true)
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	select {
	case <-w.done:
	case <-ctx.Done():
		w.close()
		return fmt.Errorf("the producer still waited for room in its buffer %v after it was stopped", readyTimeout)
	}
	err := w.cl.Flush(ctx)
	w.close()
	if err != nil {
		return fmt.Errorf("records still unacknowledged %v after the producer stopped: %w", readyTimeout, err)
	}
	return nil
}

// failovers runs the failover phase on c: cfg.Kills times, the leader of
// a partition (partition k for kill k, round the partitions) is killed
// with SIGKILL while the writer produces, the kill is timed to the first
// acknowledgment on that partition and to Metadata's new leader, and the
// node is started again and waited for until every replica is back in
// its ISR. Then every acknowledged record is read back and checked.
func failovers(ctx context.Context, say func(string, ...any), c *cluster, cfg Config, res *Result) error {
	admin, err := newClient(c.brokers(), cfg.MetadataMinAge)
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := createTopic(ctx, admin, c.brokers(), failoverTopic, cfg.Partitions, Nodes); err != nil {
		return err
	}
	w, err := startWriter(c.brokers(), cfg)
	if err != nil {
		return err
	}
	defer w.close()
	inSync := nemesis.PartitionState.InSync
	for k := range cfg.Kills {
		if err := waitState(ctx, admin, failoverTopic, cfg.Partitions, "in sync on every replica", inSync); err != nil {
			return fmt.Errorf("before kill %d: %w", k+1, err)
		}
		f, err := failover(ctx, c, admin, w, int32(k%cfg.Partitions))
		if err != nil {
			if f.AckSec > 0 {
				// The outage was measured; what failed came after it.
				res.Failovers = append(res.Failovers, f)
			}
			return fmt.Errorf("kill %d: %w", k+1, err)
		}
		say("kill %d: node %d, leader of partition %d: first ack after %.3f s, new leader %d seen after %.3f s; back in the ISR %.3f s after its restart",
			k+1, f.Killed, f.Partition, f.AckSec, f.NewLeader, f.LeaderSec, f.RejoinSec)
		res.Failovers = append(res.Failovers, f)
	}
	if err := waitState(ctx, admin, failoverTopic, cfg.Partitions, "in sync on every replica", inSync); err != nil {
		return fmt.Errorf("after the last kill: %w", err)
	}
	if err := w.finish(ctx); err != nil {
		return err
	}
	say("reading back every record")
	res.FailoverRecords = w.sent + cfg.Partitions // and the final marks
	k, err := check(ctx, c.brokers(), cfg, w)
	if err != nil {
		return err
	}
	res.Check = &k
	return nil
}

// failover kills the leader of partition p and times the outage, then
// restarts the node. If the restart fails, or the node does not get back
// in sync, the outage is returned with the error, RejoinSec -1 (and
// ListenSec -1 if it never listened).
func failover(ctx context.Context, c *cluster, admin *kgo.Client, w *writer, p int32) (Failover, error) {
	st, err := nemesis.TopicState(ctx, admin, failoverTopic)
	if err != nil {
		return Failover{}, err
	}
	f := Failover{Partition: p, Killed: st[p].Leader, NewLeader: -1}
	n := c.node(f.Killed)
	if n == nil || n.child == nil {
		return Failover{}, fmt.Errorf("partition %d: leader %d is not a running node of the cluster", p, f.Killed)
	}
	// Metadata is asked of the survivors in turn: a client's request
	// that went to the dead node would wait out kgo's retry backoff.
	var survivors []*kgo.Broker
	for _, o := range c.nodes {
		if o != n {
			survivors = append(survivors, admin.Broker(int(o.ID)))
		}
	}
	t0 := time.Now()
	n.child.Kill()
	n.child = nil
	gone := time.Now()
	deadline := t0.Add(readyTimeout)
	var ack, leader time.Time
	for turn := 0; ack.IsZero() || leader.IsZero(); turn++ {
		if ack.IsZero() {
			ack = w.firstAckAfter(p, gone)
		}
		if leader.IsZero() {
			// A failed Metadata request is asked again, of the other
			// survivor, on the next turn.
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := nemesis.TopicState(rctx, survivors[turn%len(survivors)], failoverTopic)
			cancel()
			if err == nil {
				if l := st[p].Leader; l >= 0 && l != f.Killed {
					leader, f.NewLeader = time.Now(), l
				}
			}
		}
		if time.Now().After(deadline) {
			return Failover{}, fmt.Errorf("partition %d: node %d killed %v ago: first ack after the kill %s, new leader %s", p, f.Killed, readyTimeout,
				seen(ack, t0), seen(leader, t0))
		}
		select {
		case <-ctx.Done():
			return Failover{}, ctx.Err()
		case <-time.After(pollEvery):
		}
	}
	f.AckSec, f.LeaderSec = ack.Sub(t0).Seconds(), leader.Sub(t0).Seconds()
	f.ListenSec, f.RejoinSec = -1, -1
	start := time.Now()
	if err := c.start(ctx, n); err != nil {
		return f, fmt.Errorf("restart: %w", err)
	}
	f.ListenSec = time.Since(start).Seconds()
	if err := waitState(ctx, admin, failoverTopic, len(w.lastAck), "back in sync after the restart", nemesis.PartitionState.InSync); err != nil {
		return f, fmt.Errorf("node %d restarted: %w", n.ID, err)
	}
	f.RejoinSec = time.Since(start).Seconds()
	return f, nil
}

// seen says when t was seen after t0, or that it was not.
func seen(t, t0 time.Time) string {
	if t.IsZero() {
		return "never seen"
	}
	return fmt.Sprintf("seen after %.3f s", t.Sub(t0).Seconds())
}

// check writes a final mark to each partition (acks=all), reads every
// partition from its start through its mark from the leaders, and runs
// the checker on what was acknowledged, what failed and what was read.
func check(ctx context.Context, brokers []string, cfg Config, w *writer) (Check, error) {
	cl, err := newClient(brokers, cfg.MetadataMinAge, kgo.DefaultProduceTopic(failoverTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return Check{}, err
	}
	defer cl.Close()
	last := map[int32]int64{}
	w.mu.Lock()
	acked, failed := slices.Clone(w.acked), slices.Clone(w.failed)
	w.mu.Unlock()
	for p := range int32(cfg.Partitions) {
		value := fmt.Sprintf("end-%d", p)
		r, err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(value)}).First()
		if err != nil {
			return Check{}, fmt.Errorf("final mark on partition %d: %w", p, err)
		}
		last[p] = r.Offset
		acked = append(acked, nemesis.Record{TP: nemesis.TP{Topic: failoverTopic, Partition: p}, Offset: r.Offset, Value: value})
	}
	read, err := readUntil(ctx, brokers, cfg.MetadataMinAge, failoverTopic, last)
	if err != nil {
		return Check{}, err
	}
	rep := nemesis.Check(nemesis.History{Acked: acked, Failed: failed, Read: read})
	out := Check{Acked: rep.Acked, Failed: rep.Failed, Uncertain: rep.Uncertain, Read: rep.Read}
	for _, v := range rep.Violations {
		out.Violations = append(out.Violations, v.String())
	}
	return out, nil
}

// summarizeFailovers fills res's medians and maxima of the failovers.
func summarizeFailovers(res *Result) {
	var ack, leader, listen, rejoin []float64
	for _, f := range res.Failovers {
		ack, leader = append(ack, f.AckSec), append(leader, f.LeaderSec)
		// A restart that failed (-1) has no time to count.
		if f.ListenSec >= 0 {
			listen = append(listen, f.ListenSec)
		}
		if f.RejoinSec >= 0 {
			rejoin = append(rejoin, f.RejoinSec)
		}
	}
	if len(ack) == 0 {
		return
	}
	res.AckMedianSec, res.AckMaxSec = bench.Median(ack), slices.Max(ack)
	res.LeaderMedianSec, res.LeaderMaxSec = bench.Median(leader), slices.Max(leader)
	res.ListenMedianSec, res.RejoinMedian = -1, -1
	if len(listen) > 0 {
		res.ListenMedianSec = bench.Median(listen)
	}
	if len(rejoin) > 0 {
		res.RejoinMedian = bench.Median(rejoin)
	}
}
