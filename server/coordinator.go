package server

import (
	"context"
	"sync"
	"time"

	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinatorConfig is what the group coordinator needs to know about the
// node it runs on, and the group settings Kafka's broker takes as configs.
// Zero values mean Kafka's defaults, so a literal with only the first three
// fields is a complete configuration.
type coordinatorConfig struct {
	// NodeID, Host and Port are what FindCoordinator answers: this node,
	// as advertised to clients.
	NodeID int32
	Host   string
	Port   int32

	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long
	// the first rebalance of an empty group waits for more members to
	// join (default 3 s). Negative means no delay.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout are
	// group.min.session.timeout.ms and group.max.session.timeout.ms
	// (defaults 6 s and 30 min): a JoinGroup outside them gets
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration

	// clock is the coordinator's time source; tests pass a fake one.
	clock clock
}

// Kafka's defaults for the group configs above.
const (
	defaultInitialRebalanceDelay = 3 * time.Second
	defaultMinSessionTimeout     = 6 * time.Second
	defaultMaxSessionTimeout     = 30 * time.Minute
	// maxOffsetMetadata is offset.metadata.max.bytes.
	maxOffsetMetadata = 4096
)

// coordinator is a single node's classic group coordinator: membership,
// generations and rebalances live in memory, committed offsets in the
// store's __consumer_offsets topic. One mutex guards every group; the
// store's fsyncs happen outside it.
type coordinator struct {
	st  *store.Store
	cfg coordinatorConfig
	// gs keeps the offsets and memberships: the store's offsets topic
	// on a single node, the replicated partitions this node leads in a
	// cluster (cl set, coordinator_cluster.go).
	gs groupStore
	cl *clusterGroups

	mu     sync.Mutex
	groups map[string]*group
	// emptied is the protocol type of each group dropped when its last
	// member left: ListGroups and DescribeGroups show such a group, known
	// from its offsets, as Kafka shows an Empty group that had members
	// (protocol type "consumer"), not as one that only ever committed
	// (protocol type ""), which sarama's ListConsumerGroups tells apart.
	// The group's Empty GroupMetadata record brings it back at a restart
	// (loadGroups).
	emptied map[string]string
	closed  bool

	// writes is, per group id, the end of the group's last membership
	// write still queued or under way (queueWrite): each write waits
	// for the one before, so a group's records reach the log in the
	// order the coordinator made them, across a group dropped and made
	// again. writing counts the writers, which close waits for.
	writes  map[string]chan struct{}
	writing sync.WaitGroup
}

func newCoordinator(st *store.Store, cfg coordinatorConfig) *coordinator {
	cfg.withDefaults()
	c := &coordinator{st: st, cfg: cfg, gs: localGroups{st}, groups: make(map[string]*group), emptied: make(map[string]string),
		writes: make(map[string]chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadGroups()
	return c
}

// withDefaults fills the zero fields with Kafka's defaults.
func (cfg *coordinatorConfig) withDefaults() {
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = defaultInitialRebalanceDelay
	} else if cfg.InitialRebalanceDelay < 0 {
		cfg.InitialRebalanceDelay = 0
	}
	if cfg.MinSessionTimeout <= 0 {
		cfg.MinSessionTimeout = defaultMinSessionTimeout
	}
	if cfg.MaxSessionTimeout <= 0 {
		cfg.MaxSessionTimeout = defaultMaxSessionTimeout
	}
	if cfg.clock == nil {
		cfg.clock = realClock{}
	}
}

func msDuration(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// coordinatorKeys are the API keys handle answers, with the versions it
// speaks. Every range starts at 0 because librdkafka turns its balanced
// consumer on only when each of them overlaps version 0 or 1. The upper
// bounds stop before topic IDs replace names (OffsetCommit and OffsetFetch
// v10) and before KIP-1043's GROUP_ID_NOT_FOUND in DescribeGroups v6.
var coordinatorKeys = []kmsg.ApiVersionsResponseApiKey{
	{ApiKey: 8, MinVersion: 0, MaxVersion: 9},  // OffsetCommit
	{ApiKey: 9, MinVersion: 0, MaxVersion: 9},  // OffsetFetch
	{ApiKey: 10, MinVersion: 0, MaxVersion: 4}, // FindCoordinator
	{ApiKey: 11, MinVersion: 0, MaxVersion: 9}, // JoinGroup
	{ApiKey: 12, MinVersion: 0, MaxVersion: 4}, // Heartbeat
	{ApiKey: 13, MinVersion: 0, MaxVersion: 5}, // LeaveGroup
	{ApiKey: 14, MinVersion: 0, MaxVersion: 5}, // SyncGroup
	{ApiKey: 15, MinVersion: 0, MaxVersion: 5}, // DescribeGroups
	{ApiKey: 16, MinVersion: 0, MaxVersion: 5}, // ListGroups
	{ApiKey: 42, MinVersion: 0, MaxVersion: 2}, // DeleteGroups
	{ApiKey: 47, MinVersion: 0, MaxVersion: 0}, // OffsetDelete
}

func (c *coordinator) apiKeys() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, len(coordinatorKeys))
	copy(out, coordinatorKeys)
	return out
}

// handle answers one group request. A version outside coordinatorKeys is
// not ours to answer (ok false): the server refuses it as it refuses any
// unsupported version.
func (c *coordinator) handle(ctx context.Context, req kmsg.Request) (kmsg.Response, bool) {
	if !c.speaks(req.Key(), req.GetVersion()) {
		return nil, false
	}
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		resp = c.findCoordinator(r)
	case *kmsg.JoinGroupRequest:
		resp = c.joinGroup(ctx, r)
	case *kmsg.SyncGroupRequest:
		resp = c.syncGroup(ctx, r)
	case *kmsg.HeartbeatRequest:
		resp = c.heartbeat(r)
	case *kmsg.LeaveGroupRequest:
		resp = c.leaveGroup(r)
	case *kmsg.OffsetCommitRequest:
		resp = c.offsetCommit(r)
	case *kmsg.OffsetFetchRequest:
		resp = c.offsetFetch(r)
	case *kmsg.ListGroupsRequest:
		resp = c.listGroups(r)
	case *kmsg.DescribeGroupsRequest:
		resp = c.describeGroups(r)
	case *kmsg.DeleteGroupsRequest:
		resp = c.deleteGroups(r)
	case *kmsg.OffsetDeleteRequest:
		resp = c.offsetDelete(r)
	default:
		return nil, false
	}
	resp.SetVersion(req.GetVersion())
	return resp, true
}

func (c *coordinator) speaks(key, version int16) bool {
	for _, k := range coordinatorKeys {
		if k.ApiKey == key {
			return version >= k.MinVersion && version <= k.MaxVersion
		}
	}
	return false
}

// close wakes every JoinGroup and SyncGroup still waiting (with
// NOT_COORDINATOR, so clients look for the coordinator again), stops
// the timers, and waits for the membership writes under way (a cluster's
// fail at once: stop cancels them). Requests after close get
// NOT_COORDINATOR too.
func (c *coordinator) close() {
	if c.cl != nil {
		c.cl.stop() // its loads take c.mu: stopped before it is held
	}
	c.mu.Lock()
	c.closed = true
	for _, g := range c.groups {
		g.shutdown()
	}
	c.groups = map[string]*group{}
	c.mu.Unlock()
	// The writers finish with c.mu held: waited for without it. None
	// starts once closed is set (queueWrite).
	c.writing.Wait()
}

// findCoordinator answers every group with this node, or in a cluster
// with the leader of the group's offsets partition. A transactional id
// is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the error Kafka
// gives a client that may not use transactions, because seglog has no
// transaction coordinator: a retriable error would make the client retry
// forever.
func (c *coordinator) findCoordinator(r *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	answer := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key = key
		switch {
		case c.isClosed():
			co.NodeID, co.Port = -1, -1
			co.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case r.CoordinatorType == 0 && c.cl != nil:
			c.cl.findCoordinator(key, &co)
		case r.CoordinatorType == 0:
			co.NodeID, co.Host, co.Port = c.cfg.NodeID, c.cfg.Host, c.cfg.Port
		case r.CoordinatorType == 1:
			co.NodeID, co.Port = -1, -1
			co.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			co.ErrorMessage = kmsg.StringPtr("seglog does not support transactions")
		default:
			co.NodeID, co.Port = -1, -1
			co.ErrorCode = kerr.InvalidRequest.Code
			co.ErrorMessage = kmsg.StringPtr("unknown coordinator type")
		}
		return co
	}
	if r.Version >= 4 {
		for _, k := range r.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, answer(k))
		}
		return resp
	}
	co := answer(r.CoordinatorKey)
	resp.ErrorCode, resp.ErrorMessage = co.ErrorCode, co.ErrorMessage
	resp.NodeID, resp.Host, resp.Port = co.NodeID, co.Host, co.Port
	return resp
}

// refusedLocked is the error code every request for group gets from this
// coordinator (c.mu held), or 0 when it serves the group:
// NOT_COORDINATOR once closed, and in a cluster on a node that does not
// lead the group's offsets partition (COORDINATOR_LOAD_IN_PROGRESS while
// it loads the partition it leads).
func (c *coordinator) refusedLocked(group string) int16 {
	if c.closed {
		return kerr.NotCoordinator.Code
	}
	return c.gs.owner(group)
}

// refused is refusedLocked for a caller not holding c.mu.
func (c *coordinator) refused(group string) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refusedLocked(group)
}

func (c *coordinator) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// clientInfoKey carries the request header's client id and the peer's
// address to the coordinator, which shows them in DescribeGroups and
// builds member ids from the client id as Kafka does.
type clientInfoKey struct{}

type clientInfo struct{ id, host string }

// withClientInfo returns ctx carrying the request's client id and the
// client's host for handle.
func withClientInfo(ctx context.Context, clientID, host string) context.Context {
	return context.WithValue(ctx, clientInfoKey{}, clientInfo{clientID, host})
}

func clientInfoFrom(ctx context.Context) clientInfo {
	ci, _ := ctx.Value(clientInfoKey{}).(clientInfo)
	return ci
}
