package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/internal/nemesis"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
)

// TestKgoAcksAllAcrossLeaderFailover: an idempotent kgo producer with
// acks=all writes to a replicated topic while the leader of one of its
// partitions stops mid-stream; every acknowledged record is read back
// exactly once at the offset it was acknowledged at, no record is stored
// twice, and once the stopped node is back, the three replicas of every
// partition hold the same batches up to the high watermark.
func TestKgoAcksAllAcrossLeaderFailover(t *testing.T) {
	c := newServedCluster(t, 3)
	seeds := c.seeds()
	const topic, parts, total = "orders", 2, 2000
	if err := c.controller().node.CreateTopic(ctxTimeout(t), topic, parts, 3, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	type place struct {
		p   int32
		off int64
	}
	var (
		mu    sync.Mutex
		acked = map[string]place{}
		errs  []error
		wg    sync.WaitGroup
	)
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Value: []byte(fmt.Sprintf("v-%05d", i))}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				acked[string(r.Value)] = place{r.Partition, r.Offset}
			})
		}
	}
	produce(0, total/2)
	testutil.WaitFor(t, "a quarter of the records acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= total/4
	})
	// Stop partition 0's leader while records are in flight.
	victim := c.leaderOf(topic, 0)
	c.stopNode(victim.id)
	produce(total/2, total)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(errs), errs[0])
	}
	if len(acked) != total {
		t.Fatalf("%d records acknowledged, want %d", len(acked), total)
	}

	// Read everything back through the cluster, from the leaders.
	got := map[string]place{}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for len(got) < total {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
		fs := cons.PollFetches(ctx)
		err := ctx.Err()
		cancel()
		if err != nil {
			t.Fatalf("read %d of %d records: %v", len(got), total, err)
		}
		for _, fe := range fs.Errors() {
			t.Logf("fetch error (retried): %v", fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if prev, dup := got[v]; dup {
				t.Errorf("%s read twice: at %d/%d and %d/%d", v, prev.p, prev.off, r.Partition, r.Offset)
			}
			got[v] = place{r.Partition, r.Offset}
		})
	}
	for v, want := range acked {
		if got[v] != want {
			t.Errorf("%s acknowledged at %d/%d, read at %v", v, want.p, want.off, got[v])
		}
	}

	// The stopped node comes back and catches up; the replicas agree.
	c.restartNode(victim.id)
	for p := int32(0); p < parts; p++ {
		lead := c.leaderOf(topic, p)
		st, err := lead.node.State(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		var dirs []string
		for _, tn := range c.running() {
			dirs = append(dirs, filepath.Join(tn.dir, fmt.Sprintf("%s-%d", topic, p)))
		}
		testutil.WaitFor(t, fmt.Sprintf("every replica of %s-%d reaches the high watermark %d", topic, p, st.HighWatermark), func() bool {
			for _, tn := range c.running() {
				v, err := tn.st.Log(topic, p)
				if err != nil || v.EndOffset() < st.HighWatermark {
					return false
				}
			}
			return true
		})
		vs, err := nemesis.CompareReplicas(c.fs, dirs, st.HighWatermark)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			t.Errorf("%s-%d: %v", topic, p, v)
		}
	}
}

// TestKgoProduceFollowsLeaderHint: after a partition's leader hands its
// leadership over (the first step of a graceful stop), a kgo producer
// whose metadata still names the old leader moves to the new one on the
// KIP-951 hint in the old leader's NOT_LEADER_OR_FOLLOWER answer. Its
// metadata refresh is held off for ten minutes (MetadataMinAge and
// MaxAge), so only the hint can move it within the produce's 30 s.
func TestKgoProduceFollowsLeaderHint(t *testing.T) {
	c := newServedCluster(t, 3)
	const topic = "hinted"
	if err := c.controller().node.CreateTopic(ctxTimeout(t), topic, 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	// Metadata is loaded once, with the leader every node names.
	old := c.leaderOf(topic, 0)
	cl := c.client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
		kgo.MetadataMinAge(10*time.Minute), kgo.MetadataMaxAge(10*time.Minute))
	if err := cl.ProduceSync(ctxTimeout(t), &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before, err := old.node.State(topic, 0)
	if err != nil || !before.Leader {
		t.Fatalf("node %d before the handover: %+v, %v", old.id, before, err)
	}

	if err := old.node.HandOver(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	// The old leader answers the producer with what it knows: wait until
	// it knows the new leader, in a later epoch.
	var now server.PartitionInfo
	testutil.WaitFor(t, fmt.Sprintf("node %d to know %s-0's new leader", old.id, topic), func() bool {
		ps, err := old.node.Partitions(topic)
		if err != nil || len(ps) == 0 {
			return false
		}
		now = ps[0]
		return now.Leader >= 0 && now.Leader != old.id && now.LeaderEpoch > before.LeaderEpoch
	})

	// Waited for apart: kgo does not fail a batch on its context while
	// the batch waits for a metadata refresh, and this one's is ten
	// minutes away.
	type result struct {
		r   *kgo.Record
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		r, err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("after")}).First()
		done <- result{r, err}
	}()
	var r *kgo.Record
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("produce after the handover (the client's metadata names node %d): %v after %v", old.id, res.err, time.Since(start))
		}
		r = res.r
	case <-time.After(30 * time.Second):
		// The client's Close (a cleanup) fails the record.
		t.Fatalf("produce after the handover still waiting after 30 s (the client's metadata names node %d)", old.id)
	}
	t.Logf("the produce moved from node %d to node %d (epoch %d) in %v", old.id, now.Leader, now.LeaderEpoch, time.Since(start))
	if got := values(t, c.nodes[now.Leader], topic, 0); fmt.Sprint(got) != "[before after]" || r.Offset != 1 {
		t.Errorf("the new leader holds %q; the produce was acknowledged at offset %d, want 1", got, r.Offset)
	}
}

// TestKgoProduceThroughHandOver: records in flight while a partition's
// leader hands its leadership over are all acknowledged within 30 s by a
// kgo producer whose metadata refresh is ten minutes away. Those the old
// leader refuses during the transfer, while it still leads and no other
// leader is known, wait for the new leader to be known there, and are
// answered with its hint: answered at once, they would name none, and
// the producer would wait for its metadata.
func TestKgoProduceThroughHandOver(t *testing.T) {
	c := newServedCluster(t, 3)
	const topic = "handed"
	if err := c.controller().node.CreateTopic(ctxTimeout(t), topic, 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	old := c.leaderOf(topic, 0)
	cl := c.client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
		kgo.MetadataMinAge(10*time.Minute), kgo.MetadataMaxAge(10*time.Minute))

	var (
		mu       sync.Mutex
		acked    int
		errs     []error
		worst    time.Duration
		inflight sync.WaitGroup
	)
	ackedNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return acked
	}
	// Eight records in flight at all times, until stop.
	slots, stop, stopped := make(chan struct{}, 8), make(chan struct{}), make(chan struct{})
	halt := sync.OnceFunc(func() { close(stop); <-stopped })
	t.Cleanup(halt) // before the client closes, on a failure
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case slots <- struct{}{}:
			}
			inflight.Add(1)
			start := time.Now()
			cl.Produce(context.Background(), &kgo.Record{Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
				defer inflight.Done()
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					acked++
				}
				worst = max(worst, time.Since(start))
				mu.Unlock()
				<-slots
			})
		}
	}()
	testutil.WaitFor(t, "100 records acknowledged", func() bool { return ackedNow() >= 100 })
	if err := old.node.HandOver(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	mark := ackedNow()
	// 30 s, not WaitFor's minute: far below the metadata's ten minutes,
	// far above a handover's milliseconds.
	for deadline := time.Now().Add(30 * time.Second); ackedNow() < mark+100; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d records acknowledged in the 30 s after node %d handed %s-0 over, want 100", ackedNow()-mark, old.id, topic)
		}
	}
	halt()
	done := make(chan struct{})
	go func() { inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("records still in flight 30 s after the producer stopped")
	}
	if len(errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(errs), errs[0])
	}
	t.Logf("%d records acknowledged, the slowest in %v", acked, worst)
}
