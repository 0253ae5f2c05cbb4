package cluster

import (
	"context"
	"fmt"
	"maps"
	"time"
)

// opWhois asks any node, controller or not, what its metadata says of a
// broker: a node whose metadata store is empty asks it of its peers
// before it joins the metadata group (checkBlank).
const opWhois = "whois"

// whois answers opWhois from this node's metadata as far as it has
// applied it: whether it knows broker req.Broker and from which
// directory, whether the cluster is named, and whether this node is
// fresh itself (no metadata yet beyond its bootstrap).
func (n *Node) whois(req request) response {
	m := n.metaReady.Load()
	if m == nil {
		// Still opening its metadata: fresh only if it found none (it is
		// in its own checkBlank). A node replaying metadata it has cannot
		// tell yet, and must not pass for a new cluster's.
		n.checkWhois(req, false, false)
		return response{Fresh: n.blank.Load(), Voters: n.whoisVoters()}
	}
	st := m.State()
	b, known := st.Broker(req.Broker)
	named := st.ClusterID() != ""
	// Not named: this node has served nothing yet (ClusterID waits for
	// the name), so it may still refuse to go on.
	n.checkWhois(req, true, named)
	return response{Known: known, DirectoryID: b.DirectoryID, Named: named, Fresh: !named && m.LastIndex() <= 1, Voters: n.whoisVoters()}
}

// whoisVoters is the list a whois answer carries: this node's voters,
// or none in a test standing in for a build before the check.
func (n *Node) whoisVoters() map[int32]string {
	if n.cfg.whoisWithoutVoters {
		return nil
	}
	return n.cfg.Voters
}

// blankPoll is how often checkBlank asks its peers again, and blankWait
// how long it asks before it goes on without an answer.
const (
	blankPoll = 500 * time.Millisecond
	blankWait = 5 * time.Second
)

// checkBlank runs before a node whose metadata store is empty joins the
// metadata group: a new node, or one whose DIR was wiped or replaced.
// The latter must not vote or acknowledge an entry as the voter it was
// (its promises are gone: a vote it casts can repeat one its old DIR
// cast, and an entry it acknowledges can be missing when the old DIR or
// the others come back), so it asks its peers first, until one answers:
//
//   - a peer that knows this broker: refused, ErrDirectoryID;
//   - a peer whose metadata names the cluster and does not know it: a
//     new node joining a running cluster;
//   - only fresh peers (empty metadata, or in checkBlank themselves): a
//     new cluster's first start.
//
// A peer that has metadata but has not replayed it since its restart
// cannot tell yet, and is asked again. With no answer within blankWait
// the node goes on as a new one, warning: a cluster's nodes may be
// started one after the other (an embedder's loop of Starts), and only
// a wiped DIR started while every other voter is down gets past this
// (docs/cluster.md, "A node that lost its DIR"). ctx
// (Config.StartContext) ends the wait with its error.
func (n *Node) checkBlank(ctx context.Context) error {
	n.mu.Lock()
	n.blank.Store(true)
	differ := n.votersDiffer // a peer's whois came before this node knew it was new
	n.mu.Unlock()
	if differ != nil {
		return bothFresh(differ, adviceBeforeJoin)
	}
	var warned bool
	deadline := time.Now().Add(blankWait)
	for {
		fresh, named := 0, 0
		for id := range n.cfg.Voters {
			if id == n.cfg.NodeID {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			resp, err := n.roundTrip(rctx, id, request{Op: opWhois, Broker: n.cfg.NodeID, Voters: n.cfg.Voters})
			cancel()
			if err := n.Err(); err != nil {
				return err // a peer's whois found its voters differ (checkWhois)
			}
			switch {
			case err != nil || resp.err() != nil:
			case resp.Voters != nil && !maps.Equal(resp.Voters, n.cfg.Voters):
				// Before this node bootstraps the metadata raft with its
				// list: nothing is written that a start with the right
				// list would have to undo.
				ids, _ := compareVoters(resp.Voters, n.cfg.Voters)
				return fmt.Errorf("%w: this node (%d), at its first start, was given voters %s, and node %d was given voters %s (%s); %s; %s",
					ErrVotersDiffer, n.cfg.NodeID, formatVoters(n.cfg.Voters), id, formatVoters(resp.Voters), whatDiffers(ids), votersDifferAdvice, adviceBeforeJoin)
			case resp.Known:
				dir := resp.DirectoryID
				if dir == "" {
					dir = "(none recorded)"
				}
				return fmt.Errorf("%w: this DIR has no metadata, and node %d's metadata knows broker %d (registered from directory.id=%s); %s",
					ErrDirectoryID, id, n.cfg.NodeID, dir, directoryAdvice)
			case resp.Named:
				named++
			case resp.Fresh:
				fresh++
			}
		}
		if named > 0 || fresh > 0 || len(n.cfg.Voters) == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			n.log.Warn("cluster: no other voter told whether this node is new; joining the metadata group as a new node. If this DIR was wiped or replaced, stop this node now (docs/cluster.md, \"A node that lost its DIR\")",
				"waited", blankWait)
			return nil
		}
		if !warned {
			n.log.Info("cluster: this node's DIR has no metadata yet; asking the other voters whether it is new before joining the metadata group (a wiped DIR must not vote)")
			warned = true
		}
		t := time.NewTimer(blankPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return &WaitError{Blank: true, Node: n.cfg.NodeID, Controller: -1, Voters: n.Voters(), Err: ctx.Err()}
		case <-t.C:
		}
	}
}
