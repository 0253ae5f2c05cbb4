package cluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/internal/cluster/reach"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/server/acl"
	"github.com/seglog/seglog/store"
)

// The forwarding protocol: a node that is not the controller sends its
// commands to the controller on raftmux group forwardGroup. Each frame is
// a 4-byte big-endian length and that many bytes of JSON, at most
// maxFrame; a connection carries requests and their responses in turn.
// JSON because the traffic is a few small control messages a second and
// a bounded frame keeps its decoding bounded; the metadata log's own
// commands keep their binary encoding (meta.Encode).
const maxFrame = 1 << 20

// Operations of a request.
const (
	opRegister  = "register"
	opHeartbeat = "heartbeat"
	opCreate    = "create-topic"
	opDelete    = "delete-topic"
	opPIDs      = "allocate-producer-ids"
	opGrow      = "create-partitions"
	opAlter     = "alter-topic-config"
)

// request is one forwarded command.
type request struct {
	Op     string `json:"op"`
	Broker int32  `json:"broker"`
	// Register: the advertised listener and raft address. Heartbeat:
	// the epoch the broker registered with.
	Host     string `json:"host,omitempty"`
	Port     int32  `json:"port,omitempty"`
	RaftAddr string `json:"raft_addr,omitempty"`
	Epoch    uint64 `json:"epoch,omitempty"`
	// DirectoryID is Register's: DIR's directory.id.
	DirectoryID string `json:"directory_id,omitempty"`
	// Voters are, on Register and whois, the voters the sender was
	// started with (Config.Voters), and FirstStart, on Register, whether
	// its DIR held no metadata at this start and it was not registered
	// since (voters.go). Builds before
	// the check send neither, and ignore them: JSON's unknown fields are.
	Voters     map[int32]string `json:"voters,omitempty"`
	FirstStart bool             `json:"first_start,omitempty"`
	// CreateTopic and DeleteTopic.
	Topic             string            `json:"topic,omitempty"`
	Partitions        int32             `json:"partitions,omitempty"`
	ReplicationFactor int16             `json:"replication_factor,omitempty"`
	Configs           map[string]string `json:"configs,omitempty"`
	// TopicID is CreateTopic's topic id, chosen by the requesting node so
	// that a retry of a create whose answer was lost finds its own topic
	// and succeeds, rather than answering that the topic exists.
	TopicID [16]byte `json:"topic_id,omitzero"`
	// AlterTopicConfig: Configs replaces the topic's overrides.
	// CreatePartitions: Partitions is the new total.
	// TimeoutMs is what is left of the sender's deadline.
	TimeoutMs int64 `json:"timeout_ms"`
	// Leaders are, on a heartbeat, the partitions the broker leads
	// (leaders.go), and Stopping whether it is stopping (stopping.go).
	Leaders  []leaderReport `json:"leaders,omitempty"`
	Stopping bool           `json:"stopping,omitempty"`
	// ACLs are CreateACLs' entries, ACLFilters DeleteACLs' (acls.go).
	ACLs       []acl.ACL    `json:"acls,omitempty"`
	ACLFilters []acl.Filter `json:"acl_filters,omitempty"`
	// Credentials, Bootstrap: a SetCredential; User, Mechanism: a
	// DeleteCredential (credentials.go).
	Credentials []meta.Credential `json:"credentials,omitempty"`
	Bootstrap   bool              `json:"bootstrap,omitempty"`
	User        string            `json:"user,omitempty"`
	Mechanism   string            `json:"mechanism,omitempty"`
	// QuotaChanges are AlterClientQuotas' changes (quotas.go).
	QuotaChanges []meta.QuotaChange `json:"quota_changes,omitempty"`
}

// response is the controller's answer: Code "" on success, else one of
// errCodes' names and a message.
type response struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Index is the metadata index the command was applied at.
	Index uint64 `json:"index,omitempty"`
	// Epoch is a registration's broker epoch.
	Epoch uint64 `json:"epoch,omitempty"`
	// First and Size are an allocated producer-id block.
	First int64 `json:"first,omitempty"`
	Size  int64 `json:"size,omitempty"`
	// Live is the controller's live set, and Known whether the
	// heartbeating broker's registration is current, on a heartbeat.
	Live  []int32 `json:"live,omitempty"`
	Known bool    `json:"known,omitempty"`
	// On a whois (blank.go): Known whether the broker is registered,
	// DirectoryID the directory it registered from, Named whether the
	// metadata names the cluster, Fresh whether the answering node has
	// no metadata yet.
	DirectoryID string `json:"directory_id,omitempty"`
	Named       bool   `json:"named,omitempty"`
	Fresh       bool   `json:"fresh,omitempty"`
	// Voters are, on a whois, the answering node's (voters.go); none
	// from a build before the check.
	Voters map[int32]string `json:"voters,omitempty"`
	// Leaders are, on a heartbeat, the leaders the live brokers
	// report, this one's included (leaders.go), and Stopping the live
	// brokers stopping (stopping.go).
	Leaders  []leaderReport `json:"leaders,omitempty"`
	Stopping []int32        `json:"stopping,omitempty"`
	// DeletedACLs are, per filter, the ACLs a DeleteACLs removed.
	DeletedACLs [][]acl.ACL `json:"deleted_acls,omitempty"`
	// From is the answering node's id, so that a sender whose Voters
	// give the node it meant another node's address learns it
	// (reachable.go); builds before it leave it out (0).
	From int32 `json:"from,omitempty"`
}

// errCodes names the errors that cross the wire, so the sender's error
// matches the same sentinel the controller's did and the server maps it
// to the same Kafka code.
var errCodes = []struct {
	code string
	err  error
}{
	{"not-controller", meta.ErrNotController},
	{"topic-exists", store.ErrTopicExists},
	{"unknown-topic", store.ErrUnknownTopic},
	{"invalid-topic", store.ErrInvalidTopic},
	{"invalid-partitions", store.ErrInvalidPartitions},
	{"invalid-config", store.ErrInvalidConfig},
	{"internal-topic", store.ErrInternalTopic},
	{"invalid-replication-factor", meta.ErrInvalidReplicationFactor},
	{"invalid-replica-assignment", meta.ErrInvalidReplicaAssignment},
	{"invalid-broker", meta.ErrInvalidBroker},
	{"unknown-broker", meta.ErrUnknownBroker},
	{"producer-ids-exhausted", meta.ErrProducerIDsExhausted},
	{"cluster-id", meta.ErrClusterID},
	{"directory-id", meta.ErrDirectoryID},
	{"voters-differ", ErrVotersDiffer},
	{"invalid-credential", meta.ErrInvalidCredential},
	{"unknown-credential", meta.ErrUnknownCredential},
	{"credentials-in-force", meta.ErrCredentialsInForce},
	{"timeout", context.DeadlineExceeded},
	{"election-not-needed", server.ErrElectionNotNeeded},
	// Before the sentinel it wraps: the first match names the error.
	{"leadership-moving", errOnTheMove},
	{"preferred-leader-not-available", server.ErrPreferredLeaderNotAvailable},
	{"not-leader", server.ErrNotLeader},
	{"unknown-partition", store.ErrUnknownPartition},
	{"invalid-acl", acl.ErrInvalid},
}

// ErrRemote is an error the controller answered that has no sentinel of
// its own on the wire.
var ErrRemote = errors.New("cluster: the controller failed the request")

// ErrProtocol reports a peer that broke the forwarding protocol: a frame
// over maxFrame, or one that does not decode.
var ErrProtocol = errors.New("cluster: forwarding protocol violation")

func errResponse(err error) response {
	for _, c := range errCodes {
		if errors.Is(err, c.err) {
			return response{Code: c.code, Message: err.Error()}
		}
	}
	return response{Code: "error", Message: err.Error()}
}

// err turns a response back into an error matching the controller's
// sentinel.
func (r response) err() error { return r.errFrom("the controller") }

// errFrom is err for an answer from who.
func (r response) errFrom(who string) error {
	if r.Code == "" {
		return nil
	}
	for _, c := range errCodes {
		if c.code == r.Code {
			// The message most often begins with the sentinel's own
			// text (it wrapped it there): said once.
			if rest, ok := strings.CutPrefix(r.Message, c.err.Error()); ok {
				return fmt.Errorf("%w (from %s)%s", c.err, who, rest)
			}
			return fmt.Errorf("%w (from %s: %s)", c.err, who, r.Message)
		}
	}
	return fmt.Errorf("%w: %s", ErrRemote, r.Message)
}

func writeFrame(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(body) > maxFrame {
		return fmt.Errorf("%w: frame of %d bytes, the limit is %d", ErrProtocol, len(body), maxFrame)
	}
	b := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	_, err = w.Write(append(b, body...))
	return err
}

func readFrame(r io.Reader, v any) error {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(h[:])
	if size > maxFrame {
		return fmt.Errorf("%w: frame of %d bytes, the limit is %d", ErrProtocol, size, maxFrame)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	return nil
}

// forward runs req on the controller: here if this node is it, else over
// the wire. While the controller is unknown, unreachable or answers that
// it is no longer the controller, it retries until ctx ends, and then
// answers server.ErrNotController. A command whose answer was lost (the
// connection broke after it was sent, or the controller lost its lead
// after proposing) is sent again; CreateTopic carries its topic id so
// that its retry finds its own topic.
func (n *Node) forward(ctx context.Context, req request) (response, error) {
	backoff := 20 * time.Millisecond
	var last error
	for {
		var resp response
		var err error
		switch c := n.meta.Controller(); {
		case n.meta.IsController():
			resp = n.handle(ctx, req)
		case c < 0:
			err = errors.New("no controller is known")
		default:
			resp, err = n.roundTrip(ctx, c, req)
		}
		if err == nil && !errors.Is(resp.err(), meta.ErrNotController) {
			return resp, resp.err()
		}
		if err == nil {
			err = resp.err()
		}
		last = err
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return response{}, fmt.Errorf("%w: no controller answered (%v): %w", server.ErrNotController, last, ctx.Err())
		case <-n.ctx.Done():
			t.Stop()
			return response{}, ErrClosed
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// roundTrip sends req to node id and reads its answer on a connection of
// its own: forwarded commands are rare, and a connection per request
// leaves nothing to keep alive or resynchronize after an error. What it
// meets goes to the node's tracker (reachable.go): a node whose only
// trouble is the controller's address (the metadata's heartbeats come
// from the controller, which dials this node) learns it here.
func (n *Node) roundTrip(ctx context.Context, id int32, req request) (response, error) {
	resp, addr, err := n.roundTripTo(ctx, id, req)
	switch {
	case addr == "" || ctx.Err() != nil:
		// Not dialled, or this side gave up: no news of the peer.
	case err != nil:
		n.reach.Failed(uint64(id), addr, err)
	default:
		n.reach.Reached(uint64(id), addr)
	}
	return resp, err
}

// roundTripTo is roundTrip; it returns the address dialled too, "" if
// none was.
func (n *Node) roundTripTo(ctx context.Context, id int32, req request) (response, string, error) {
	addr, ok := n.cfg.Voters[id]
	if !ok {
		return response{}, "", fmt.Errorf("controller %d is not among the voters", id)
	}
	deadline := time.Now().Add(n.cfg.RequestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if time.Until(deadline) <= 0 {
		return response{}, "", context.DeadlineExceeded
	}
	conn, err := n.fwd.Dial(raft.ServerAddress(addr), time.Until(deadline))
	if err != nil {
		return response{}, addr, reach.HungUp(err) // a reset while writing the header
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(deadline)
	req.TimeoutMs = max(time.Until(deadline).Milliseconds(), 1)
	if err := writeFrame(conn, req); err != nil {
		return response{}, addr, reach.HungUp(err)
	}
	var resp response
	if err := readFrame(conn, &resp); err != nil {
		if ctx.Err() != nil {
			return response{}, addr, ctx.Err()
		}
		return response{}, addr, reach.HungUp(err)
	}
	if resp.From != 0 && resp.From != id {
		// Not the node meant: its answer (a registration taken, a
		// whois) is not node id's.
		return response{}, addr, &reach.WrongNodeError{Want: strconv.Itoa(int(id)), Got: strconv.Itoa(int(resp.From))}
	}
	return resp, addr, nil
}

// acceptLoop serves the forwarding group's connections until Close.
func (n *Node) acceptLoop() {
	defer n.wg.Done()
	for {
		c, err := n.fwd.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go n.serveConn(c)
	}
}

// idleTimeout closes a forwarding connection that sends nothing.
const idleTimeout = 30 * time.Second

func (n *Node) serveConn(c net.Conn) {
	defer n.wg.Done()
	defer c.Close()
	stop := context.AfterFunc(n.ctx, func() { c.Close() })
	defer stop()
	for {
		c.SetReadDeadline(time.Now().Add(idleTimeout))
		var req request
		if err := readFrame(c, &req); err != nil {
			if errors.Is(err, ErrProtocol) {
				n.log.Warn("cluster: closing a forwarding connection", "peer", c.RemoteAddr(), "err", err)
			}
			return
		}
		timeout := time.Duration(min(max(req.TimeoutMs, 1), int64(n.cfg.RequestTimeout/time.Millisecond))) * time.Millisecond
		ctx, cancel := context.WithTimeout(n.ctx, timeout)
		var resp response
		switch {
		case req.Op == opWhois:
			resp = n.whois(req)
		case !n.opened.Load():
			// Still starting (in checkBlank, say): nothing to answer from.
			resp = errResponse(&meta.NotControllerError{Leader: -1})
		case req.Op == opElect:
			// For a partition's leader, whichever node it is.
			resp = n.serveElect(ctx, req)
		default:
			resp = n.handle(ctx, req)
		}
		cancel()
		resp.From = n.cfg.NodeID
		c.SetWriteDeadline(time.Now().Add(n.cfg.RequestTimeout))
		if err := writeFrame(c, resp); err != nil {
			return
		}
	}
}
