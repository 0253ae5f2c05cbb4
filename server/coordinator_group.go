package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is a classic group's state, named as Kafka names them in
// DescribeGroups and ListGroups.
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s groupState) String() string { return stateNames[s] }

// group is one classic group's membership (Kafka's ClassicGroup). Every
// field is guarded by the coordinator's mutex. Membership is not
// persisted: after a restart members find themselves unknown and rejoin,
// while committed offsets survive in the store.
type group struct {
	c            *coordinator
	id           string
	state        groupState
	protocolType string
	protocol     string // chosen at the end of each join phase
	generation   int32
	leader       string

	members map[string]*member
	order   []string // member ids in join order: the first becomes leader
	// pending are member ids handed out with MEMBER_ID_REQUIRED whose
	// owners have not joined with them yet (KIP-394); each expires after
	// its session timeout.
	pending map[string]*pendingMember
	static  map[string]string // group.instance.id → member id

	// joinEpoch changes whenever a join phase begins or ends, so that a
	// timer of an earlier phase finds itself stale.
	joinEpoch      uint64
	joinTimer      timer
	initialDelay   bool // the join phase waits out group.initial.rebalance.delay.ms
	newMemberAdded bool // a member joined during the initial delay

	// pendingSync are the members of this generation that have not sent
	// SyncGroup yet; if some still have not when the rebalance timeout
	// passes, they are removed and the group rebalances again.
	pendingSync map[string]bool
	syncTimer   timer

	// persisted says the offsets topic holds a generation of this group
	// with members, which an empty group must tombstone.
	persisted bool
	// assigning says the leader's assignment of this generation is being
	// written: the group stays CompletingRebalance until it is durable,
	// and a repeated SyncGroup of the leader does not write it again.
	assigning bool
}

type member struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string

	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte

	// join is set while the member's JoinGroup waits for the join phase
	// to end; sync while its SyncGroup waits for the leader's assignment.
	// Both have room for the one answer, so answering never blocks.
	join chan *kmsg.JoinGroupResponse
	sync chan *kmsg.SyncGroupResponse

	deadline time.Time // the session ends here unless the member heartbeats
	hb       timer
}

type pendingMember struct{ t timer }

func (c *coordinator) newGroup(id string) *group {
	g := &group{
		c: c, id: id,
		members:     make(map[string]*member),
		pending:     make(map[string]*pendingMember),
		static:      make(map[string]string),
		pendingSync: make(map[string]bool),
	}
	c.groups[id] = g
	return g
}

// live reports whether g is still the coordinator's group of its name: a
// timer of a group that was deleted, or emptied and dropped, does nothing.
func (g *group) live() bool { return !g.c.closed && g.c.groups[g.id] == g }

// maybeDrop forgets an empty group with nobody joining: its committed
// offsets, if any, stay in the store, and ListGroups and DescribeGroups
// show it from there.
func (g *group) maybeDrop() {
	if g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0 {
		g.stopTimers()
		g.state = stateDead
		delete(g.c.groups, g.id)
		if g.protocolType != "" {
			g.c.emptied[g.id] = g.protocolType
		}
	}
}

func (g *group) stopTimers() {
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
}

// shutdown answers every waiting request with NOT_COORDINATOR and stops
// all timers (the coordinator is closing).
func (g *group) shutdown() {
	g.stopTimers()
	for _, p := range g.pending {
		p.t.Stop()
	}
	for _, m := range g.members {
		if m.hb != nil {
			m.hb.Stop()
		}
		g.answerWaiters(m, kerr.NotCoordinator.Code)
	}
	g.state = stateDead
}

func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func joinError(code int16, memberID string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode = code
	resp.Generation = -1
	resp.MemberID = memberID
	return resp
}

// joinGroup is Kafka's classic JoinGroup: it returns at once with an error
// or MEMBER_ID_REQUIRED, or waits until the join phase ends (every member
// rejoined, or the rebalance timeout passed) or ctx ends.
func (c *coordinator) joinGroup(ctx context.Context, r *kmsg.JoinGroupRequest) kmsg.Response {
	ch, resp := c.join(ctx, r)
	if resp != nil {
		return resp
	}
	select {
	case resp := <-ch:
		return resp
	case <-ctx.Done():
		// The join still counts, as in Kafka: the member stays in the
		// phase and its session timer decides whether it stays after.
		return joinError(kerr.NotCoordinator.Code, r.MemberID)
	}
}

func (c *coordinator) join(ctx context.Context, r *kmsg.JoinGroupRequest) (chan *kmsg.JoinGroupResponse, *kmsg.JoinGroupResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if code := c.refusedLocked(r.Group); code != 0 {
		return nil, joinError(code, r.MemberID)
	}
	if r.Group == "" {
		return nil, joinError(kerr.InvalidGroupID.Code, r.MemberID)
	}
	session := time.Duration(r.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return nil, joinError(kerr.InvalidSessionTimeout.Code, r.MemberID)
	}
	rebalance := session
	if r.Version >= 1 && r.RebalanceTimeoutMillis > 0 {
		rebalance = time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond
	}
	if r.ProtocolType == "" || len(r.Protocols) == 0 {
		return nil, joinError(kerr.InconsistentGroupProtocol.Code, r.MemberID)
	}
	g := c.groups[r.Group]
	if g == nil {
		if r.MemberID != "" {
			return nil, joinError(kerr.UnknownMemberID.Code, r.MemberID)
		}
		g = c.newGroup(r.Group)
	}
	if !g.supports(r.ProtocolType, r.Protocols) {
		defer g.maybeDrop()
		return nil, joinError(kerr.InconsistentGroupProtocol.Code, r.MemberID)
	}
	ci := clientInfoFrom(ctx)
	newMember := func(id string) *member {
		return &member{
			id: id, instanceID: r.InstanceID, clientID: ci.id, clientHost: ci.host,
			sessionTimeout: session, rebalanceTimeout: rebalance,
			protocolType: r.ProtocolType, protocols: r.Protocols,
		}
	}
	if r.MemberID == "" {
		id := newMemberID(ci.id)
		if r.InstanceID != nil {
			// A static member that restarts takes its old member's
			// place; this coordinator rebalances for it rather than
			// handing the old assignment back as Kafka can.
			if old, ok := g.static[*r.InstanceID]; ok {
				g.removeMember(g.members[old], kerr.FencedInstanceID.Code)
			}
			return g.addMember(newMember(id)), nil
		}
		if r.Version >= 4 {
			g.addPending(id, session)
			return nil, joinError(kerr.MemberIDRequired.Code, id)
		}
		return g.addMember(newMember(id)), nil
	}
	if p, ok := g.pending[r.MemberID]; ok {
		p.t.Stop()
		delete(g.pending, r.MemberID)
		return g.addMember(newMember(r.MemberID)), nil
	}
	if code := g.checkInstance(r.MemberID, r.InstanceID); code != 0 {
		return nil, joinError(code, r.MemberID)
	}
	m := g.members[r.MemberID]
	if m == nil {
		return nil, joinError(kerr.UnknownMemberID.Code, r.MemberID)
	}
	switch g.state {
	case statePreparingRebalance:
		return g.updateMember(m, r, session, rebalance), nil
	case stateCompletingRebalance:
		if m.sameProtocols(r.Protocols) {
			// The member missed the join answer; send it again.
			return nil, g.joinResponse(m)
		}
		return g.updateMember(m, r, session, rebalance), nil
	case stateStable:
		if m.id == g.leader || !m.sameProtocols(r.Protocols) {
			return g.updateMember(m, r, session, rebalance), nil
		}
		// A follower rejoining with nothing changed gets the current
		// generation without a rebalance.
		return nil, g.joinResponse(m)
	default:
		return nil, joinError(kerr.UnknownMemberID.Code, r.MemberID)
	}
}

// supports is Kafka's supportsProtocols: an empty group takes any member;
// otherwise the protocol type must match and the member must speak a
// protocol every current member speaks.
func (g *group) supports(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.allSupport(p.Name) {
			return true
		}
	}
	return false
}

func (g *group) allSupport(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

func (m *member) sameProtocols(ps []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// memberAt finds the member a request names at the request's
// generation, or gives the error code Kafka answers: a fenced static
// instance, an unknown member, or a stale generation.
func (g *group) memberAt(memberID string, instanceID *string, generation int32) (*member, int16) {
	if code := g.checkInstance(memberID, instanceID); code != 0 {
		return nil, code
	}
	m := g.members[memberID]
	if m == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return nil, kerr.IllegalGeneration.Code
	}
	return m, 0
}

// checkInstance fences a static member whose instance id now belongs to
// another member id.
func (g *group) checkInstance(memberID string, instanceID *string) int16 {
	if instanceID == nil {
		return 0
	}
	if id, ok := g.static[*instanceID]; ok && id != memberID {
		return kerr.FencedInstanceID.Code
	}
	return 0
}

func (g *group) addPending(id string, session time.Duration) {
	p := &pendingMember{}
	p.t = g.c.cfg.clock.AfterFunc(session, func() {
		g.c.mu.Lock()
		defer g.c.mu.Unlock()
		if !g.live() || g.pending[id] != p {
			return
		}
		delete(g.pending, id)
		g.tryCompleteJoin()
		g.maybeDrop()
	})
	g.pending[id] = p
}

// addMember puts a new member in the group waiting for the join phase,
// starting one if the group is not already in one.
func (g *group) addMember(m *member) chan *kmsg.JoinGroupResponse {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	m.join = ch
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.heartbeat(m)
	if g.state == statePreparingRebalance && g.initialDelay {
		g.newMemberAdded = true
	}
	g.rebalanceOrComplete() // may answer ch and clear m.join
	return ch
}

func (g *group) updateMember(m *member, r *kmsg.JoinGroupRequest, session, rebalance time.Duration) chan *kmsg.JoinGroupResponse {
	m.protocols = r.Protocols
	m.sessionTimeout, m.rebalanceTimeout = session, rebalance
	if m.join != nil {
		// A second JoinGroup from the same member (it reconnected):
		// the first one's connection is gone, answer it and drop it.
		m.join <- joinError(kerr.RebalanceInProgress.Code, m.id)
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	m.join = ch
	g.rebalanceOrComplete() // may answer ch and clear m.join
	return ch
}

// rebalanceOrComplete starts a join phase, or, when one is under way,
// ends it if everybody is in.
func (g *group) rebalanceOrComplete() {
	if g.state == statePreparingRebalance {
		g.tryCompleteJoin()
	} else {
		g.prepareRebalance()
	}
}

// prepareRebalance begins a join phase (Kafka's prepareRebalance): a
// pending SyncGroup is answered REBALANCE_IN_PROGRESS, and the phase ends
// when every member has rejoined or the longest rebalance timeout passes.
// An empty group's first phase instead waits out the initial rebalance
// delay, extended while members keep arriving, up to the rebalance
// timeout.
func (g *group) prepareRebalance() {
	if g.state == stateCompletingRebalance {
		g.failSync(kerr.RebalanceInProgress.Code)
	}
	g.stopTimers()
	clear(g.pendingSync)
	wasEmpty := g.state == stateEmpty
	g.state = statePreparingRebalance
	g.joinEpoch++
	epoch := g.joinEpoch
	timeout := g.rebalanceTimeout()
	if wasEmpty && g.c.cfg.InitialRebalanceDelay > 0 {
		g.initialDelay, g.newMemberAdded = true, false
		delay := g.c.cfg.InitialRebalanceDelay
		g.scheduleInitialJoin(epoch, delay, max(timeout-delay, 0))
		return
	}
	g.initialDelay = false
	g.joinTimer = g.c.cfg.clock.AfterFunc(timeout, func() {
		g.c.mu.Lock()
		defer g.c.mu.Unlock()
		if g.live() && g.joinEpoch == epoch && g.state == statePreparingRebalance {
			g.completeJoin()
		}
	})
	g.tryCompleteJoin()
}

// scheduleInitialJoin is Kafka's InitialDelayedJoin: when the delay ends
// and members arrived meanwhile, wait another delay (at most what is left
// of the rebalance timeout); otherwise end the join phase.
func (g *group) scheduleInitialJoin(epoch uint64, delay, remaining time.Duration) {
	g.joinTimer = g.c.cfg.clock.AfterFunc(delay, func() {
		g.c.mu.Lock()
		defer g.c.mu.Unlock()
		if !g.live() || g.joinEpoch != epoch || g.state != statePreparingRebalance {
			return
		}
		if g.newMemberAdded && remaining > 0 {
			g.newMemberAdded = false
			d := min(g.c.cfg.InitialRebalanceDelay, remaining)
			g.scheduleInitialJoin(epoch, d, remaining-d)
			return
		}
		g.completeJoin()
	})
}

func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// tryCompleteJoin ends the join phase once every member has rejoined and
// no member id handed out is still unused, unless the initial delay runs.
func (g *group) tryCompleteJoin() {
	if g.state != statePreparingRebalance || g.initialDelay || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	g.completeJoin()
}

// completeJoin is Kafka's onCompleteJoin: members that did not rejoin are
// removed, the generation advances, a protocol is chosen, and every
// waiting member gets its answer (the leader with the member list). The
// members then have a rebalance timeout to send SyncGroup.
func (g *group) completeJoin() {
	g.stopTimers()
	g.initialDelay, g.assigning = false, false
	g.joinEpoch++
	for _, id := range slices.Clone(g.order) {
		if m := g.members[id]; m.join == nil {
			g.removeMember(m, kerr.UnknownMemberID.Code)
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.state = stateEmpty
		g.protocol = ""
		// Should the Empty record not be written, a restart loads
		// members that are gone; their sessions expire and the group
		// empties.
		g.persist(nil)
		g.maybeDrop()
		return
	}
	g.protocol = g.selectProtocol()
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.order[0]
	}
	g.state = stateCompletingRebalance
	for _, id := range g.order {
		m := g.members[id]
		m.join <- g.joinResponse(m)
		m.join = nil
		g.pendingSync[id] = true
		g.heartbeat(m)
	}
	gen := g.generation
	g.syncTimer = g.c.cfg.clock.AfterFunc(g.rebalanceTimeout(), func() {
		g.c.mu.Lock()
		defer g.c.mu.Unlock()
		if g.live() && g.generation == gen && (g.state == stateCompletingRebalance || g.state == stateStable) {
			g.expirePendingSync()
		}
	})
}

// expirePendingSync removes the members that never sent SyncGroup in
// this generation and rebalances without them.
func (g *group) expirePendingSync() {
	if len(g.pendingSync) == 0 {
		return
	}
	for _, id := range slices.Clone(g.order) {
		if g.pendingSync[id] {
			g.removeMember(g.members[id], kerr.UnknownMemberID.Code)
		}
	}
	g.prepareRebalance()
}

// selectProtocol is Kafka's: of the protocols every member speaks, the one
// most members list first among them; ties go to the leader's preference.
func (g *group) selectProtocol() string {
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.allSupport(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	leader := g.members[g.leader]
	if leader == nil {
		leader = g.members[g.order[0]]
	}
	best, n := "", -1
	for _, p := range leader.protocols {
		if v, ok := votes[p.Name]; ok && v > n {
			best, n = p.Name, v
		}
	}
	return best
}

func (g *group) joinResponse(m *member) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	if m.id == g.leader {
		for _, id := range g.order {
			o := g.members[id]
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.InstanceID = o.id, o.instanceID
			jm.ProtocolMetadata = o.metadata(g.protocol)
			resp.Members = append(resp.Members, jm)
		}
	}
	return resp
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// removeMember takes a member out of the group (it left, its session
// expired, or it did not rejoin in time); a request of its still waiting
// gets code. It does not start a rebalance: callers decide.
func (g *group) removeMember(m *member, code int16) {
	if m == nil {
		return
	}
	if m.hb != nil {
		m.hb.Stop()
		m.hb = nil
	}
	g.answerWaiters(m, code)
	delete(g.members, m.id)
	g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == m.id })
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// failSync takes back every member's assignment and answers the members
// waiting in SyncGroup with code: the generation will not be handed out.
func (g *group) failSync(code int16) {
	for _, m := range g.members {
		m.assignment = nil
		if m.sync != nil {
			m.sync <- syncError(code)
			m.sync = nil
		}
	}
}

func (g *group) answerWaiters(m *member, code int16) {
	if m.join != nil {
		m.join <- joinError(code, m.id)
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- syncError(code)
		m.sync = nil
	}
}

// memberGone removes a member that left or expired and moves the group
// on: a settled group rebalances, a join phase may now be complete.
func (g *group) memberGone(m *member, code int16) {
	g.removeMember(m, code)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalance()
	case statePreparingRebalance:
		g.tryCompleteJoin()
	}
}

// heartbeat pushes the member's session deadline a session timeout ahead.
// One timer per member checks the deadline when it fires and re-arms
// itself for what remains, so a heartbeat costs no timer operation.
func (g *group) heartbeat(m *member) {
	now := g.c.cfg.clock.Now()
	m.deadline = now.Add(m.sessionTimeout)
	if m.hb == nil {
		g.armSession(m, m.sessionTimeout)
	}
}

func (g *group) armSession(m *member, d time.Duration) {
	m.hb = g.c.cfg.clock.AfterFunc(d, func() {
		g.c.mu.Lock()
		defer g.c.mu.Unlock()
		if !g.live() || g.members[m.id] != m {
			return
		}
		now := g.c.cfg.clock.Now()
		if m.join != nil || m.sync != nil {
			// A member waiting on the coordinator is alive, as in
			// Kafka's shouldKeepAlive.
			m.deadline = now.Add(m.sessionTimeout)
		}
		if now.Before(m.deadline) {
			g.armSession(m, m.deadline.Sub(now))
			return
		}
		m.hb = nil
		g.memberGone(m, kerr.UnknownMemberID.Code)
		g.maybeDrop()
	})
}
