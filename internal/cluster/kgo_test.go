package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/internal/nemesis"
	"github.com/seglog/seglog/internal/testutil"
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
