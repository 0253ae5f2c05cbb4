package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/raftlog"
)

// Peer names a cluster member: its raft ID, raft address and HTTP address.
type Peer struct {
	ID   string
	Raft string
	HTTP string
}

// Node is one member: a raftlog.Store (a seglog partition) under raft,
// served over HTTP. The replicated data is the raft log itself: the FSM
// only tracks how far it has been applied, and reads come from the
// partition.
type Node struct {
	self    Peer
	store   *raftlog.Store
	raft    *raft.Raft
	trans   *raft.NetworkTransport
	applied atomic.Uint64
	http    *http.Server
	ln      net.Listener

	appliedMu sync.Mutex
	moved     chan struct{} // closed (and replaced) when applied moves
}

// setApplied records that the entries up to i are applied here and wakes
// the /read requests waiting for an index (waitApplied).
func (n *Node) setApplied(i uint64) {
	n.applied.Store(i)
	n.appliedMu.Lock()
	close(n.moved)
	n.moved = make(chan struct{})
	n.appliedMu.Unlock()
}

// waitApplied returns once this node has applied index i, or with ctx's
// error. A follower applies an entry after the leader acknowledged it, once
// the leader's next message says it is committed: a read right after an
// append may be early on a follower, and waiting for the index the append
// answered makes it see the value.
func (n *Node) waitApplied(ctx context.Context, i uint64) error {
	for {
		n.appliedMu.Lock()
		moved := n.moved
		n.appliedMu.Unlock()
		if n.applied.Load() >= i {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fsm marks entries applied; the partition already holds them.
type fsm struct{ n *Node }

func (f fsm) Apply(l *raft.Log) any {
	f.n.setApplied(l.Index)
	return l.Index
}

// Snapshot records only the applied index: the example never compacts
// its log (SnapshotThreshold and TrailingLogs are huge), so every command
// stays readable from the partition, as in a Kafka topic without
// retention.
func (f fsm) Snapshot() (raft.FSMSnapshot, error) { return snap(f.n.applied.Load()), nil }

func (f fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	i, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return err
	}
	f.n.setApplied(i)
	return nil
}

type snap uint64

func (s snap) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write([]byte(strconv.FormatUint(uint64(s), 10))); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snap) Release() {}

// Start opens the node's Store in dir/<id>, starts raft on a TCP
// transport at self.Raft and the HTTP API at self.HTTP. With bootstrap,
// a node with no state bootstraps the cluster of peers. Peers are checked
// and both addresses bound before anything is written, so bad peers or an
// address in use leave dir as it was.
func Start(dir string, self Peer, peers []Peer, bootstrap bool, logs io.Writer) (*Node, error) {
	if err := checkPeers(self, peers); err != nil {
		return nil, err
	}
	n := &Node{self: self, moved: make(chan struct{})}
	fail := func(err error) (*Node, error) {
		n.Stop()
		return nil, err
	}
	var err error
	if n.ln, err = net.Listen("tcp", self.HTTP); err != nil {
		return nil, fmt.Errorf("HTTP address: %w", err)
	}
	addr, err := net.ResolveTCPAddr("tcp", self.Raft)
	if err != nil {
		return fail(err)
	}
	n.trans, err = raft.NewTCPTransport(self.Raft, addr, 3, 5*time.Second, logs)
	if err != nil {
		return fail(fmt.Errorf("raft address: %w", err))
	}
	base := filepath.Join(dir, self.ID)
	if n.store, err = raftlog.Open(base, raftlog.Options{}); err != nil {
		return fail(err)
	}
	snaps, err := raft.NewFileSnapshotStore(base+"-snapshots", 2, logs)
	if err != nil {
		return fail(err)
	}
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(self.ID)
	conf.LogOutput = logs
	conf.HeartbeatTimeout = 500 * time.Millisecond
	conf.ElectionTimeout = 500 * time.Millisecond
	conf.LeaderLeaseTimeout = 500 * time.Millisecond
	conf.SnapshotThreshold = 1 << 62
	conf.TrailingLogs = 1 << 62
	st := n.store
	if bootstrap {
		has, err := raft.HasExistingState(st, st, snaps)
		if err != nil {
			return fail(err)
		}
		if !has {
			var servers []raft.Server
			for _, p := range peers {
				servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Raft)})
			}
			if err := raft.BootstrapCluster(conf, st, st, snaps, n.trans, raft.Configuration{Servers: servers}); err != nil {
				return fail(err)
			}
		}
	}
	n.raft, err = raft.NewRaft(conf, fsm{n}, st, st, snaps, n.trans)
	if err != nil {
		return fail(err)
	}
	n.http = &http.Server{Handler: n.handler(peers), ReadHeaderTimeout: 5 * time.Second}
	go n.http.Serve(n.ln)
	return n, nil
}

// ErrBadPeers reports a -peers list or node ID that cannot make a
// cluster; the error wrapping it says why.
var ErrBadPeers = errors.New("bad peers")

// checkPeers refuses peers the example cannot run: a missing ID, an
// address that is not 127.0.0.1:port (the example has no authentication,
// so it must not listen on a network), an ID or address used twice, or
// self not among them.
func checkPeers(self Peer, peers []Peer) error {
	ids, addrs := map[string]bool{}, map[string]bool{}
	found := false
	for _, p := range peers {
		if p.ID == "" {
			return fmt.Errorf("%w: a peer has no ID", ErrBadPeers)
		}
		if ids[p.ID] {
			return fmt.Errorf("%w: ID %s is used twice", ErrBadPeers, p.ID)
		}
		ids[p.ID] = true
		for _, a := range []string{p.Raft, p.HTTP} {
			if err := loopbackOnly(a); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrBadPeers, p.ID, err)
			}
			if addrs[a] {
				return fmt.Errorf("%w: address %s is used twice", ErrBadPeers, a)
			}
			addrs[a] = true
		}
		found = found || p == self
	}
	if !found {
		return fmt.Errorf("%w: %s (%s, %s) is not one of the peers", ErrBadPeers, self.ID, self.Raft, self.HTTP)
	}
	return nil
}

// loopbackOnly refuses an address that is not 127.0.0.1 and a port.
func loopbackOnly(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host != "127.0.0.1" {
		return fmt.Errorf("%s: the example listens on 127.0.0.1 only", addr)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("%s: the port must be a number from 1 to 65535", addr)
	}
	return nil
}

// Stop shuts the node down: HTTP, raft, transport, Store; after a failed
// Start, whatever it had opened.
func (n *Node) Stop() error {
	var errs []error
	if n.http != nil {
		errs = append(errs, n.http.Close())
	} else if n.ln != nil {
		errs = append(errs, n.ln.Close()) // Start failed before serving
	}
	if n.raft != nil {
		errs = append(errs, n.raft.Shutdown().Error())
	}
	if n.trans != nil {
		errs = append(errs, n.trans.Close())
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	return errors.Join(errs...)
}

// maxValue bounds one appended value.
const maxValue = 1 << 20

// handler serves:
//
//	POST /append   body = one value (at most 1 MiB, else 413); 200 with
//	               its index once a majority stored it and it was applied
//	               here (the leader); 421 with the leader's HTTP address
//	               on a follower (not stored); 503 when leadership was lost
//	               meanwhile (stored or not: unknown)
//	GET  /read?from=I&max=N&wait=W   "index<TAB>value" lines of applied
//	               commands from index I (default 1), at most N (default
//	               1000, up to 10000); with wait, once this node has
//	               applied index W (the one an /append answered), or 504
//	               after readWaitLimit; 400 for anything else
//	GET  /status   "<state> <leader id> <applied index>"
func (n *Node) handler(peers []Peer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /append", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxValue+1))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > maxValue {
			http.Error(w, fmt.Sprintf("a value is at most %d bytes", maxValue), http.StatusRequestEntityTooLarge)
			return
		}
		f := n.raft.Apply(body, 10*time.Second)
		if err := f.Error(); err != nil {
			if errors.Is(err, raft.ErrNotLeader) {
				// Not stored: send it to the leader.
				_, id := n.raft.LeaderWithID()
				for _, p := range peers {
					if string(id) == p.ID {
						w.Header().Set("Leader", p.HTTP)
					}
				}
				http.Error(w, err.Error(), http.StatusMisdirectedRequest)
				return
			}
			// ErrLeadershipLost and the like: the value may or may not be
			// committed, so the client must not assume either.
			http.Error(w, err.Error()+" (the value may or may not have been stored)", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, f.Index())
	})
	mux.HandleFunc("GET /read", func(w http.ResponseWriter, r *http.Request) {
		q, err := readParams(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if q.wait > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), readWaitLimit)
			err := n.waitApplied(ctx, q.wait)
			cancel()
			if err != nil {
				http.Error(w, fmt.Sprintf("index %d is not applied here after %v (applied: %d)", q.wait, readWaitLimit, n.applied.Load()), http.StatusGatewayTimeout)
				return
			}
		}
		applied, limit := n.applied.Load(), q.limit
		var b strings.Builder
		for i := q.from; i <= applied && limit > 0; i++ {
			var l raft.Log
			if err := n.store.GetLog(i, &l); err != nil {
				http.Error(w, fmt.Sprintf("index %d: %v", i, err), http.StatusInternalServerError)
				return
			}
			if l.Type != raft.LogCommand {
				continue
			}
			fmt.Fprintf(&b, "%d\t%s\n", i, l.Data)
			limit--
		}
		io.WriteString(w, b.String())
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		_, id := n.raft.LeaderWithID()
		fmt.Fprintf(w, "%s %s %d\n", n.raft.State(), id, n.applied.Load())
	})
	return mux
}

// readWaitLimit bounds how long /read waits for its wait index.
var readWaitLimit = 10 * time.Second

// readQuery is a /read request's parameters.
type readQuery struct {
	from  uint64 // first index
	limit int    // most commands returned
	wait  uint64 // index to have applied first; 0: none
}

// readParams parses /read's from, max and wait; absent ones take their
// defaults, and anything that is not a number in range is refused.
func readParams(r *http.Request) (readQuery, error) {
	rq := readQuery{from: 1, limit: 1000}
	q := r.URL.Query()
	var err error
	if v := q.Get("from"); v != "" {
		if rq.from, err = strconv.ParseUint(v, 10, 64); err != nil || rq.from == 0 {
			return readQuery{}, fmt.Errorf("from=%q: want an index from 1", v)
		}
	}
	if v := q.Get("max"); v != "" {
		if rq.limit, err = strconv.Atoi(v); err != nil || rq.limit < 1 || rq.limit > 10000 {
			return readQuery{}, fmt.Errorf("max=%q: want a count from 1 to 10000", v)
		}
	}
	if v := q.Get("wait"); v != "" {
		if rq.wait, err = strconv.ParseUint(v, 10, 64); err != nil || rq.wait == 0 {
			return readQuery{}, fmt.Errorf("wait=%q: want an index from 1", v)
		}
	}
	return rq, nil
}
