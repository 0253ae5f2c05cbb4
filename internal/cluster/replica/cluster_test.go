package replica

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// valuesFSM keeps the record values of every command it applies, in
// order: equal lists on every node mean the same batches in the same order.
type valuesFSM struct {
	mu     sync.Mutex
	values []string
}

func (f *valuesFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	for r, err := range record.Batch(l.Data).Records() {
		if err != nil {
			return err
		}
		f.values = append(f.values, string(r.Value))
	}
	return nil
}

func (f *valuesFSM) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.values)
}

func (f *valuesFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnap{}, nil }

func (f *valuesFSM) Restore(rc io.ReadCloser) error { return rc.Close() }

type nopSnap struct{}

func (nopSnap) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nopSnap) Release()                             {}

type member struct {
	id     raft.ServerID
	addr   raft.ServerAddress
	dir    string
	store  *Store
	stable *raft.InmemStore
	snaps  *raft.InmemSnapshotStore
	fsm    *valuesFSM
	trans  *raft.InmemTransport
	raft   *raft.Raft
}

type testCluster struct {
	t       *testing.T
	fs      vfs.FS
	members []*member
}

func (c *testCluster) start(m *member, bootstrap bool) {
	t := c.t
	st, err := Open(m.dir, Options{FS: c.fs, SegmentBytes: 16 << 10, Logger: quiet, maxIndexBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if m.stable == nil {
		m.stable, m.snaps = raft.NewInmemStore(), raft.NewInmemSnapshotStore()
	}
	_, trans := raft.NewInmemTransport(m.addr)
	m.store, m.trans, m.fsm = st, trans, &valuesFSM{}
	for _, o := range c.members {
		if o != m && o.raft != nil {
			o.trans.Disconnect(m.addr)
			o.trans.Connect(m.addr, trans)
			trans.Connect(o.addr, o.trans)
		}
	}
	conf := raft.DefaultConfig()
	conf.LocalID = m.id
	conf.LogOutput = io.Discard
	conf.HeartbeatTimeout = 300 * time.Millisecond
	conf.ElectionTimeout = 300 * time.Millisecond
	conf.LeaderLeaseTimeout = 300 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.SnapshotThreshold = 1 << 40
	conf.SnapshotInterval = time.Hour
	if bootstrap {
		var servers []raft.Server
		for _, o := range c.members {
			servers = append(servers, raft.Server{ID: o.id, Address: o.addr})
		}
		if err := raft.BootstrapCluster(conf, st, m.stable, m.snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
	}
	m.raft, err = raft.NewRaft(conf, m.fsm, st, m.stable, m.snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
}

func (c *testCluster) stop(m *member) {
	if err := m.raft.Shutdown().Error(); err != nil {
		c.t.Fatal(err)
	}
	m.raft = nil
	for _, o := range c.members {
		if o != m && o.raft != nil {
			o.trans.Disconnect(m.addr)
		}
	}
	if err := m.store.Close(); err != nil {
		c.t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing after a generous deadline:
// the condition is the assertion, the deadline only bounds a hang.
func (c *testCluster) waitFor(what string, cond func() bool) {
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within 60s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *testCluster) leader() *member {
	var l *member
	c.waitFor("a leader", func() bool {
		for _, m := range c.members {
			if m.raft != nil && m.raft.State() == raft.Leader {
				l = m
				return true
			}
		}
		return false
	})
	return l
}

// produce applies producer batches [from, to) through the leader, a
// window at a time, retrying those a leadership change failed (a retry
// may store a batch twice, which the FSMs, compared with each other, all
// see).
func (c *testCluster) produce(from, to int) {
	const window = 32
	for i := from; i < to; i += window {
		var futures []raft.ApplyFuture
		var batches [][]byte
		for j := i; j < min(i+window, to); j++ {
			bld := record.NewBuilder(record.None)
			for k := range j%3 + 1 {
				if err := bld.Add(record.Record{Offset: int64(k), Timestamp: int64(1_700_000_000_000 + j), Value: []byte(fmt.Sprintf("batch %d record %d", j, k))}); err != nil {
					c.t.Fatal(err)
				}
			}
			b, err := bld.Build()
			if err != nil {
				c.t.Fatal(err)
			}
			batches = append(batches, bytes.Clone(b))
		}
		for len(batches) > 0 {
			l := c.leader()
			futures = futures[:0]
			for _, b := range batches {
				futures = append(futures, l.raft.Apply(b, 10*time.Second))
			}
			var retry [][]byte
			for k, f := range futures {
				if err := f.Error(); err != nil {
					if err != raft.ErrLeadershipLost && err != raft.ErrNotLeader && err != raft.ErrEnqueueTimeout && err != raft.ErrRaftShutdown { //nolint:errorlint // raft's sentinels
						c.t.Fatalf("apply: %v", err)
					}
					retry = append(retry, batches[k])
				}
			}
			batches = retry
		}
	}
}

// logFiles reads every .log file of a member's partition.
func (c *testCluster) logFiles(m *member) map[string][]byte {
	names, err := c.fs.List(m.dir)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			data, err := vfs.ReadFileLimit(c.fs, filepath.Join(m.dir, n), 1<<30)
			if err != nil {
				c.t.Fatal(err)
			}
			out[n] = data
		}
	}
	return out
}

// TestCluster: three nodes apply producer batches with each partition as
// its raft log; the leader is shut down midway and the two survivors go
// on; then it rejoins. Every node's partition ends byte-identical, and
// every FSM applied the same records in the same order.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster")
	}
	c := &testCluster{t: t, fs: vfs.NewMem()}
	for i := 1; i <= 3; i++ {
		c.members = append(c.members, &member{
			id:   raft.ServerID(fmt.Sprint(i)),
			addr: raft.ServerAddress(fmt.Sprintf("node%d", i)),
			dir:  fmt.Sprintf("/node%d/topic-0", i),
		})
	}
	for i, m := range c.members {
		c.start(m, i == 0)
	}
	defer func() {
		for _, m := range c.members {
			if m.raft != nil {
				c.stop(m)
			}
		}
	}()
	c.produce(0, 150)
	old := c.leader()
	c.stop(old)
	c.produce(150, 300)
	c.start(old, false)
	l := c.leader()
	if err := l.raft.Barrier(10 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	c.waitFor("every node at the leader's last index", func() bool {
		want := l.raft.LastIndex()
		for _, m := range c.members {
			if got, _ := m.store.LastIndex(); got != want || m.raft.AppliedIndex() != want {
				return false
			}
		}
		return true
	})
	want := c.logFiles(l)
	for _, m := range c.members {
		got := c.logFiles(m)
		if len(got) != len(want) {
			t.Fatalf("node %s holds %d .log files, the leader %d", m.id, len(got), len(want))
		}
		for n, data := range want {
			if !bytes.Equal(got[n], data) {
				t.Fatalf("node %s: %s differs from the leader's", m.id, n)
			}
		}
	}
	// Every FSM applied what a Kafka consumer reads from its partition.
	for _, m := range c.members {
		var read []string
		for r, err := range m.store.Log().Records(0) {
			if err != nil {
				t.Fatal(err)
			}
			read = append(read, string(r.Value))
		}
		if len(read) < 300 {
			t.Fatalf("node %s: %d records, want at least the 300 batches' first ones", m.id, len(read))
		}
		// A restarted node's FSM starts empty and replays its log, so
		// it too must have applied exactly what its partition holds.
		if !slices.Equal(m.fsm.list(), read) {
			t.Fatalf("node %s: its FSM applied %d records, its partition holds %d", m.id, len(m.fsm.list()), len(read))
		}
		checkEpochs(t, "node "+string(m.id), c.fs, m.store)
	}
	// Each node's directory is a Kafka partition fsck finds clean.
	for _, m := range c.members {
		c.stop(m)
		rep, err := fsck.Check(c.fs, m.dir, fsck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean() {
			t.Fatalf("node %s: fsck: %+v", m.id, rep.Problems)
		}
	}
}
