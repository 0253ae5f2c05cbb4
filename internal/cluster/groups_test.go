package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// served is a test cluster whose nodes also run the Kafka server, each
// advertising its own loopback listener.
type served struct {
	*tcluster
	srv map[int32]*server.Server
	// options, if set, changes a node's server Options at each start.
	options func(tn *tnode, o *server.Options)
}

// newServedCluster starts n nodes with the real partition manager and a
// server on each.
func newServedCluster(t *testing.T, n int) *served { return newServedClusterWith(t, n, nil, nil) }

// newServedClusterWith is newServedCluster with the tcluster's configure
// and the served cluster's options hooks set before the first start.
func newServedClusterWith(t *testing.T, n int, configure func(*tnode, *Config), options func(*tnode, *server.Options)) *served {
	t.Helper()
	c := &tcluster{t: t, real: true, fs: vfs.NewMem(), voters: map[int32]string{}, nodes: map[int32]*tnode{}, configure: configure}
	s := &served{tcluster: c, srv: map[int32]*server.Server{}, options: options}
	raft, kafka := map[int32]net.Listener{}, map[int32]net.Listener{}
	for i := int32(1); i <= int32(n); i++ {
		for _, m := range []map[int32]net.Listener{raft, kafka} {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			m[i] = ln
		}
		c.voters[i] = raft[i].Addr().String()
		c.nodes[i] = &tnode{id: i, dir: fmt.Sprintf("/n%d", i), addr: raft[i].Addr().String(), kafka: kafka[i].Addr().String()}
	}
	t.Cleanup(func() {
		for id, tn := range c.nodes {
			if tn.node != nil {
				s.stopNode(id)
			}
		}
	})
	c.startTogether(func(id int32) net.Listener { return raft[id] })
	for i := int32(1); i <= int32(n); i++ {
		s.serve(c.nodes[i], kafka[i])
	}
	// Every node live on the controller, so that a topic of the default
	// replication factor can be created at once (under load, a node's
	// heartbeats were once seen to miss a new controller's liveness
	// timeout at start, and CreateTopic refused three replicas).
	ctrl := c.controller()
	testutil.WaitFor(t, "every node to be live", func() bool { return len(brokerIDs(ctrl)) == n })
	return s
}

// serve runs a server for tn's node on ln.
func (s *served) serve(tn *tnode, ln net.Listener) {
	s.t.Helper()
	id, err := tn.node.ClusterID(ctxTimeout(s.t))
	if err != nil {
		s.t.Fatal(err)
	}
	opts := server.Options{Cluster: tn.node, NodeID: tn.id, ClusterID: id, Advertise: tn.kafka,
		GroupInitialRebalanceDelay: -1, Logger: slog.New(slog.NewTextHandler(testWriter{s.t}, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if s.options != nil {
		s.options(tn, &opts)
	}
	srv, err := server.New(tn.st, opts)
	if err != nil {
		s.t.Fatal(err)
	}
	s.srv[tn.id] = srv
	go srv.Serve(ln)
}

// stopNode stops a node's server, then the node and its store.
func (s *served) stopNode(id int32) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv[id].Shutdown(ctx); err != nil {
		s.t.Errorf("shutting node %d's server down: %v", id, err)
	}
	s.stop(id)
}

// seeds lists the Kafka addresses of the running nodes.
// restartNode starts a stopped node again over its DIR, with a server
// on its Kafka address.
func (s *served) restartNode(id int32) {
	s.t.Helper()
	s.restart(id)
	tn := s.nodes[id]
	ln, err := net.Listen("tcp", tn.kafka)
	if err != nil {
		s.t.Fatal(err)
	}
	s.serve(tn, ln)
}

func (s *served) seeds() []string {
	var out []string
	for _, tn := range s.running() {
		out = append(out, tn.kafka)
	}
	return out
}

func (s *served) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.seeds()...), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// committed reads a group's committed offsets of topic through the
// group's coordinator, as kgo finds it; nil while it cannot.
func committed(ctx context.Context, cl *kgo.Client, group, topic string, parts int32) map[int32]int64 {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic = topic
	for p := range parts {
		t.Partitions = append(t.Partitions, p)
	}
	req.Topics = []kmsg.OffsetFetchRequestTopic{t}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || kerr.ErrorForCode(resp.ErrorCode) != nil || len(resp.Topics) != 1 {
		return nil
	}
	out := map[int32]int64{}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			return nil
		}
		out[p.Partition] = p.Offset
	}
	return out
}

// coordinatorOf returns the group's coordinator as a running node
// answers it; -1 while it has none.
func coordinatorOf(ctx context.Context, cl *kgo.Client, group string) int32 {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		return -1
	}
	return resp.NodeID
}

// TestGroupSurvivesCoordinatorFailover: a kgo consumer group commits on
// a three-node cluster; the group's coordinator (the leader of its
// __consumer_offsets partition) is stopped; the commits are read back
// through the new coordinator, and a new member of the group resumes
// exactly at the committed offsets and reads every later record once.
func TestGroupSurvivesCoordinatorFailover(t *testing.T) {
	s := newServedCluster(t, 3)
	ctrl := s.controller()
	ctx := ctxTimeout(t)
	const topic, group, perPart = "orders", "grp", 50
	if err := ctrl.node.CreateTopic(ctx, topic, 2, -1, nil); err != nil {
		t.Fatal(err)
	}
	prod := s.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 2 * perPart {
		r := &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(strconv.Itoa(i))}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	member := func() *kgo.Client {
		return s.client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	}
	// The first member reads both partitions, then commits a position
	// short of what it read: where the next member must start.
	m1 := member()
	seen := map[int32]bool{}
	testutil.WaitFor(t, "the first member to read both partitions", func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		m1.PollFetches(pctx).EachRecord(func(r *kgo.Record) { seen[r.Partition] = true })
		return seen[0] && seen[1]
	})
	// 25 and 20 are within both partitions' records (raft's own entries
	// take a few offsets besides).
	want := map[int32]int64{0: 25, 1: 20}
	if err := commitSync(ctx, m1, topic, want); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if got := committed(ctx, m1, group, topic, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
	m1.Close() // leaves the group
	coord := coordinatorOf(ctx, prod, group)
	if coord < 0 {
		t.Fatal("no coordinator")
	}
	// Every replica of the group's offsets partition holds the commit:
	// it was answered once a majority did, and the rest follow.
	n, _ := ctrl.st.Partitions(store.OffsetsTopic)
	p := store.OffsetsPartitionFor(group, n)
	for _, tn := range s.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d to hold the group's commits", tn.id), func() bool {
			l, err := tn.st.Log(store.OffsetsTopic, p)
			if err != nil {
				return false
			}
			got := map[int32]int64{}
			for r, err := range l.Records(0) {
				if err != nil {
					return false
				}
				if g, tp, part, c, ok, err := store.DecodeCommit(r.Key, r.Value); err == nil && ok && g == group && tp == topic && c != nil {
					got[part] = c.Offset
				}
			}
			return fmt.Sprint(got) == fmt.Sprint(want)
		})
	}

	s.stopNode(coord)
	admin := s.client(t)
	testutil.WaitFor(t, "another node to coordinate the group", func() bool {
		id := coordinatorOf(ctx, admin, group)
		return id >= 0 && id != coord
	})
	testutil.WaitFor(t, "the new coordinator to answer the commits", func() bool {
		return fmt.Sprint(committed(ctx, admin, group, topic, 2)) == fmt.Sprint(want)
	})

	// The partitions' logs hold raft's own entries too (control batches,
	// which consumers skip): the record to resume at is the first data
	// record at or after the committed offset.
	first := map[int32]string{}
	for part, off := range want {
		l, err := s.running()[0].st.Log(topic, part)
		if err != nil {
			t.Fatal(err)
		}
		for r, err := range l.Records(off) {
			if err != nil {
				t.Fatal(err)
			}
			first[part] = string(r.Value)
			break
		}
	}
	m2 := member()
	last := map[int32]int{} // the value last read on each partition
	testutil.WaitFor(t, "the second member to read every record after the commits", func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		m2.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			v, _ := strconv.Atoi(string(r.Value))
			prev, ok := last[r.Partition]
			switch {
			case !ok && (r.Offset < want[r.Partition] || string(r.Value) != first[r.Partition]):
				t.Errorf("partition %d: resumed at offset %d (%q), want the first record at or after the committed %d (%q)",
					r.Partition, r.Offset, r.Value, want[r.Partition], first[r.Partition])
			case ok && v != prev+2:
				t.Errorf("partition %d: read %d after %d: each record once, in order", r.Partition, v, prev)
			}
			last[r.Partition] = v
		})
		return last[0] == 2*perPart-2 && last[1] == 2*perPart-1
	})
}

// testWriter sends a server's log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// commitSync commits offsets of topic as a member of its group and
// returns the error, the partitions' included.
func commitSync(ctx context.Context, cl *kgo.Client, topic string, offs map[int32]int64) error {
	m := map[int32]kgo.EpochOffset{}
	for p, o := range offs {
		m[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var out error
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: m},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			out = err
			if resp == nil {
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					out = errors.Join(out, kerr.ErrorForCode(rp.ErrorCode))
				}
			}
		})
	return out
}

// groupLog is a kgo.Logger sending kgo's log to the test's, which keeps
// why the member's heartbeat loop ended, each time it did, and whether a
// commit told it that the coordinator did not know it.
type groupLog struct {
	t        *testing.T
	mu       sync.Mutex
	hbErrs   []string
	fatalErr bool
}

func (l *groupLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *groupLog) Log(level kgo.LogLevel, msg string, kv ...any) {
	l.t.Logf("kgo %s: %s %v", level, msg, kv)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch msg {
	case "heartbeat errored":
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "err" {
				l.hbErrs = append(l.hbErrs, fmt.Sprint(kv[i+1]))
			}
		}
	case "offset commit returned a fatal group member error, triggering rejoin":
		l.fatalErr = true
	}
}

// TestGroupMemberOutlivesCoordinator: a member that keeps running while
// its group's coordinator stops finds the new coordinator, which loaded
// the group's generation from the log: it goes on committing in its
// generation, without a rebalance.
//
// One rebalance is allowed, for a reason outside the cluster: kgo ends
// its heartbeat loop when its coordinator lookups run into the stopped
// broker (one of its seeds, and in its last metadata), which refuses
// connections: "heartbeat errored; err: unable to dial ... connection
// refused" once a lookup failed to dial and the lookup retried at once
// failed too (seen in 1 of 20 runs under load, 1 and 3 of 10 later). It then rejoins with its member id; the new
// coordinator, knowing that member from the generation it loaded,
// answers the next generation with the same id. A coordinator that had
// not loaded the group would have answered UNKNOWN_MEMBER_ID (a new
// member id) or ILLEGAL_GENERATION, and one that rebalanced by itself
// REBALANCE_IN_PROGRESS: all of those fail the test.
func TestGroupMemberOutlivesCoordinator(t *testing.T) {
	s := newServedCluster(t, 3)
	ctrl := s.controller()
	ctx := ctxTimeout(t)
	const topic, group = "events", "live"
	if err := ctrl.node.CreateTopic(ctx, topic, 1, -1, nil); err != nil {
		t.Fatal(err)
	}
	prod := s.client(t)
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var assigned atomic.Int32
	logs := &groupLog{t: t}
	m := s.client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.WithLogger(logs), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { assigned.Add(1) }))
	testutil.WaitFor(t, "the member to read", func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return len(m.PollFetches(pctx).Records()) > 0
	})
	if err := commitSync(ctx, m, topic, map[int32]int64{0: 3}); err != nil {
		t.Fatalf("commit: %v", err)
	}
	member, gen := m.GroupMetadata()
	coord := coordinatorOf(ctx, prod, group)
	if coord < 0 {
		t.Fatal("no coordinator")
	}
	t.Logf("stopping node %d, the coordinator; the controller is node %d", coord, s.controller().id)
	s.stopNode(coord)
	// kgo finds the new coordinator itself (NOT_COORDINATOR, then
	// COORDINATOR_LOAD_IN_PROGRESS while it loads); the commit carries
	// the member's generation, which the new coordinator must know.
	testutil.WaitFor(t, "the member to commit through the new coordinator", func() bool {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return commitSync(cctx, m, topic, map[int32]int64{0: 7}) == nil
	})
	admin := s.client(t)
	// Another client may still be told of the stopped coordinator by a
	// node that has not seen the election yet: it retries.
	testutil.WaitFor(t, "the commit to be read back", func() bool {
		got := committed(ctx, admin, group, topic, 1)
		return got != nil && got[0] == 7
	})

	logs.mu.Lock()
	hbErrs, fatalErr := slices.Clone(logs.hbErrs), logs.fatalErr
	logs.mu.Unlock()
	if len(hbErrs) > 0 {
		// The heartbeat loop ended: the rejoin may still be under way.
		testutil.WaitFor(t, "the member to rejoin", func() bool { return assigned.Load() > 1 })
	}
	member2, gen2 := m.GroupMetadata()
	if member2 != member {
		t.Errorf("the member's id changed from %s to %s: the new coordinator did not know it", member, member2)
	}
	if fatalErr {
		t.Error("a commit was answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION")
	}
	n := assigned.Load()
	if n == 1 && gen2 == gen && len(hbErrs) == 0 {
		return // the usual case: no rebalance at all
	}
	// kgo rejoined: only for a heartbeat that could not reach a broker,
	// once, into the next generation.
	if n != 2 || gen2 != gen+1 || len(hbErrs) != 1 || !transportError(hbErrs[0]) {
		t.Errorf("assigned %d times, generation %d then %d, heartbeat loop ended by %q: "+
			"a rebalance the coordinators caused", n, gen, gen2, hbErrs)
	}
}

// transportError reports whether a kgo error is its client's failure to
// reach a broker, not an answer from one.
func transportError(err string) bool {
	return strings.Contains(err, "unable to dial") || strings.Contains(err, "connection refused") ||
		strings.Contains(err, "EOF") || strings.Contains(err, "connection reset")
}

// singleNodeCluster starts a one-node cluster over dir on fs, with the
// fake partition manager.
func singleNodeCluster(t *testing.T, fs *vfs.MemFS, dir string) *tcluster {
	t.Helper()
	c := &tcluster{t: t, fs: fs, voters: map[int32]string{}, nodes: map[int32]*tnode{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tn := &tnode{id: 1, dir: dir, addr: ln.Addr().String(), kafka: "k:1"}
	c.nodes[1], c.voters[1] = tn, tn.addr
	if err := c.startWith(tn, 1, ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if tn.node != nil {
			c.stop(1)
		}
	})
	c.controller()
	return c
}

// The cluster's offsets topic is the store's own, adopted when empty; a
// store whose offsets topic holds a single node's commits keeps them and
// does not replicate the cluster's.
func TestOffsetsTopicAdoption(t *testing.T) {
	fs := vfs.NewMem()
	st, err := store.Open("/single", store.Options{FS: fs, OffsetsPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTopic("t", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit("grp", "t", map[int32]int64{0: 0}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	for _, tc := range []struct {
		dir   string
		adopt bool
	}{{"/fresh", true}, {"/single", false}} {
		c := singleNodeCluster(t, fs, tc.dir)
		tn := c.nodes[1]
		ctx := ctxTimeout(t)
		err := tn.node.CreateTopic(ctx, store.OffsetsTopic, 3, -1, map[string]string{"cleanup.policy": "compact"})
		if tc.adopt != (err == nil) {
			t.Fatalf("%s: creating the offsets topic: %v", tc.dir, err)
		}
		_, replicated := tn.parts.find(store.OffsetsTopic, 0)
		if replicated != tc.adopt {
			t.Errorf("%s: the offsets topic's partitions run here: %v, want %v", tc.dir, replicated, tc.adopt)
		}
		if !tc.adopt {
			info, err := tn.st.DescribeTopic(store.OffsetsTopic)
			if err != nil {
				t.Fatal(err)
			}
			var records int64
			for _, p := range info.Partitions {
				records += p.EndOffset
			}
			if records != 1 {
				t.Errorf("%s: the single node's offsets topic holds %d records, want its one commit", tc.dir, records)
			}
		}
		c.stop(1)
	}
}

// Start refuses a store that replays (and may write) its offsets topic.
func TestStartRefusesUnreplicatedOffsets(t *testing.T) {
	fs := vfs.NewMem()
	st, err := store.Open("/d", store.Options{FS: fs, OffsetsPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = Start(Config{Dir: "/d", FS: fs, Store: st, NodeID: 1, RaftListen: "127.0.0.1:0",
		Voters: map[int32]string{1: "127.0.0.1:1"}, Advertise: "k:1"})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "ReplicatedOffsets") {
		t.Fatalf("Start: %v, want ErrConfig naming ReplicatedOffsets", err)
	}
}
