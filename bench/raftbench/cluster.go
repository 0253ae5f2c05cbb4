package raftbench

import (
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// countFSM counts applied commands.
type countFSM struct{ n atomic.Uint64 }

func (f *countFSM) Apply(*raft.Log) any { f.n.Add(1); return nil }
func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) {
	return countSnap(f.n.Load()), nil
}
func (f *countFSM) Restore(rc io.ReadCloser) error { return rc.Close() }

type countSnap uint64

func (s countSnap) Persist(sink raft.SnapshotSink) error {
	fmt.Fprint(sink, uint64(s))
	return sink.Close()
}
func (countSnap) Release() {}

// ClusterRate runs three nodes of p's store on in-memory transports, each
// with its store and snapshots below dir, and returns the commands per
// second applied on the leader, with up to 1024 commands in flight.
func ClusterRate(p Peer, dir string, commands int) (float64, error) {
	if commands < 1 {
		return 0, fmt.Errorf("raftbench: a cluster of %d commands: need at least 1", commands)
	}
	var rafts []*raft.Raft
	var trans []*raft.InmemTransport
	var servers []raft.Server
	for i := range 3 {
		addr, t := raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("n%d", i)))
		trans = append(trans, t)
		servers = append(servers, raft.Server{ID: raft.ServerID(addr), Address: addr})
	}
	for _, a := range trans {
		for _, b := range trans {
			if a != b {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
	var opened []Store
	defer func() {
		for _, r := range rafts {
			r.Shutdown().Error()
		}
		for _, s := range opened {
			s.Close()
		}
	}()
	for i := range 3 {
		nd := filepath.Join(dir, fmt.Sprint(i))
		st, err := p.Open(filepath.Join(nd, "log"))
		if err != nil {
			return 0, err
		}
		opened = append(opened, st)
		snaps, err := raft.NewFileSnapshotStore(nd, 1, io.Discard)
		if err != nil {
			return 0, err
		}
		c := raft.DefaultConfig()
		c.LocalID = servers[i].ID
		c.LogOutput = io.Discard
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
		if err := raft.BootstrapCluster(c, st, st, snaps, trans[i], raft.Configuration{Servers: servers}); err != nil {
			return 0, err
		}
		r, err := raft.NewRaft(c, &countFSM{}, st, st, snaps, trans[i])
		if err != nil {
			return 0, err
		}
		rafts = append(rafts, r)
	}
	var leader *raft.Raft
	for deadline := time.Now().Add(30 * time.Second); leader == nil; {
		for _, r := range rafts {
			if r.State() == raft.Leader {
				leader = r
			}
		}
		if leader != nil {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no leader after 30 s")
		}
		// Polled: raft's LeaderCh reports only to one reader per node,
		// and the election takes a few hundred milliseconds either way.
		time.Sleep(10 * time.Millisecond)
	}
	cmd := make([]byte, 1024)
	start := time.Now()
	var pending []raft.ApplyFuture
	for i := range commands {
		pending = append(pending, leader.Apply(cmd, 30*time.Second))
		if len(pending) == 1024 || i == commands-1 {
			for _, f := range pending {
				if err := f.Error(); err != nil {
					return 0, err
				}
			}
			pending = pending[:0]
		}
	}
	return float64(commands) / time.Since(start).Seconds(), nil
}
