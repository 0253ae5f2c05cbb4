package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
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
}

// fsm marks entries applied; the partition already holds them.
type fsm struct{ n *Node }

func (f fsm) Apply(l *raft.Log) any {
	f.n.applied.Store(l.Index)
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
	f.n.applied.Store(i)
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
// a node with no state bootstraps the cluster of peers.
func Start(dir string, self Peer, peers []Peer, bootstrap bool, logs io.Writer) (*Node, error) {
	for _, a := range []string{self.Raft, self.HTTP} {
		if err := loopbackOnly(a); err != nil {
			return nil, err
		}
	}
	n := &Node{self: self}
	base := filepath.Join(dir, self.ID)
	st, err := raftlog.Open(base, raftlog.Options{})
	if err != nil {
		return nil, err
	}
	n.store = st
	fail := func(err error) (*Node, error) {
		n.Stop()
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStore(base+"-snapshots", 2, logs)
	if err != nil {
		return fail(err)
	}
	addr, err := net.ResolveTCPAddr("tcp", self.Raft)
	if err != nil {
		return fail(err)
	}
	n.trans, err = raft.NewTCPTransport(self.Raft, addr, 3, 5*time.Second, logs)
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
	n.ln, err = net.Listen("tcp", self.HTTP)
	if err != nil {
		return fail(err)
	}
	n.http = &http.Server{Handler: n.handler(peers), ReadHeaderTimeout: 5 * time.Second}
	go n.http.Serve(n.ln)
	return n, nil
}

// loopbackOnly refuses an address that is not on 127.0.0.1: the example
// has no authentication, so it must not listen on a network.
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host != "127.0.0.1" {
		return fmt.Errorf("%s: the example listens on 127.0.0.1 only", addr)
	}
	return nil
}

// Stop shuts the node down: HTTP, raft, transport, Store.
func (n *Node) Stop() error {
	var errs []error
	if n.http != nil {
		errs = append(errs, n.http.Close())
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

// handler serves:
//
//	POST /append   body = one value; 200 with its index once a majority
//	               stored it and it was applied here (the leader); 421
//	               with the leader's HTTP address on a follower
//	GET  /read?from=I&max=N   "index<TAB>value" lines of applied commands
//	GET  /status   "<state> <leader id> <applied index>"
func (n *Node) handler(peers []Peer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /append", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f := n.raft.Apply(body, 10*time.Second)
		if err := f.Error(); err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				_, id := n.raft.LeaderWithID()
				for _, p := range peers {
					if string(id) == p.ID {
						w.Header().Set("Leader", p.HTTP)
					}
				}
				http.Error(w, err.Error(), http.StatusMisdirectedRequest)
				return
			}
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, f.Index())
	})
	mux.HandleFunc("GET /read", func(w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.ParseUint(r.URL.Query().Get("from"), 10, 64)
		limit, _ := strconv.Atoi(r.URL.Query().Get("max"))
		if limit <= 0 || limit > 10000 {
			limit = 1000
		}
		from = max(from, 1)
		applied := n.applied.Load()
		var b strings.Builder
		for i := from; i <= applied && limit > 0; i++ {
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
