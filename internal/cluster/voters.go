package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ErrVotersDiffer refuses a node that was not given the same voters
// (--voters: ids and raft addresses) as another node of its cluster, as
// far as the two can tell: a node at its first start whose peer answers
// with another list (Start's error, before the node joins the metadata
// group), a node whose registration the controller refuses for it, or a
// node whose metadata controller is not among its voters (the node's
// failure, Node.Err). The message names both lists. Without it each node
// bootstrapped the metadata raft with its own list, and nodes that
// disagree about who votes can make two majorities, two controllers.
var ErrVotersDiffer = errors.New("cluster: the nodes were not given the same voters")

// votersDifferAdvice follows ErrVotersDiffer's message: the rule, and
// what the refusal left. adviceBeforeJoin and adviceAfterJoin end it,
// by whether the refused node had joined the metadata group.
const (
	votersDifferAdvice = "every node of a cluster must be given the same --voters list, itself included: the same ids with the same HOST:PORT (docs/cluster.md, \"The same --voters on every node\"); this node was not registered and served no client"
	// votersDifferServed replaces votersDifferAdvice for a node that
	// was registered before (a registration again, after the controller
	// lost track of it).
	votersDifferServed = "every node of a cluster must be given the same --voters list, itself included: the same ids with the same HOST:PORT (docs/cluster.md, \"The same --voters on every node\"); this node, registered before, stops serving"
	adviceBeforeJoin   = "nothing was written to this node's metadata log (the empty files and directories a start makes in DIR are taken up again by the next): start again each node whose list differs, with the list the others have"
	adviceAfterJoin    = "if only an address differs, start this node again with the list the others have; if the ids differ, its metadata keeps the list it was first started with and a restart with other ids is refused (ErrVoters): with every other voter running, remove its DIR and start it afresh with their list (it never registered, so no client's data is in it). If the other node's list is the wrong one, that node is the one to start again"
)

// formatVoters writes voters as --voters does, ordered by id:
// 1@h1:9093,2@h2:9093.
func formatVoters(v map[int32]string) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, strconv.Itoa(int(id))+"@"+v[id])
	}
	return strings.Join(parts, ",")
}

// compareVoters says how two voter lists differ: in their ids (a voter
// missing or added on one side: the two nodes disagree about who votes,
// which is never right), and in the address of a voter both name (right
// only while a voter moves and not every node has been given its new
// address yet: docs/cluster.md).
func compareVoters(a, b map[int32]string) (idsDiffer, addrsDiffer bool) {
	if len(a) != len(b) {
		idsDiffer = true
	}
	for id, addr := range a {
		other, ok := b[id]
		switch {
		case !ok:
			idsDiffer = true
		case other != addr:
			addrsDiffer = true
		}
	}
	return idsDiffer, addrsDiffer
}

// registeredBefore says whether this node's registration was accepted
// since it started: a registration again (the controller lost track of
// it) is neither a first start's nor one of a node that served nothing.
func (n *Node) registeredBefore() bool {
	select {
	case <-n.registered:
		return true
	default:
		return false
	}
}

// whatDiffers names the difference compareVoters found, for messages.
func whatDiffers(idsDiffer bool) string {
	if idsDiffer {
		return "the voter ids differ"
	}
	return "the same ids, with another address for a voter"
}

// checkRegistrant is the controller's check of a registering node's
// voters (req.Voters, the list it was started with) against its own:
// the ids must be the same always; an address may differ only on a node
// that is not at its first start (a voter that moved, while not every
// node has the new list: warned). A registration from a build that sends
// no list is not checked.
func (n *Node) checkRegistrant(req request) error {
	if req.Voters == nil {
		return nil
	}
	ids, addrs := compareVoters(req.Voters, n.cfg.Voters)
	if !ids && !addrs {
		return nil
	}
	if !ids && !req.FirstStart {
		n.log.Warn("cluster: a node registered with another address for a voter than this controller was given; every node dials the addresses its own --voters gives, so give every node the same list",
			"broker", req.Broker, "its_voters", formatVoters(req.Voters), "controller_voters", formatVoters(n.cfg.Voters))
		return nil
	}
	when := "at its first start"
	if !req.FirstStart {
		when = "at its restart"
	}
	err := fmt.Errorf("%w: node %d was given voters %s %s, and the controller, node %d, was given voters %s (%s); its registration is refused",
		ErrVotersDiffer, req.Broker, formatVoters(req.Voters), when, n.cfg.NodeID, formatVoters(n.cfg.Voters), whatDiffers(ids))
	// The refused node stops with this; logged here too, since the
	// controller may be the one whose list is wrong.
	n.log.Error("cluster: refused a node's registration: it was not given this node's voters", "err", err)
	return err
}

// checkWhois compares the voters a whois names, with the node that
// sent it, with this node's; called by the answering node. A node that
// is at its first start too fails with ErrVotersDiffer, since both are
// to make one new cluster and cannot agree on its voters; a node of a
// running cluster only warns (the asking node refuses itself,
// checkBlank), so that one misconfigured newcomer cannot stop a
// cluster. joined says whether this node has opened its metadata, and
// named whether that names the cluster: a node that has not served
// (ClusterID waits for the name) is at its first start. A node still
// opening its metadata is at its first start once checkBlank runs
// (blank); before, it cannot tell, and leaves the difference to
// checkBlank, which refuses it if it comes (votersDiffer).
func (n *Node) checkWhois(req request, joined, named bool) {
	if req.Voters == nil {
		return
	}
	ids, addrs := compareVoters(req.Voters, n.cfg.Voters)
	if !ids && !addrs {
		return
	}
	err := fmt.Errorf("%w: node %d, at its first start, was given voters %s, and this node (%d) was given voters %s (%s)",
		ErrVotersDiffer, req.Broker, formatVoters(req.Voters), n.cfg.NodeID, formatVoters(n.cfg.Voters), whatDiffers(ids))
	fresh, advice := joined && !named, adviceAfterJoin
	if !joined {
		n.mu.Lock()
		fresh = n.blank.Load()
		if !fresh {
			n.votersDiffer = err
		}
		n.mu.Unlock()
		advice = adviceBeforeJoin
	}
	if !fresh {
		n.log.Warn("cluster: a starting node was given other voters than this node; it refuses to start", "err", err)
		return
	}
	n.fail(bothFresh(err, advice))
}

// votersAdvice is votersDifferAdvice, or votersDifferServed for a node
// registered before.
func (n *Node) votersAdvice() string {
	if n.registeredBefore() {
		return votersDifferServed
	}
	return votersDifferAdvice
}

// bothFresh is checkWhois' failure of a node at its first start.
func bothFresh(err error, advice string) error {
	return fmt.Errorf("%w; both are at their first start, so neither goes on to make a cluster whose voters they disagree about; %s; %s", err, votersDifferAdvice, advice)
}

// checkController fails this node (ErrVotersDiffer) if its metadata's
// controller is not among its voters: a node given a list that leaves
// out voters the others have follows their controller's raft (raft
// takes entries from any leader of its term) and could never dial it.
func (n *Node) checkController() bool {
	c := n.meta.Controller()
	if _, ok := n.cfg.Voters[c]; c < 0 || ok {
		return true
	}
	n.fail(fmt.Errorf("%w: this node (%d) was given voters %s, and its metadata's controller is node %d, which is not among them; %s; %s",
		ErrVotersDiffer, n.cfg.NodeID, formatVoters(n.cfg.Voters), c, n.votersAdvice(), adviceAfterJoin))
	return false
}
