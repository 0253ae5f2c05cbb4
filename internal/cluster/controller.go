package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/layout"
)

// handle runs one request on this node as the controller; a node that is
// not (any more) answers the not-controller code, and the sender retries.
func (n *Node) handle(ctx context.Context, req request) response {
	if !n.meta.IsController() {
		return errResponse(&meta.NotControllerError{Leader: n.meta.Controller()})
	}
	switch req.Op {
	case opRegister:
		res, err := n.register(ctx, req)
		if err != nil {
			return errResponse(err)
		}
		// A registration is a heartbeat: the broker is live from now,
		// and a new process, not stopping.
		n.seen(req.Broker)
		n.mu.Lock()
		n.noteStopping(req.Broker, false)
		n.mu.Unlock()
		return response{Index: res.Index, Epoch: res.Epoch}
	case opHeartbeat:
		st := n.meta.State()
		b, ok := st.Broker(req.Broker)
		known := ok && b.Epoch == req.Epoch
		if known {
			n.seen(req.Broker)
		}
		live := n.liveSet(st)
		resp := response{Index: st.Index(), Known: known}
		for id := range live {
			resp.Live = append(resp.Live, id)
		}
		slices.Sort(resp.Live)
		n.mu.Lock()
		if known {
			n.noteLeaders(req.Broker, req.Leaders)
			n.noteStopping(req.Broker, req.Stopping)
		}
		resp.Leaders = leaderList(n.mergedLeaders(live))
		resp.Stopping = n.stoppingList(live)
		n.mu.Unlock()
		return resp
	case opCreate:
		return n.createTopic(ctx, req)
	case opDelete:
		res, err := n.meta.Propose(ctx, &meta.DeleteTopic{Name: req.Topic})
		if err != nil {
			return errResponse(err)
		}
		return response{Index: res.Index}
	case opGrow:
		return n.createPartitions(ctx, req)
	case opAlter:
		st, err := n.meta.ControllerState(ctx)
		if err != nil {
			return errResponse(err)
		}
		c, err := meta.NewAlterTopicConfig(st, req.Topic, true, req.Configs, nil)
		if err != nil {
			return errResponse(err)
		}
		res, err := n.meta.Propose(ctx, c)
		if err != nil {
			return errResponse(err)
		}
		return response{Index: res.Index}
	case opSetCredentials, opDeleteCredential:
		return n.handleCredential(ctx, req)
	case opAlterQuotas:
		return n.alterQuotas(ctx, req)
	case opPIDs:
		res, err := n.meta.Propose(ctx, &meta.AllocateProducerIDs{Broker: req.Broker})
		if err != nil {
			return errResponse(err)
		}
		return response{Index: res.Index, First: res.Block.First, Size: res.Block.Size}
	}
	if resp, ok := n.handleACLs(ctx, req); ok {
		return resp
	}
	return response{Code: "error", Message: fmt.Sprintf("unknown operation %q", req.Op)}
}

// register checks the registering DIR's directory id against the one
// the broker registered from before, refusing another before anything
// is proposed; proposes the registration; and records the directory id
// if none is yet (SetBrokerDirectory, once per broker).
func (n *Node) register(ctx context.Context, req request) (meta.Result, error) {
	st, err := n.meta.ControllerState(ctx)
	if err != nil {
		return meta.Result{}, err
	}
	if err := st.CheckDirectory(req.Broker, req.DirectoryID); err != nil {
		return meta.Result{}, err
	}
	if err := n.checkRegistrant(req); err != nil {
		return meta.Result{}, err
	}
	res, err := n.meta.Propose(ctx, &meta.RegisterBroker{ID: req.Broker, Host: req.Host, Port: req.Port, RaftAddr: req.RaftAddr})
	if err != nil || req.DirectoryID == "" {
		return res, err
	}
	if b, _ := st.Broker(req.Broker); b.DirectoryID == "" {
		// A registration that raced with another from another directory
		// is refused here; the broker's addresses and epoch are then the
		// refused node's until the other registers again.
		if _, err := n.meta.Propose(ctx, &meta.SetBrokerDirectory{Broker: req.Broker, DirectoryID: req.DirectoryID}); err != nil {
			return meta.Result{}, err
		}
	}
	return res, nil
}

// createTopic plans a topic over the live brokers and proposes it.
func (n *Node) createTopic(ctx context.Context, req request) response {
	st, err := n.meta.ControllerState(ctx)
	if err != nil {
		return errResponse(err)
	}
	if t, ok := st.Topic(req.Topic); ok && req.TopicID != ([16]byte{}) && t.ID == req.TopicID {
		// A retry of a create that succeeded: its answer was lost.
		return response{Index: st.Index()}
	}
	rf := int(req.ReplicationFactor)
	if rf == -1 {
		rf = n.cfg.DefaultReplicationFactor
	}
	parts := int(req.Partitions)
	if parts == -1 {
		parts = 1 // Kafka's num.partitions default
	}
	live := n.liveRegistered(st)
	if rf < 1 || rf > len(live) {
		return errResponse(fmt.Errorf("%w: %d with %d live brokers", ErrInvalidReplicationFactor, rf, len(live)))
	}
	n.mu.Lock()
	c, err := meta.NewCreateTopic(st, req.Topic, parts, rf, req.Configs, live, n.rnd)
	n.mu.Unlock()
	if err != nil {
		return errResponse(err)
	}
	if req.TopicID != ([16]byte{}) {
		c.ID = req.TopicID // Apply refuses an id already in use
	}
	res, err := n.meta.Propose(ctx, c)
	if err != nil {
		return errResponse(err)
	}
	return response{Index: res.Index}
}

// liveRegistered lists the live registered brokers, by id: those new
// replicas are assigned over. It takes mu.
func (n *Node) liveRegistered(st *meta.State) []int32 {
	var live []int32
	for id, ok := range n.liveSet(st) {
		if _, reg := st.Broker(id); ok && reg {
			live = append(live, id)
		}
	}
	slices.Sort(live)
	return live
}

// createPartitions plans a topic's new partitions over the live brokers
// and proposes them.
func (n *Node) createPartitions(ctx context.Context, req request) response {
	st, err := n.meta.ControllerState(ctx)
	if err != nil {
		return errResponse(err)
	}
	live := n.liveRegistered(st) // takes mu itself
	n.mu.Lock()
	c, err := meta.NewCreatePartitions(st, req.Topic, int(req.Partitions), live, n.rnd)
	n.mu.Unlock()
	if err != nil {
		return errResponse(err)
	}
	res, err := n.meta.Propose(ctx, c)
	if err != nil {
		return errResponse(err)
	}
	return response{Index: res.Index}
}

// seen records a heartbeat from broker id on the controller.
func (n *Node) seen(id int32) {
	n.mu.Lock()
	n.lastSeen[id] = time.Now()
	n.mu.Unlock()
}

// heartbeatLoop registers this node (at every start, so the broker epoch
// grows with each restart and the advertised address is current), then
// heartbeats to the controller every HeartbeatInterval, registering
// again if the controller no longer knows the registration. On the
// controller it also names the cluster if no one has.
func (n *Node) heartbeatLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.HeartbeatInterval)
	defer t.Stop()
	ready := n.ready // nil once the cluster id is known
	for {
		n.beat()
		select {
		case <-n.ctx.Done():
			return
		case <-n.failed:
			return
		case <-ready:
			ready = nil // registers now rather than at the next tick
		case <-t.C:
		}
	}
}

// beat is one round of heartbeatLoop.
func (n *Node) beat() {
	ctx, cancel := context.WithTimeout(n.ctx, max(2*n.cfg.HeartbeatInterval, time.Second))
	defer cancel()
	ctrl := n.meta.IsController()
	n.mu.Lock()
	n.noteController(ctrl, time.Now())
	epoch := n.epoch
	n.mu.Unlock()
	if ctrl {
		n.nameCluster(ctx)
	}
	if epoch == 0 {
		select {
		case <-n.ready:
		default:
			// Not before the cluster id is checked: a DIR of another
			// cluster is refused as that (ErrClusterID), not registered.
			return
		}
		if n.Err() != nil || !n.checkController() {
			return
		}
		resp, err := n.forward(ctx, n.registerRequest())
		if errors.Is(err, meta.ErrDirectoryID) {
			n.fail(fmt.Errorf("%w: %w; %s", ErrDirectoryID, err, directoryAdvice))
			return
		}
		if errors.Is(err, ErrVotersDiffer) {
			n.fail(fmt.Errorf("%w; %s; %s", err, n.votersAdvice(), adviceAfterJoin))
			return
		}
		if err != nil {
			n.log.Debug("cluster: registration not done yet", "err", err)
			return
		}
		n.mu.Lock()
		n.epoch = resp.Epoch
		select {
		case <-n.registered:
		default:
			close(n.registered)
		}
		n.mu.Unlock()
		n.log.Info("cluster: registered", "epoch", resp.Epoch)
		return
	}
	n.mu.Lock()
	led := n.led
	n.mu.Unlock()
	stopping := n.stopping.Load()
	if ctrl {
		n.seen(n.cfg.NodeID)
		n.mu.Lock()
		n.noteLeaders(n.cfg.NodeID, led)
		n.noteStopping(n.cfg.NodeID, stopping)
		n.mu.Unlock()
		return
	}
	resp, err := n.forward(ctx, request{Op: opHeartbeat, Broker: n.cfg.NodeID, Epoch: epoch, Leaders: led, Stopping: stopping})
	if err != nil {
		return
	}
	n.mu.Lock()
	now := time.Now()
	n.liveView, n.liveIndex, n.liveAt = resp.Live, resp.Index, now
	n.stoppingView = resp.Stopping
	changed := n.setLeaderView(resp.Leaders, now)
	if !resp.Known && n.epoch == epoch {
		n.epoch = 0 // registered again at the next beat
	}
	n.mu.Unlock()
	if changed {
		n.kickRecord()
	}
}

// registerRequest is this node's registration. It is a first start's
// (voters.go) only until one is accepted: one made again after a
// failover, on a node that has served, is not refused for a voter's
// address that a move changed meanwhile.
func (n *Node) registerRequest() request {
	return request{Op: opRegister, Broker: n.cfg.NodeID, Host: n.host, Port: n.port, RaftAddr: n.raftAddr,
		DirectoryID: n.dirID, Voters: n.cfg.Voters, FirstStart: n.blank.Load() && !n.registeredBefore()}
}

// nameCluster proposes the cluster id if the metadata has none: this
// node's recorded one if DIR has it, else a new random one (22
// characters of URL-safe base64, as Kafka's Uuid.randomUuid gives).
func (n *Node) nameCluster(ctx context.Context) {
	if n.meta.State().ClusterID() != "" {
		return
	}
	n.mu.Lock()
	id := n.props.clusterID
	n.mu.Unlock()
	if id == "" {
		id = layout.NewID()
	}
	if _, err := n.meta.Propose(ctx, &meta.SetClusterID{ID: id}); err != nil {
		n.log.Debug("cluster: naming the cluster", "err", err)
	}
}
