package cluster

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/reach"
)

// This file reports what the node's dialers see of the other voters to
// one reach.Tracker (the metadata raft's transport here, the partition
// driver through multiraft.Config.Reach, the forwarding client in
// forward.go), which logs a voter that stays unreachable, and says what
// was seen when ClusterID gives up (WaitError).

// newReach makes the node's tracker over every other voter.
func newReach(cfg *Config, n *Node) *reach.Tracker {
	peers := map[uint64]string{}
	for id, addr := range cfg.Voters {
		if id != cfg.NodeID {
			peers[uint64(id)] = addr
		}
	}
	return reach.New(reach.Config{Logger: n.log, Peers: peers, WarnAfter: cfg.reachWarnAfter, Every: cfg.reachEvery})
}

// Voters returns what this node saw of each other voter when it last
// dialled it (the metadata group, the partition driver and the forwarding
// client alike): when it was last reached, and the error of every dial
// since, if any.
func (n *Node) Voters() []reach.Peer { return n.reach.Peers() }

// reachTransport is the metadata raft's transport: hashicorp's
// NetworkTransport, each RPC's outcome reported to the node's tracker.
// Embedding keeps the optional interfaces raft looks for (WithPreVote,
// WithClose, WithPeers) as NetworkTransport has them.
type reachTransport struct {
	*raft.NetworkTransport
	reach *reach.Tracker
	addrs voterAddrs
	// stop ends the retries of an AppendEntries (the node closing:
	// raft's Shutdown waits for its replication).
	stop <-chan struct{}
}

// hashicorp/raft backs off after each failed AppendEntries to a follower,
// doubling from 10 ms up to 10.24 s (its failureWait and maxFailureScale),
// and a restarted follower gets no entries, nor the commit index its
// metadata waits for, until the backoff ends: a node killed for 12 s
// registered 10 s after its restart. So an AppendEntries that carries
// replication (not a heartbeat, which raft backs off at most half a
// heartbeat timeout and which must say at once that a peer is gone) keeps
// trying an unreachable peer every appendRetryEvery for appendRetryFor
// before it fails: a peer down for a minute costs raft a few failures
// instead of a dozen, and the try under way reaches it within
// appendRetryEvery of its restart. A retried AppendEntries is the same
// request again, which raft's follower takes as often as it comes.
const (
	appendRetryFor   = 5 * time.Second
	appendRetryEvery = 50 * time.Millisecond
)

// retryUnreachable calls try until it succeeds, fails for another reason
// than an unreachable peer (retry says which), for or more has passed,
// or stop closes; it returns try's last error.
func retryUnreachable(try func() error, retry func(error) bool, every, for_ time.Duration, stop <-chan struct{}) error {
	deadline := time.Now().Add(for_)
	for {
		err := try()
		if err == nil || !retry(err) || !time.Now().Add(every).Before(deadline) {
			return err
		}
		t := time.NewTimer(every)
		select {
		case <-stop:
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// isHeartbeat reports whether args is hashicorp/raft's heartbeat: no
// entries, no previous entry, no commit index (raft.heartbeat's request).
func isHeartbeat(args *raft.AppendEntriesRequest) bool {
	return len(args.Entries) == 0 && args.PrevLogEntry == 0 && args.LeaderCommitIndex == 0
}

// unreachable reports whether err says the peer could not be reached or
// went away (so a retry may find it back), not that it answered.
func unreachable(err error) bool {
	var wrong *reach.WrongNodeError
	return err != nil && !errors.Is(err, raft.ErrTransportShutdown) && !errors.As(err, &wrong)
}

// note reports one RPC to id: its error, or the node id the answer came
// from. An answer from another node than the one dialled (this node's
// Voters give id another voter's address) is turned into an error raft
// sees, so that raft does not count one node's vote or acknowledgement as
// another's.
func (t *reachTransport) note(id raft.ServerID, target raft.ServerAddress, from []byte, err error) error {
	voter, perr := strconv.ParseUint(string(id), 10, 32)
	if perr != nil {
		return err
	}
	addr := string(target)
	if a, ok := t.addrs[int32(voter)]; ok {
		addr = a // what the transport dials (voterAddrs), not raft's stored one
	}
	switch {
	case errors.Is(err, raft.ErrTransportShutdown), errors.Is(err, raft.ErrPipelineReplicationNotSupported):
		// This node stopping, or a choice of the transport's: no news
		// of the peer.
	case err != nil:
		t.reach.Failed(voter, addr, reach.HungUp(err))
	case len(from) > 0 && string(from) != string(id):
		err = &reach.WrongNodeError{Want: string(id), Got: string(from)}
		t.reach.Failed(voter, addr, err)
	default:
		t.reach.Reached(voter, addr)
	}
	return err
}

func (t *reachTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	try := func() error {
		*resp = raft.AppendEntriesResponse{}
		err := t.NetworkTransport.AppendEntries(id, target, args, resp)
		return t.note(id, target, resp.ID, err)
	}
	if isHeartbeat(args) {
		return try()
	}
	return retryUnreachable(try, unreachable, appendRetryEvery, appendRetryFor, t.stop)
}

func (t *reachTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	err := t.NetworkTransport.RequestVote(id, target, args, resp)
	return t.note(id, target, resp.ID, err)
}

func (t *reachTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	err := t.NetworkTransport.RequestPreVote(id, target, args, resp)
	return t.note(id, target, resp.ID, err)
}

func (t *reachTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	err := t.NetworkTransport.TimeoutNow(id, target, args, resp)
	return t.note(id, target, resp.ID, err)
}

func (t *reachTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := t.NetworkTransport.InstallSnapshot(id, target, args, resp, data)
	return t.note(id, target, resp.ID, err)
}

// AppendEntriesPipeline reports a pipeline that could not be opened (its
// dial failed); what the pipeline's RPCs meet later, the next heartbeat
// (AppendEntries) meets too.
func (t *reachTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, t.note(id, target, nil, err)
	}
	return p, nil
}

// WaitError is ClusterID's error when its context ends first, and
// Start's when Config.StartContext ends its first start's question to
// the other voters (blank.go): what this node saw while it waited, so its
// caller can say more than "no controller" (a voter's address mistyped
// in Voters looked like a cluster with too few voters running). It wraps
// the context's error.
type WaitError struct {
	// Blank is set when Start was waiting for another voter to say
	// whether this node, its DIR holding no metadata, is new.
	Blank bool
	// Node is this node's id.
	Node int32
	// Controller is the controller this node knew when the wait ended,
	// -1 if none.
	Controller int32
	// Voters is what the node saw of each other voter (Node.Voters).
	Voters []reach.Peer
	// Err is the context's error.
	Err error
}

// Error says what the node waited for and what it saw of the voters.
func (e *WaitError) Error() string {
	return fmt.Sprintf("cluster: %s: %s: %v", e.What(), e.Seen(), e.Err)
}

// Unwrap returns the context's error.
func (e *WaitError) Unwrap() error { return e.Err }

// What says what the node was waiting for.
func (e *WaitError) What() string {
	if e.Blank {
		return "stopped while waiting for another voter to say whether this node is new (its DIR holds no metadata)"
	}
	switch {
	case e.Controller < 0:
		return "stopped before the cluster had a controller"
	case e.Controller == e.Node:
		return "stopped before this node, the cluster's controller, had registered itself"
	}
	return fmt.Sprintf("stopped before the cluster's controller (node %d) had accepted this node", e.Controller)
}

// Seen lists the voters that answered, those only connected to (the
// partition driver's connections, never answered), those not reached
// (each with the address dialled, the last error and for how long it has
// failed) and those not dialled yet: only what was observed.
func (e *WaitError) Seen() string {
	var reached, connected, failed, untried []string
	for _, p := range e.Voters {
		switch {
		case p.Err == nil && !p.Reached.IsZero() && !p.Answered:
			connected = append(connected, fmt.Sprintf("voter %d at %s", p.ID, p.Addr))
		case p.Err != nil:
			f := fmt.Sprintf("voter %d at %s", p.ID, p.Addr)
			if d := time.Since(p.Since); d >= time.Second {
				f += fmt.Sprintf(" for %v", d.Round(time.Second))
			}
			failed = append(failed, f+" ("+p.Err.Error()+")")
		case !p.Reached.IsZero():
			reached = append(reached, strconv.FormatUint(p.ID, 10))
		default:
			untried = append(untried, strconv.FormatUint(p.ID, 10))
		}
	}
	var parts []string
	if len(reached) > 0 {
		parts = append(parts, plural("reached voter", len(reached))+" "+strings.Join(reached, ", "))
	}
	if len(connected) > 0 {
		// The partition driver's connections, which no peer answers
		// on: the address listens, but whose it is was not seen.
		parts = append(parts, "connected to "+strings.Join(connected, ", ")+" (no answer seen yet)")
	}
	if len(failed) > 0 {
		parts = append(parts, "could not reach "+strings.Join(failed, ", "))
	}
	if len(untried) > 0 {
		parts = append(parts, plural("did not dial voter", len(untried))+" "+strings.Join(untried, ", ")+" yet")
	}
	if len(parts) == 0 {
		return "no other voter"
	}
	return strings.Join(parts, "; ")
}

// Unreachable reports whether a voter's last dial failed.
func (e *WaitError) Unreachable() bool {
	for _, p := range e.Voters {
		if p.Err != nil {
			return true
		}
	}
	return false
}

func plural(s string, n int) string {
	if n == 1 {
		return s
	}
	return s + "s"
}
