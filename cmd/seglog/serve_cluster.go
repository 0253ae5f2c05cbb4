package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/internal/cluster"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// clusterFlags are serve's cluster flags (docs/cluster.md) and, once
// started, the node they run. With no --voters, serve is one node and
// every method here does nothing.
type clusterFlags struct {
	voters     string
	raftListen string
	defaultRF  int
	// rebalance and rebalanceEvery are Kafka's auto.leader.rebalance.enable
	// and leader.imbalance.check.interval.seconds.
	rebalance      bool
	rebalanceEvery time.Duration

	parsed map[int32]string
	raftLn net.Listener
	node   *cluster.Node
}

func (c *clusterFlags) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.voters, "voters", "", "run as one node of a replicated cluster: every voter as ID@HOST:PORT (its raft address), comma-separated, this node included; the same list on every node")
	f.StringVar(&c.raftListen, "raft-listen", "", "with --voters: the address this node's raft port listens on (its port is this node's port in --voters)")
	f.IntVar(&c.defaultRF, "default-replication-factor", 0, "with --voters: replication factor of topics created without one (default: the smaller of 3 and the number of voters)")
	limitFlag(cmd, "default-replication-factor", 0, math.MaxInt16)
	f.BoolVar(&c.rebalance, "auto-leader-rebalance", true, "with --voters: hand each partition this node leads back to its preferred replica (its first) once that one is live and in sync, checked every --leader-imbalance-check-interval (auto.leader.rebalance.enable)")
	f.DurationVar(&c.rebalanceEvery, "leader-imbalance-check-interval", cluster.DefaultLeaderImbalanceCheckInterval, "with --voters: how often --auto-leader-rebalance looks, 1s or more (leader.imbalance.check.interval.seconds)")
	limitDuration(cmd, "leader-imbalance-check-interval", time.Second, math.MaxInt64)
	onlyWith(cmd, "leader-imbalance-check-interval", "voters")
}

// check refuses a cluster command line that cannot work, before anything
// is bound or opened.
func (c *clusterFlags) check(cmd *cobra.Command, nodeID int32, listen, advertise string) error {
	if c.voters == "" {
		switch {
		case c.raftListen != "":
			return usageErrorf(cmd, "--raft-listen needs --voters (without --voters, serve is a single node)")
		case c.defaultRF != 0:
			return usageErrorf(cmd, "--default-replication-factor needs --voters (a single node keeps one copy)")
		case cmd.Flags().Changed("auto-leader-rebalance"):
			// Set to false too, which onlyWith does not count as given.
			return usageErrorf(cmd, "--auto-leader-rebalance needs --voters (a single node leads every partition)")
		}
		return nil
	}
	voters, err := parseVoters(c.voters)
	if err != nil {
		return usageErrorf(cmd, "invalid --voters: %v", err)
	}
	if c.raftListen == "" {
		return usageErrorf(cmd, "--voters needs --raft-listen, the address this node's raft port listens on")
	}
	if !cmd.Flags().Changed("node-id") {
		return usageErrorf(cmd, "--voters needs --node-id: which of the voters this node is")
	}
	if err := checkClusterFlags(voters, nodeID, c.raftListen, c.defaultRF); err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	if sameAddress(listen, c.raftListen) {
		return usageErrorf(cmd, "--listen %s and --raft-listen %s are one address: the Kafka port and the raft port must differ", listen, c.raftListen)
	}
	if self := voters[nodeID]; !sameHost(c.raftListen, self) {
		// Not refused: a name in --voters may resolve to the address
		// bound here. But a typo here leaves the node waiting for peers
		// that dial an address it does not listen on.
		fmt.Fprintf(cmd.ErrOrStderr(), "seglog serve: warning: --raft-listen %s is not this node's address in --voters (%d@%s), which the other nodes dial: unless %s reaches this listener, they cannot reach this node\n",
			c.raftListen, nodeID, self, self)
	}
	if advertise == "" {
		// The other nodes hand this address to clients: it must name
		// this host, not every interface. (Port 0 is fine: the bound
		// port is advertised.)
		host, _, _ := net.SplitHostPort(listen)
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			return usageErrorf(cmd, "--listen %s cannot be advertised to clients by the other nodes: give --advertise HOST:PORT", listen)
		}
	}
	c.parsed = voters
	return nil
}

// enabled reports whether serve runs as a node of a cluster (the flags
// checked).
func (c *clusterFlags) enabled() bool { return c.parsed != nil }

// listen binds the raft port, so a port in use fails before DIR is opened.
func (c *clusterFlags) listen() error {
	if c.parsed == nil {
		return nil
	}
	ln, err := net.Listen("tcp", c.raftListen)
	if err != nil {
		return fmt.Errorf("--raft-listen: %w", err)
	}
	c.raftLn = ln
	return nil
}

// start runs the cluster node over st and points the server's options at
// it. It waits for the cluster's id, which takes a controller: a node
// started alone waits for its peers (ctx, the signal context, ends the
// wait).
func (c *clusterFlags) start(ctx context.Context, cmd *cobra.Command, dir string, st *store.Store, ln net.Listener, advertise string, nodeID int32, logger *slog.Logger, verbose bool, opts *server.Options) error {
	if c.parsed == nil {
		return nil
	}
	if advertise == "" {
		advertise = ln.Addr().String()
	}
	// hashicorp raft logs every election and unreachable peer at INFO;
	// they are for --verbose.
	var raftLog io.Writer = io.Discard
	if verbose {
		raftLog = cmd.ErrOrStderr()
	}
	ln2 := c.raftLn
	c.raftLn = nil // the node owns it from here
	rebalanceEvery := c.rebalanceEvery
	if !c.rebalance {
		rebalanceEvery = -1
	}
	n, err := cluster.Start(cluster.Config{Dir: dir, Store: st, NodeID: nodeID, Listener: ln2,
		Voters: c.parsed, Advertise: advertise, DefaultReplicationFactor: c.defaultRF,
		Logger: logger, RaftLogOutput: raftLog, Credentials: saslSeeds(opts.SASL), StartContext: ctx, LeaderImbalanceCheckInterval: rebalanceEvery})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return stoppedWaiting(err)
		}
		return err
	}
	c.node = n
	fmt.Fprintf(cmd.ErrOrStderr(), "seglog serve: node %d of %d voters, raft on %s; waiting for the cluster's controller\n", nodeID, len(c.parsed), ln2.Addr())
	id, err := n.ClusterID(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return stoppedWaiting(err)
		}
		return err
	}
	opts.Cluster, opts.ClusterID, opts.Advertise = n, id, advertise
	opts.DefaultReplicationFactor = n.DefaultReplicationFactor()
	opts.LeaderImbalanceCheckInterval = rebalanceEvery
	opts.SASL = clusterSASL(opts.SASL, n)
	return nil
}

// stoppedWaiting is serve's error when it is stopped (Ctrl-C) before the
// node joined the cluster: what the node saw of the other voters, and
// what to check. It said only "are a majority of --voters running?"
// before, which misled a user whose voters all ran and one address in
// --voters was mistyped.
func stoppedWaiting(err error) error {
	var we *cluster.WaitError
	if !errors.As(err, &we) {
		return fmt.Errorf("stopped before the cluster had a controller (are a majority of --voters running?)")
	}
	advice := "check the other nodes' logs"
	if we.Unreachable() {
		advice = "check --voters (each voter's --raft-listen address, the same list on every node) and that a majority of the voters are running"
	}
	return fmt.Errorf("%s: %s; %s", we.What(), we.Seen(), advice)
}

// checkDir refuses, reading only, a DIR that belongs to another node
// than nodeID (cluster.ErrNodeID) or lost its node's state
// (cluster.ErrNodeStateLost); nothing without --voters.
func (c *clusterFlags) checkDir(dir string, nodeID int32) error {
	if c.parsed == nil {
		return nil
	}
	return cluster.CheckDir(vfs.Default, dir, nodeID)
}

// failed returns a channel closed when the node fails (nil, which never
// is, without a node), and the failure.
func (c *clusterFlags) failed() (<-chan struct{}, func() error) {
	if c.node == nil {
		return nil, nil
	}
	return c.node.Failed(), c.node.Err
}

// handOverLimit bounds a stopping node's controlled shutdown: a transfer
// raft cannot finish sooner (a follower far behind) is left to the
// election after the stop.
const handOverLimit = 5 * time.Second

// handOver hands this node's partition leaderships and the controller's
// role to other nodes before serve stops (Kafka's controlled shutdown),
// for at most handOverLimit; what is not handed over fails over after the
// stop, as after a kill.
func (c *clusterFlags) handOver(w io.Writer) {
	if c.node == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), handOverLimit)
	defer cancel()
	if err := c.node.HandOver(ctx); err != nil {
		// One line: the partitions' and the controller's errors are
		// joined with a newline.
		msg := strings.ReplaceAll(err.Error(), "\n", "; ")
		fmt.Fprintf(w, "seglog serve: handing leadership over within %v: %s; the rest fails over once this node stops\n", handOverLimit, msg)
	}
	// Still answering for a moment: a client whose metadata still names
	// this node as a leader is told, on the connection it has, which
	// node leads now (NOT_LEADER_OR_FOLLOWER with KIP-951's hint), and
	// moves at once. Closed at once, its reconnection was refused and
	// a kgo producer waited out its 5 s metadata age (a walk saw stalls
	// of 1.3 to 5 s).
	if len(c.parsed) > 1 {
		time.Sleep(drainAfterHandOver)
	}
}

// drainAfterHandOver is how long a stopping node goes on answering after
// its partitions were handed over: a producer keeping requests in flight
// sends one to each partition's old leader within it.
const drainAfterHandOver = time.Second

// close stops the node (or the raft listener it never got); nil when
// there is neither.
func (c *clusterFlags) close() error {
	var err error
	if c.node != nil {
		err = c.node.Close()
		c.node = nil
	}
	if c.raftLn != nil {
		err = errors.Join(err, c.raftLn.Close())
		c.raftLn = nil
	}
	return err
}

// parseVoters parses serve's --voters: a comma-separated list of
// ID@HOST:PORT, every voter of the cluster (this node included) with its
// raft address. Every node is given the same list; the ids are the broker
// ids clients see, so they must be positive (raft reserves 0) and unique,
// and two voters may not share an address.
func parseVoters(s string) (map[int32]string, error) {
	voters := map[int32]string{}
	addrs := map[string]int32{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		idText, addr, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("voter %q: want ID@HOST:PORT", item)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 1 {
			return nil, fmt.Errorf("voter %q: the id must be a number from 1 to %d", item, int32(^uint32(0)>>1))
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("voter %q: %v", item, err)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("voter %q: the port must be 1 to 65535 (the raft port other nodes dial)", item)
		}
		if host == "" {
			return nil, fmt.Errorf("voter %q: no host (other nodes dial this address)", item)
		}
		if _, dup := voters[int32(id)]; dup {
			return nil, fmt.Errorf("voter id %d appears twice", id)
		}
		if other, dup := addrs[addr]; dup {
			return nil, fmt.Errorf("voters %d and %d have the same address %s", other, id, addr)
		}
		voters[int32(id)] = addr
		addrs[addr] = int32(id)
	}
	return voters, nil
}

// checkClusterFlags checks serve's cluster flags against each other: the
// node is one of the voters, it listens for raft on its voter address's
// port (peers dial that one; port 0 cannot be announced), and the
// replication factor fits the voters.
func checkClusterFlags(voters map[int32]string, nodeID int32, raftListen string, defaultRF int) error {
	self, ok := voters[nodeID]
	if !ok {
		return fmt.Errorf("--node-id %d is not among --voters", nodeID)
	}
	_, lport, err := net.SplitHostPort(raftListen)
	if err != nil {
		return fmt.Errorf("invalid --raft-listen %q: want HOST:PORT: %v", raftListen, err)
	}
	_, vport, _ := net.SplitHostPort(self)
	if lport != vport {
		return fmt.Errorf("--raft-listen %s: port %s is not this node's port in --voters (%d@%s), which the other nodes dial", raftListen, lport, nodeID, self)
	}
	if defaultRF < 0 || defaultRF > len(voters) {
		return fmt.Errorf("--default-replication-factor %d: must be 1 to the number of voters (%d)", defaultRF, len(voters))
	}
	return nil
}

// sameAddress reports whether two listen addresses would bind one port:
// the same port (not 0, which picks a free one) on the same host, or on
// every interface for either.
func sameAddress(a, b string) bool {
	ah, ap, err1 := net.SplitHostPort(a)
	bh, bp, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || ap != bp || ap == "0" {
		return false
	}
	every := func(h string) bool {
		ip := net.ParseIP(h)
		return h == "" || (ip != nil && ip.IsUnspecified())
	}
	if ah == bh || every(ah) || every(bh) {
		return true
	}
	// Two spellings of one host (localhost and 127.0.0.1, a walk's):
	// compared by the addresses they resolve to, or the second listen
	// fails with "address already in use", which does not say why.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	aa, err1 := net.DefaultResolver.LookupHost(ctx, ah)
	ba, err2 := net.DefaultResolver.LookupHost(ctx, bh)
	if err1 != nil || err2 != nil {
		return false // the listen says what is wrong with a host
	}
	for _, x := range aa {
		for _, y := range ba {
			if net.ParseIP(x).Equal(net.ParseIP(y)) {
				return true
			}
		}
	}
	return false
}

// sameHost reports whether a listen address binds the host an address in
// --voters names (by name, without resolving it), or every interface.
func sameHost(listen, voter string) bool {
	lh, _, err1 := net.SplitHostPort(listen)
	vh, _, err2 := net.SplitHostPort(voter)
	if err1 != nil || err2 != nil {
		return true // the checks before say what is wrong with them
	}
	ip := net.ParseIP(lh)
	return lh == vh || lh == "" || (ip != nil && ip.IsUnspecified())
}
