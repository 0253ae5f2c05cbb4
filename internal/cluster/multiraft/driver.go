package multiraft

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// group is one replica on this node. rn, storage and the proposal lists
// belong to the driver goroutine; lead and term are published for Leader.
type group struct {
	id      uint64
	rn      *raft.RawNode
	storage Storage
	apply   ApplyFunc
	voters  map[uint64]bool // every peer in the configuration, for ReportUnreachable
	// peers is the group's replicas in the order it was added with,
	// the preferred first (its successor when a leader dies: takeover.go).
	peers []uint64
	// orphanTicks counts down a survivor's wait for the successor of
	// orphan, a dead leader (takeover.go; driver goroutine only).
	orphan      uint64
	orphanTicks int
	// voterIDs is voters for readers off the driver goroutine (Live).
	voterIDs atomic.Pointer[[]uint64]
	// heard is when each of the node's peers last sent this group a
	// message (UnixNano; 0 never): the liveness of the caught-up set
	// (Status) and of Live, which raft's own RecentActive cannot give,
	// as CheckQuorum clears it every election timeout. The map is
	// made with the group and never changes (a node's peers are
	// fixed); the driver stores the times, anyone may read them.
	heard map[uint64]*atomic.Int64
	// replWaits are WaitReplicated's callers (driver goroutine only).
	replWaits []*replWait
	// caught is, on the leader, each follower's catch-up record for the
	// caught-up set (isr.go; driver goroutine only).
	caught map[uint64]*catchUp

	dirty bool
	// fetching is set while a worker copies a snapshot's data: the group
	// is frozen (snapshot.go).
	fetching bool
	proposed []*proposal // accepted by raft this round, index not yet known
	waiting  []*proposal // indexed, waiting to be applied

	lead, term atomic.Uint64
	// hold is how many more ticks a fresh group, on a replica that is not
	// its preferred leader, waits before it ticks raft (while it knows no
	// leader): the preferred replica's election timer runs out first, so
	// it wins the group's first election (preferred.go).
	hold int
	// firstLeft is how many more ticks a fresh group's preferred replica
	// campaigns again every recampaignTicks while it knows no leader
	// (preferred.go).
	firstLeft int
}

type proposal struct {
	group       uint64
	data        []byte
	index, term uint64
	done        chan result // buffered: the driver never blocks on it
	// placed is closed once the entry is in this node's log (its
	// Ready persisted) or never will be (finished before): a Propose
	// whose ctx ends waits for it, so its caller knows the log it reads
	// next already holds every entry it will ever hold of this proposal.
	placed       chan struct{}
	placedClosed bool // driver goroutine only
}

type result struct {
	index uint64
	err   error
}

func (p *proposal) finish(index uint64, err error) {
	p.done <- result{index, err}
	p.place()
}

// place closes placed, once (driver goroutine only).
func (p *proposal) place() {
	if !p.placedClosed {
		p.placedClosed = true
		close(p.placed)
	}
}

// inbound is one message read from a peer.
type inbound struct {
	group uint64
	msg   *pb.Message
}

func (n *Node) addGroup(id uint64, peers []uint64, st Storage, apply ApplyFunc) error {
	if n.groups[id] != nil {
		return fmt.Errorf("%w: %d", ErrGroupExists, id)
	}
	fresh, err := isFresh(st)
	if err != nil {
		return err
	}
	if fresh {
		if err := bootstrap(st, peers); err != nil {
			return err
		}
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID:              n.cfg.ID,
		ElectionTick:    n.cfg.ElectionTick,
		HeartbeatTick:   n.cfg.HeartbeatTick,
		Storage:         st,
		MaxSizePerMsg:   n.cfg.MaxSizePerMsg,
		MaxInflightMsgs: n.cfg.MaxInflightMsgs,
		// A leader that cannot hear a majority steps down, so a
		// partitioned leader stops taking writes it cannot commit and
		// RecentActive (the ISR) means something.
		CheckQuorum: true,
		// A node back from a partition does not depose a healthy leader.
		PreVote: true,
		// Writes go to the leader, as Kafka's do: a follower answers
		// NotLeaderError rather than forwarding a proposal it could not
		// then match to its index.
		DisableProposalForwarding: true,
		Logger:                    n.cfg.Logger,
	})
	if err != nil {
		return err
	}
	g := &group{id: id, rn: rn, storage: st, apply: apply, peers: slices.Clone(peers), heard: make(map[uint64]*atomic.Int64, len(n.peers))}
	for pid := range n.peers {
		g.heard[pid] = new(atomic.Int64)
	}
	g.setVoters(rn.Status().Config.Voters.IDs())
	if fresh {
		g.hold = firstElectionHold(n.cfg.ID, peers, n.cfg.ElectionTick)
	}
	// The term stored, from the start: a Ready carries the hard state
	// only when it changes, so a restarted follower of an idle group
	// would otherwise report term (leader epoch) 0 until its next commit
	// (Metadata's epoch going backwards, which clients take for stale).
	g.term.Store(rn.BasicStatus().GetTerm())
	n.mu.Lock()
	n.groups[id] = g
	n.mu.Unlock()
	if fresh && firstCampaign(n.cfg.ID, peers) {
		// The preferred replica asks for votes at once: the others,
		// holding back, grant them if they run the group already; if
		// not, it asks again every few ticks (preferred.go).
		if err := rn.Campaign(); err == nil {
			n.mark(g)
		}
		g.firstLeft = n.cfg.ElectionTick
	}
	return nil
}

func (g *group) setVoters(ids map[uint64]struct{}) {
	g.voters = make(map[uint64]bool, len(ids))
	list := make([]uint64, 0, len(ids))
	for id := range ids {
		g.voters[id] = true
		list = append(list, id)
	}
	g.voterIDs.Store(&list)
}

// dropGroup forgets g and fails its proposals with err.
func (n *Node) dropGroup(g *group, err error) {
	n.mu.Lock()
	delete(n.groups, g.id)
	n.mu.Unlock()
	for _, p := range g.proposed {
		p.finish(0, err)
	}
	for _, p := range g.waiting {
		p.finish(0, err)
	}
	g.proposed, g.waiting = nil, nil
	g.endReplWaits(err)
}

// failGroup stops g after its storage or apply failed with err, and
// tells Config.Stopped.
func (n *Node) failGroup(g *group, err error) {
	n.dropGroup(g, err)
	if n.cfg.Stopped != nil {
		n.cfg.Stopped(g.id, err)
	}
}

// drive is the node's one raft goroutine. One goroutine, not a pool: a
// round's work per group is a few microseconds of raft bookkeeping plus the
// Storage writes, every RawNode is single-threaded anyway, and one
// goroutine lets a round's messages for a peer leave in one write. The cost
// is that a slow Storage or ApplyFunc delays every group.
func (n *Node) drive() {
	defer n.wg.Done()
	defer close(n.driven)
	t := time.NewTicker(n.cfg.Tick)
	defer t.Stop()
	out := newRoundOut(n)
	again := false // a group still has a Ready: do not wait for an event
	for {
		var poll chan struct{}
		if again {
			poll = closedChan
		}
		select {
		case <-poll:
		case <-n.stop:
			n.shutdown()
			return
		case now := <-t.C:
			for _, g := range n.groups {
				if g.fetching || g.holding() {
					continue
				}
				n.sampleCatchUp(g, now)
				g.rn.Tick()
				g.backup()
				g.recampaign()
				n.mark(g)
				if len(g.replWaits) > 0 {
					n.checkReplWaits(g)
				}
			}
		case batch := <-n.inbox:
			n.step(batch)
		case p := <-n.props:
			n.propose(p)
			// Take what else is queued, so a burst of proposals
			// shares one round (one Storage write per group).
			for more := true; more; {
				select {
				case p := <-n.props:
					n.propose(p)
				default:
					more = false
				}
			}
		case f := <-n.ops:
			f()
		case id := <-n.downs:
			for _, g := range n.groups {
				if g.voters[id] && !g.fetching {
					g.rn.ReportUnreachable(id)
				}
			}
		case id := <-n.gone:
			n.takeOver(id)
		}
		list := n.dirty
		n.dirty = nil
		n.readyAll(list, out)
		clear(list)
		n.spare = list[:0]
		out.flush()
		again = len(n.dirty) > 0
	}
}

// mark queues g for this round's (or, during one, the next round's) Ready
// handling.
func (n *Node) mark(g *group) {
	if !g.dirty {
		g.dirty = true
		if n.dirty == nil {
			n.dirty = n.spare
			n.spare = nil
		}
		n.dirty = append(n.dirty, g)
	}
}

// closedChan is always ready: the driver's select polls through it.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (n *Node) shutdown() {
	for _, g := range n.groups {
		n.dropGroup(g, ErrClosed)
	}
}

// networkMsg is the message types a peer may send; the others are local to
// a RawNode (MsgHup, MsgBeat, MsgProp with forwarding off, storage
// messages), and stepping them from the network would let a peer make this
// node campaign or append.
func networkMsg(t pb.MessageType) bool {
	switch t {
	case pb.MessageType_MsgApp, pb.MessageType_MsgAppResp,
		pb.MessageType_MsgVote, pb.MessageType_MsgVoteResp,
		pb.MessageType_MsgPreVote, pb.MessageType_MsgPreVoteResp,
		pb.MessageType_MsgSnap, pb.MessageType_MsgHeartbeat, pb.MessageType_MsgHeartbeatResp,
		pb.MessageType_MsgTransferLeader, pb.MessageType_MsgTimeoutNow:
		return true
	}
	return false
}

func (n *Node) step(batch []inbound) {
	now := time.Now()
	for _, in := range batch {
		g := n.groups[in.group]
		if g == nil {
			n.unknownGroup.Add(1)
			continue
		}
		m := in.msg
		if m.GetTo() != n.cfg.ID || n.peers[m.GetFrom()] == nil || !networkMsg(m.GetType()) {
			n.misaddressed.Add(1)
			continue
		}
		if g.fetching {
			// Frozen while a snapshot's data is copied (snapshot.go):
			// raft resends what matters once it is back.
			n.frozenDrops.Add(1)
			continue
		}
		if m.GetType() == pb.MessageType_MsgSnap {
			if rcv, ok := g.storage.(SnapshotReceiver); ok && rcv.SnapshotNeedsData(m.GetSnapshot()) {
				if g.rn.HasReady() {
					// Committed entries not yet applied: a transfer
					// must not change the log under them. The leader
					// sends the snapshot again.
					n.frozenDrops.Add(1)
					n.mark(g)
					continue
				}
				n.startFetch(g, rcv, m)
				continue
			}
		}
		g.heard[m.GetFrom()].Store(now.UnixNano())
		// Step fails only for messages raft ignores (a peer it does not
		// know, a stale response): raft's answer to those is to drop
		// them; or it panics (ErrRaftPanic), which stops the group rather
		// than the process.
		if err := stepRecovering(g.rn, m); errors.Is(err, ErrRaftPanic) {
			n.failGroup(g, fmt.Errorf("multiraft: group %d, %v from %d: %w", g.id, m.GetType(), m.GetFrom(), err))
			continue
		}
		if m.GetType() == pb.MessageType_MsgAppResp && len(g.replWaits) > 0 {
			n.checkReplWaits(g)
		}
		n.received.Add(1)
		n.mark(g)
	}
}

// stepRecovering is rn.Step with etcd raft's panics (ErrRaftPanic) turned
// into an error; rn is not used again after one.
func stepRecovering(rn *raft.RawNode, m *pb.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrRaftPanic, r)
		}
	}()
	return rn.Step(m)
}

// propose hands p to its group's RawNode. Its index is learnt from the
// round's Ready: a leader appends an accepted proposal to its log at once,
// so the entries the Ready asks to persist end with this round's proposals,
// in order.
func (n *Node) propose(p *proposal) {
	g := n.groups[p.group]
	if g == nil {
		p.finish(0, ErrGroupNotFound)
		return
	}
	st := g.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		p.finish(0, &NotLeaderError{Group: g.id, Leader: st.Lead})
		return
	}
	if err := g.rn.Propose(p.data); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) {
			// A leadership transfer in progress, or the uncommitted
			// log over its limit.
			p.finish(0, ErrProposalDropped)
			return
		}
		p.finish(0, err)
		return
	}
	g.proposed = append(g.proposed, p)
	n.mark(g)
}

// maxParallelPersist bounds the groups whose Ready a round persists at
// once: each persist is mostly a wait for fsync, which the disk overlaps
// (and the filesystem batches into one journal commit), so a round costs
// about one sync instead of one per group.
const maxParallelPersist = 8

// readied is one group's Ready in a round.
type readied struct {
	g      *group
	rd     raft.Ready
	placed []*proposal
	err    error
	// sent says the messages went before the persist (sendsEarly).
	sent bool
}

// sendsEarly reports whether r's messages may go out before its persist:
// a leader's, as etcd's server sends them, its MsgApp to the followers
// then overlapping its own write (raft's thesis, 10.2.1). A leader counts
// its own entries toward a commit only once its Ready is persisted (etcd
// raft acknowledges them at Advance), and its messages carry no vote nor
// acknowledgment of its own; a Ready that changes the term, or holds a
// snapshot, waits as any other.
func sendsEarly(r *readied) bool {
	if !raft.IsEmptySnap(r.rd.Snapshot) {
		return false
	}
	if hs := r.rd.HardState; hs != nil && !raft.IsEmptyHardState(hs) && hs.GetTerm() != r.g.term.Load() {
		return false
	}
	return r.g.rn.BasicStatus().RaftState == raft.StateLeader
}

// readyAll handles the Ready of each group in list, in etcd's order:
// persist the hard state, snapshot and entries; then queue the messages
// (sent by out.flush after every group's writes; a leader's go before its
// writes, see sendsEarly); then apply the committed entries; then Advance. The groups' persists run in parallel (bounded):
// they touch only their own Storage, and every one has returned before
// any message of the round is queued, so the durability contract holds
// for each group. A Storage or apply failure stops the group.
func (n *Node) readyAll(list []*group, out *roundOut) {
	rds := n.readies[:0]
	for _, g := range list {
		g.dirty = false
		if n.groups[g.id] != g || g.fetching || !g.rn.HasReady() {
			continue // removed since it was marked, frozen, or nothing to do
		}
		rd := g.rn.Ready()
		placed := n.indexProposals(g, rd.Entries)
		if op, ok := g.storage.(OwnProposals); ok && len(placed) > 0 {
			// indexProposals matched them to the Ready's last entries.
			op.Proposed(rd.Entries[len(rd.Entries)-len(placed):])
		}
		rds = append(rds, readied{g: g, rd: rd, placed: placed})
	}
	early := false
	for i := range rds {
		if r := &rds[i]; len(r.rd.Messages) > 0 && sendsEarly(r) {
			if st, ok := r.g.storage.(Stamper); ok && len(r.rd.Entries) > 0 {
				// Before the messages take the entries' Data (Storage).
				st.Stamp(r.rd.Entries)
			}
			for _, m := range r.rd.Messages {
				out.add(r.g, m)
			}
			r.sent, early = true, true
		}
	}
	if early {
		out.flush()
	}
	if len(rds) == 1 {
		rds[0].err = n.persist(rds[0].g, rds[0].rd)
	} else if len(rds) > 1 {
		var wg sync.WaitGroup
		sem := make(chan struct{}, maxParallelPersist)
		for i := range rds {
			wg.Add(1)
			sem <- struct{}{}
			go func(r *readied) {
				defer wg.Done()
				r.err = n.persist(r.g, r.rd)
				<-sem
			}(&rds[i])
		}
		wg.Wait()
	}
	for i := range rds {
		n.readied(&rds[i], out)
		rds[i] = readied{}
	}
	n.readies = rds[:0]
}

// readied finishes a group's Ready once it is persisted.
func (n *Node) readied(r *readied, out *roundOut) {
	g, rd := r.g, r.rd
	if r.err != nil {
		n.failGroup(g, fmt.Errorf("multiraft: group %d storage: %w", g.id, r.err))
		return
	}
	for _, p := range r.placed {
		p.place()
	}
	if rd.SoftState != nil {
		g.lead.Store(rd.SoftState.Lead)
		if rd.SoftState.Lead != n.cfg.ID {
			g.endReplWaits(&NotLeaderError{Group: g.id, Leader: rd.SoftState.Lead})
		}
	}
	if hs := rd.HardState; hs != nil && !raft.IsEmptyHardState(hs) {
		g.term.Store(hs.GetTerm())
	}
	if !r.sent {
		for _, m := range rd.Messages {
			out.add(g, m)
		}
	}
	if err := n.applyCommitted(g, rd.CommittedEntries); err != nil {
		n.failGroup(g, err)
		return
	}
	g.rn.Advance(rd)
	// Advance may leave more to do (committed entries held back by
	// MaxCommittedSizePerReady, a self-acknowledged append): next round.
	if g.rn.HasReady() {
		n.mark(g)
	}
}

// persist writes a Ready's hard state, snapshot and entries to g's
// Storage. It runs beside other groups' persists: it touches g.storage
// and g.voters (the snapshot's), which nothing else reads meanwhile.
func (n *Node) persist(g *group, rd raft.Ready) error {
	// The snapshot, then the entries, then the hard state: the three are
	// not one atomic write (etcd's WAL makes them one record), and a
	// hard state durable before the entries it counts would, after a
	// power loss between them, name a commit index past the log's end,
	// which etcd raft refuses at start ("state.commit is out of range";
	// found by TestPowerLossOneNode). Entries of a newer term durable
	// before the term is: the node restarts in the older term with a
	// log whose last term is newer, which only makes it refuse votes to
	// candidates behind that log. The snapshot comes first because
	// installing it replaces the log, and a Ready's entries follow it.
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := g.storage.ApplySnapshot(rd.Snapshot); err != nil {
			return err
		}
		g.setVoters(votersOf(rd.Snapshot.GetMetadata().GetConfState()))
	}
	if len(rd.Entries) > 0 {
		if err := g.storage.Append(rd.Entries); err != nil {
			return err
		}
	}
	if hs := rd.HardState; hs != nil && !raft.IsEmptyHardState(hs) {
		if err := g.storage.SetHardState(hs); err != nil {
			return err
		}
	}
	return nil
}

func votersOf(cs *pb.ConfState) map[uint64]struct{} {
	ids := map[uint64]struct{}{}
	for _, id := range cs.GetVoters() {
		ids[id] = struct{}{}
	}
	for _, id := range cs.GetVotersOutgoing() {
		ids[id] = struct{}{}
	}
	for _, id := range cs.GetLearners() {
		ids[id] = struct{}{}
	}
	return ids
}

// indexProposals gives this round's accepted proposals their index and
// term: the last len(g.proposed) of the Ready's entries, which a leader
// appended for them in order. It returns them, to be placed once the
// entries are persisted.
func (n *Node) indexProposals(g *group, ents []*pb.Entry) []*proposal {
	k := len(g.proposed)
	if k == 0 {
		return nil
	}
	if len(ents) < k {
		// Cannot happen while raft appends a leader's proposals at
		// once; fail rather than match them to the wrong entries.
		for _, p := range g.proposed {
			p.finish(0, ErrProposalDropped)
		}
		g.proposed = g.proposed[:0]
		return nil
	}
	tail := ents[len(ents)-k:]
	for i, p := range g.proposed {
		p.index, p.term = tail[i].GetIndex(), tail[i].GetTerm()
		p.data = nil
	}
	start := len(g.waiting)
	g.waiting = append(g.waiting, g.proposed...)
	g.proposed = g.proposed[:0]
	return g.waiting[start:]
}

// applyCommitted applies configuration changes to raft, hands the entries
// to the group's ApplyFunc, then settles the proposals they decide.
func (n *Node) applyCommitted(g *group, ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	for _, e := range ents {
		var cc pb.ConfChangeI
		switch e.GetType() {
		case pb.EntryType_EntryConfChange:
			c := new(pb.ConfChange)
			if err := proto.Unmarshal(e.GetData(), c); err != nil {
				return fmt.Errorf("multiraft: group %d entry %d: %w", g.id, e.GetIndex(), err)
			}
			cc = c
		case pb.EntryType_EntryConfChangeV2:
			c := new(pb.ConfChangeV2)
			if err := proto.Unmarshal(e.GetData(), c); err != nil {
				return fmt.Errorf("multiraft: group %d entry %d: %w", g.id, e.GetIndex(), err)
			}
			cc = c
		default:
			continue
		}
		g.setVoters(votersOf(g.rn.ApplyConfChange(cc)))
	}
	if g.apply != nil {
		if err := g.apply(ents); err != nil {
			return fmt.Errorf("multiraft: group %d apply: %w", g.id, err)
		}
	}
	settle(g, ents)
	return nil
}

// settle answers the waiting proposals these applied entries decide. A
// proposal whose index was applied succeeded if the entry there has its
// term, and was overwritten otherwise. One whose index lies beyond the last
// applied entry is lost too if that entry's term is newer than the
// proposal's: terms never decrease along a log, so its index can only ever
// hold an entry of that newer term. A new leader commits an entry of its
// term first, so every proposal of a deposed leader is decided once the
// new leader's first entry is applied here.
func settle(g *group, ents []*pb.Entry) {
	if len(g.waiting) == 0 {
		return
	}
	first, last := ents[0].GetIndex(), ents[len(ents)-1]
	keep := g.waiting[:0]
	for _, p := range g.waiting {
		switch {
		case p.index >= first && p.index <= last.GetIndex():
			if ents[p.index-first].GetTerm() == p.term {
				p.finish(p.index, nil)
			} else {
				p.finish(0, ErrProposalDropped)
			}
		case p.index < first:
			// Applied in an earlier round without being settled:
			// only possible if it was indexed wrongly. Never hang.
			p.finish(0, ErrProposalDropped)
		case p.term < last.GetTerm():
			p.finish(0, ErrProposalDropped)
		default:
			keep = append(keep, p)
		}
	}
	clear(g.waiting[len(keep):])
	g.waiting = keep
}
