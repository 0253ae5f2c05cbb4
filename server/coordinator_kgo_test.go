package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupConsumer is one kgo group member that commits what it read after
// every poll, before it lets a rebalance happen (BlockRebalanceOnPoll):
// so every record is read exactly once by the group, however the
// partitions move.
type groupConsumer struct {
	name string
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}

	mu       sync.Mutex
	assigned map[int32]bool
	// tolerant logs fetch and commit errors instead of failing: the
	// server is restarted under the member.
	tolerant bool
}

// consumed collects every record the members of a group read, by value.
type consumed struct {
	mu   sync.Mutex
	seen map[string]string // value → member that read it
	dups []string
	cond *sync.Cond
}

func newConsumed() *consumed {
	c := &consumed{seen: make(map[string]string)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *consumed) add(member string, r *kgo.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := string(r.Value)
	if prev, ok := c.seen[v]; ok {
		c.dups = append(c.dups, fmt.Sprintf("%s (%d/%d) read by %s after %s", v, r.Partition, r.Offset, member, prev))
	}
	c.seen[v] = member
	c.cond.Broadcast()
}

func (c *consumed) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *consumed) by(member string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.seen {
		if m == member {
			n++
		}
	}
	return n
}

func startGroupConsumer(t *testing.T, ts *testServer, name, group, topic string, into *consumed) *groupConsumer {
	return startGroupMember(t, ts.addr, name, group, topic, into, false)
}

func startGroupMember(t *testing.T, addr, name, group, topic string, into *consumed, tolerant bool) *groupConsumer {
	t.Helper()
	gc := &groupConsumer{name: name, done: make(chan struct{}), assigned: make(map[int32]bool), tolerant: tolerant}
	fail := t.Errorf
	if tolerant {
		fail = t.Logf
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxWait(200e6),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			gc.mu.Lock()
			defer gc.mu.Unlock()
			for _, p := range m[topic] {
				gc.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			gc.mu.Lock()
			defer gc.mu.Unlock()
			for _, p := range m[topic] {
				delete(gc.assigned, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			fail("%s lost partitions %v: its session or generation ended under it", name, m)
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	gc.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	gc.stop = cancel
	go func() {
		defer close(gc.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(tp string, p int32, err error) {
				if ctx.Err() == nil {
					fail("%s: fetch %s-%d: %v", name, tp, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { into.add(name, r) })
			if err := cl.CommitUncommittedOffsets(context.Background()); err != nil {
				fail("%s: commit: %v", name, err)
			}
			cl.AllowRebalance()
		}
	}()
	return gc
}

// close stops polling after the last poll's commit and leaves the group.
func (gc *groupConsumer) close() {
	gc.stop()
	<-gc.done
	gc.cl.Close()
}

func (gc *groupConsumer) partitions() int {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return len(gc.assigned)
}

// TestKgoGroupRebalanceAndRestart: two kgo members of a group share a
// topic's partitions; one leaves and the other takes its partitions over
// from the committed offsets; after a server restart a new member resumes
// from the commits. Every record is read exactly once by the group.
func TestKgoGroupRebalanceAndRestart(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, Options{})
	if err := ts.st.CreateTopic("events", 4, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	prod := ts.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(cl *kgo.Client, phase string, n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % 4), Value: []byte(fmt.Sprintf("%s-%d", phase, i))})
		}
		if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", phase, err)
		}
	}
	got := newConsumed()
	waitCount := func(n int) {
		t.Helper()
		testutil.WaitFor(t, fmt.Sprintf("%d records consumed", n), func() bool { return got.count() >= n })
	}

	produce(prod, "one", 200)
	a := startGroupConsumer(t, ts, "a", "g", "events", got)
	b := startGroupConsumer(t, ts, "b", "g", "events", got)
	testutil.WaitFor(t, "a and b share the 4 partitions", func() bool { return a.partitions() > 0 && b.partitions() > 0 && a.partitions()+b.partitions() == 4 })
	waitCount(200)

	// a leaves; b must take a's partitions over where a committed.
	a.close()
	produce(prod, "two", 200)
	testutil.WaitFor(t, "b holds all 4 partitions", func() bool { return b.partitions() == 4 })
	waitCount(400)
	b.close()
	if got.by("b") == 0 || got.by("a") == 0 {
		t.Errorf("a read %d records and b %d: both should have had partitions", got.by("a"), got.by("b"))
	}

	ts.stop()
	ts = startServer(t, dir, Options{})
	produce(ts.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "three", 100)
	c := startGroupConsumer(t, ts, "c", "g", "events", got)
	waitCount(500)
	c.close()
	if got.by("c") != 100 {
		t.Errorf("after the restart the group read %d records, want the 100 new ones", got.by("c"))
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.dups) > 0 {
		t.Errorf("%d records read twice by the group, first: %s", len(got.dups), got.dups[0])
	}
	for p := int32(0); p < 4; p++ {
		cm, ok := ts.st.CommittedOffset("g", "events", p)
		if !ok || cm.Offset != 125 {
			t.Errorf("partition %d: committed %+v (%v), want 125", p, cm, ok)
		}
	}
}

// startServerOn serves the store in dir on addr: a restarted server where
// running clients find the old one.
func startServerOn(t *testing.T, dir, addr string) *testServer {
	t.Helper()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(st, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, dir: dir, st: st, srv: srv, addr: addr, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ln) }()
	t.Cleanup(ts.stop)
	return ts
}

// TestKgoGroupMemberAcrossRestart: a member keeps running while the server
// restarts under it and reads every record once. kgo ends its group
// session when a heartbeat cannot reach the coordinator (it reports the
// partitions lost) and rejoins with its member id, which the restarted
// server still knows from the offsets topic.
func TestKgoGroupMemberAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, Options{})
	if err := ts.st.CreateTopic("events", 2, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	produce := func(addr, phase string) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		var recs []*kgo.Record
		for i := range 100 {
			recs = append(recs, &kgo.Record{Topic: "events", Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%s-%d", phase, i))})
		}
		if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", phase, err)
		}
	}
	committed := func(st *store.Store, want int64) bool {
		for p := int32(0); p < 2; p++ {
			if c, ok := st.CommittedOffset("g", "events", p); !ok || c.Offset != want {
				return false
			}
		}
		return true
	}
	got := newConsumed()
	produce(ts.addr, "before")
	m := startGroupMember(t, ts.addr, "m", "g", "events", got, true)
	testutil.WaitFor(t, "100 records consumed and offset 50 committed on both partitions", func() bool { return got.count() == 100 && committed(ts.st, 50) })

	addr := ts.addr
	ts.stop()
	ts = startServerOn(t, dir, addr)
	produce(addr, "after")
	testutil.WaitFor(t, "200 records consumed and offset 100 committed on both partitions", func() bool { return got.count() == 200 && committed(ts.st, 100) })
	m.close()
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.dups) > 0 {
		t.Errorf("%d records read twice, first: %s", len(got.dups), got.dups[0])
	}
}
