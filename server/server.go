// Package server is a single-node Kafka-protocol broker over a store: real
// Kafka clients (franz-go, librdkafka and so kcat, any other) produce to and
// consume from a seglog store. A producer's batch is stored as it arrived,
// and a fetch sends the same bytes back out of the segment files with
// sendfile(2).
//
// Requests are decoded and responses encoded with franz-go's kmsg, except
// the Fetch response, whose framing around the file ranges is written by
// this package. What the server speaks, and what a client can expect, is in
// docs/serve.md.
//
// Start with store.Open, then New with the Store and ListenAndServe (or
// Serve on a listener of your own); stop with Shutdown, then close the
// Store, which the Server never closes. seglog serve is this, with flags.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/errlog"
	"github.com/seglog/seglog/store"
)

// Defaults for Options' zero fields.
const (
	// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultNumPartitions is Kafka's num.partitions, for topics created
	// on first use.
	DefaultNumPartitions = 1
	// DefaultRequestReadTimeout bounds how long a request may take to
	// arrive once its size has: Kafka clients give up on a request after
	// request.timeout.ms, 30 s by default, so one still arriving later is
	// no client's any more, only a slow one's.
	DefaultRequestReadTimeout = 30 * time.Second
	// DefaultMaxConnections bounds the connections served at once
	// (Kafka's max.connections, unbounded there): an idle one costs about
	// 5 KB, so ten thousand idle clients cost about 50 MB.
	DefaultMaxConnections = 10000
	// DefaultMaxConnectionsPerIP bounds those from one address (Kafka's
	// max.connections.per.ip, unbounded there): ample for the clients
	// of one host, and a tenth of the total, so that one host cannot
	// take every connection.
	DefaultMaxConnectionsPerIP = 1000
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("server: closed")

// Options configures a Server. The zero value serves with Kafka's defaults;
// an empty Advertise is taken from the first listener Serve is given.
type Options struct {
	// Advertise is the host:port clients are told to connect to (Kafka's
	// advertised.listeners). Empty means the listener's address.
	Advertise string
	// NodeID and ClusterID identify the broker; New reads them from the
	// store's meta.properties, creating it on first start, when they are
	// zero and empty.
	NodeID    int32
	ClusterID string
	// AutoCreateTopics is auto.create.topics.enable; nil means true.
	AutoCreateTopics *bool
	// NumPartitions is num.partitions for topics created on first use or
	// by a CreateTopics asking for the default (0 means 1).
	NumPartitions int
	// DefaultReplicationFactor is default.replication.factor as
	// DescribeConfigs reports it: the replication factor of topics created
	// without one, which in a cluster the Cluster applies (0 means 1, a
	// single node's one copy).
	DefaultReplicationFactor int
	// LeaderImbalanceCheckInterval is, in a cluster, how often each node
	// hands the partitions it leads back to their preferred replicas, as
	// DescribeConfigs reports it (leader.imbalance.check.interval.seconds;
	// 0 means Kafka's 300 s); negative means never
	// (auto.leader.rebalance.enable false). The Cluster does the
	// rebalancing; a single node leads every partition it has.
	LeaderImbalanceCheckInterval time.Duration
	// TopicConfig is the config of topics created through the server;
	// nil means store.DefaultTopicConfig.
	TopicConfig *store.TopicConfig
	// MaxRequestBytes bounds one request's size (0 means 100 MiB); a
	// larger one closes the connection, as Kafka does.
	MaxRequestBytes int
	// IdleTimeout closes a connection that sends nothing for this long,
	// and bounds how long a response may take to be written (0 means 10
	// minutes).
	IdleTimeout time.Duration
	// RequestReadTimeout closes a connection whose request, once its size
	// has been read, has not arrived whole this long after (0 means 30
	// s): a client sending a byte a second holds its connection no
	// longer. The wait for a request's size is IdleTimeout's.
	RequestReadTimeout time.Duration
	// MaxConnections bounds the connections served at once (Kafka's
	// max.connections): one more is closed as it is accepted. Zero means
	// DefaultMaxConnections, negative no bound.
	MaxConnections int
	// MaxConnectionsPerIP bounds the connections from one IP address
	// (Kafka's max.connections.per.ip), the same way. Zero means
	// DefaultMaxConnectionsPerIP, negative no bound.
	MaxConnectionsPerIP int
	// Logger receives connection errors; nil means slog.Default.
	Logger *slog.Logger
	// FetchCopy sends fetched records by reading them into memory and
	// writing them, as a TLS connection must, instead of with sendfile(2):
	// the baseline the zero-copy path is measured against.
	FetchCopy bool
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms: how
	// long the first rebalance of an empty consumer group waits for more
	// members to join. Zero means Kafka's default, 3 s; negative, none.
	GroupInitialRebalanceDelay time.Duration
	// Cluster makes the server one broker of a replicated cluster
	// (docs/cluster-server.md): metadata, the write path and leadership
	// come from it, and only a partition's leader serves it. Nil is a
	// single node, which leads every partition of its store.
	Cluster Cluster
	// TLS, when set, makes every listener given to Serve speak TLS
	// (LoadTLSConfig makes one from PEM files). Fetched records are then
	// copied through the TLS connection: sendfile cannot encrypt.
	TLS *tls.Config
	// SASL, when set, requires every connection to authenticate before
	// it is served (sasl.go, docs/security.md).
	SASL *SASLConfig
	// SuperUsers are the SASL users no ACL is checked for (Kafka's
	// super.users, without the "User:" prefix). With SASL on, everyone
	// else may do only what the ACLs allow (acl_authorize.go).
	SuperUsers []string

	// quotaClock measures client quotas and times their mutes; nil is
	// the real one. Tests set a fake clock to compute throttles exactly.
	quotaClock clock
}

// Server answers the Kafka protocol for one store. Create it with New, run
// it with Serve, stop it with Shutdown. The caller owns the store and closes
// it after Shutdown returns.
type Server struct {
	st     *store.Store
	cfg    Options
	host   string
	port   int32
	logger *slog.Logger
	// errs logs storage errors, at most one line a partition every
	// errlog.Every.
	errs   *errlog.Log
	coord  *coordinator
	notify notifier
	pids   *producers
	// cluster is Options.Cluster: nil on a single node.
	cluster Cluster
	// stuck remembers a cluster's partitions whose election outlasted a
	// Metadata's wait (metadata.go).
	stuck stuckElections
	// groupKick tells a cluster node's coordinator that a leader or a
	// high watermark changed: it loads or drops offsets partitions.
	groupKick chan struct{}
	// clusterGroups is a cluster node's coordinator's groups while it
	// serves, for the observer's TopicDeleted (which must not take mu).
	clusterGroups atomic.Pointer[clusterGroups]

	// acls are the ACLs requests are authorized against: the store's
	// ACLFile or the Cluster; nil with SASL off, when nothing is checked.
	acls aclBackend

	// logins counts failed SASL logins per address (sasl.go).
	logins *loginLimiter
	// saslReauths counts the re-authentications (KIP-368) completed,
	// saslExpired the connections closed for a session that ended
	// without one (tests wait on them).
	saslReauths, saslExpired atomic.Int64

	// quota measures clients against their quotas; localQuotas holds a
	// single node's (quota*.go).
	quota       *quotaManager
	localQuotas *Quotas

	// frames holds Produce request frames between requests (conn.go,
	// "Request frames"), for any connection to read its next request
	// into.
	frames framePool
	// outs holds response buffers (*[]byte) between answers
	// (conn.writeResponse), so an idle connection keeps none.
	outs sync.Pool
	// framesMade counts the frames read into fresh memory (tests check
	// that the pool is used).
	framesMade atomic.Int64
	// metrics is what Metrics reports (metrics.go).
	metrics serverMetrics

	// ctx ends at Shutdown: parked fetches answer at once and blocking
	// group requests return.
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	perIP     map[string]int // connections served per address (admit)
	closed    bool
	connWG    sync.WaitGroup
}

// New makes a server for st. Unless Options.ClusterID is set, it reads the
// node and cluster ids from meta.properties in the store's directory, or
// writes that file with a new cluster id on first start (through the real
// filesystem, whatever the store's FS). An Options.Advertise that
// CheckAdvertise refuses is an error.
func New(st *store.Store, cfg Options) (*Server, error) {
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = DefaultNumPartitions
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxConnectionsPerIP == 0 {
		cfg.MaxConnectionsPerIP = DefaultMaxConnectionsPerIP
	}
	if cfg.RequestReadTimeout <= 0 {
		cfg.RequestReadTimeout = DefaultRequestReadTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TopicConfig == nil {
		c := store.DefaultTopicConfig()
		cfg.TopicConfig = &c
	}
	if cfg.ClusterID == "" {
		m, err := loadMeta(st.FS(), st.Dir(), cfg.NodeID, !st.ReadOnly())
		if err != nil {
			return nil, err
		}
		cfg.NodeID, cfg.ClusterID = m.NodeID, m.ClusterID
	}
	s := &Server{st: st, cfg: cfg, logger: cfg.Logger,
		listeners: make(map[net.Listener]struct{}), conns: make(map[*conn]struct{})}
	s.outs.New = newOut
	s.errs = errlog.New(s.logger, nil)
	s.pids = newProducers(st.FS())
	if cfg.SASL != nil {
		if err := CheckMechanisms(cfg.SASL.Mechanisms); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		if cfg.SASL.Credentials == nil {
			return nil, errors.New("server: SASL without credentials")
		}
		if _, file := cfg.SASL.Credentials.(*Credentials); file && cfg.Cluster != nil {
			// One node's file is not the cluster's users
			// (docs/security.md, "In a cluster").
			return nil, errors.New("server: SASL in a cluster takes the cluster's credentials, not a node's file")
		}
		s.logins = newLoginLimiter(cfg.SASL.MaxFailures, cfg.SASL.FailureWindow)
		if cfg.Cluster != nil {
			s.acls = cfg.Cluster
		} else {
			acls, err := loadACLStore(st.FS(), st.Dir())
			if err != nil {
				return nil, fmt.Errorf("server: %w", err)
			}
			s.acls = acls
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.Cluster != nil {
		s.cluster = cfg.Cluster
		s.groupKick = make(chan struct{}, 1)
		// A high watermark moving or a leader changing is what a parked
		// fetch waits for in a cluster, as an append is on one node, and
		// what the coordinator loads or drops offsets partitions on.
		s.cluster.SetNotify(func() {
			s.notify.wake()
			select {
			case s.groupKick <- struct{}{}:
			default:
			}
		})
		s.cluster.SetObserver(observer{s})
	}
	if err := s.initQuotas(); err != nil {
		return nil, err
	}
	if cfg.Advertise != "" {
		if err := s.setAdvertise(cfg.Advertise); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Server) setAdvertise(hostport string) error {
	host, port, err := parseAdvertise(hostport)
	if err != nil {
		return err
	}
	s.host, s.port = host, port
	return nil
}

// CheckAdvertise returns the error New gives for Options.Advertise
// hostport, or nil if New accepts it, so that a command line can refuse a
// bad address before it opens or creates the store.
func CheckAdvertise(hostport string) error {
	_, _, err := parseAdvertise(hostport)
	return err
}

// parseAdvertise splits an advertised address: a host clients can
// connect to (not empty: an empty one would be replaced by the listener's
// address, silently) and a port from 1 to 65535.
func parseAdvertise(hostport string) (string, int32, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, fmt.Errorf("server: advertised address %q: %w", hostport, err)
	}
	if host == "" {
		return "", 0, fmt.Errorf("server: advertised address %q: no host", hostport)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return "", 0, fmt.Errorf("server: advertised address %q: bad port", hostport)
	}
	return host, int32(p), nil
}

// NodeID is the broker's node id.
func (s *Server) NodeID() int32 { return s.cfg.NodeID }

// ClusterID is the cluster id clients see in Metadata.
func (s *Server) ClusterID() string { return s.cfg.ClusterID }

// Serve accepts connections on ln until Shutdown or Close, and returns
// ErrServerClosed then. The first Serve without an advertised address
// advertises ln's.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	if s.host == "" {
		if err := s.setAdvertise(ln.Addr().String()); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	if s.coord == nil && s.cluster != nil {
		s.coord = newClusterCoordinator(s.st, s.cluster, coordinatorConfig{NodeID: s.cfg.NodeID, Host: s.host, Port: s.port,
			InitialRebalanceDelay: s.cfg.GroupInitialRebalanceDelay}, s.groupKick, s.logger)
		s.clusterGroups.Store(s.coord.gs.(*clusterGroups))
	} else if s.coord == nil {
		s.coord = newCoordinator(s.st, coordinatorConfig{NodeID: s.cfg.NodeID, Host: s.host, Port: s.port,
			InitialRebalanceDelay: s.cfg.GroupInitialRebalanceDelay})
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of descriptors and the like: back off as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		ip, ok := s.admitLocked(nc)
		if !ok {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		c := newConn(s, nc)
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.connWG.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.releaseLocked(ip)
			s.mu.Unlock()
		}()
	}
}

// ListenAndServe listens on addr (host:port) and serves.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Shutdown stops accepting connections, lets every connection finish the
// request it is answering (a parked fetch answers at once with what it has;
// a blocked group request returns), closes the connections and waits for
// them, or until ctx ends, when it closes what remains. It does not close
// the store.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.stopAfterCurrent()
	}
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
	}
	s.mu.Lock()
	coord := s.coord
	s.coord = nil
	s.clusterGroups.Store(nil)
	s.mu.Unlock()
	if coord != nil {
		coord.close()
	}
	if s.cluster == nil {
		// In a cluster the partition directories are the replication's:
		// the producer state is rebuilt from the log's batch headers.
		s.writeSnapshots()
	}
	return err
}

// writeSnapshots writes a producer-state snapshot for every partition the
// server holds state for, so the next start reads the state instead of
// scanning batches. A failure only costs that scan; it is logged.
func (s *Server) writeSnapshots() {
	s.pids.mu.Lock()
	parts := make(map[tp]*partProducers, len(s.pids.parts))
	for k, pp := range s.pids.parts {
		parts[k] = pp
	}
	s.pids.mu.Unlock()
	for k, pp := range parts {
		l, err := s.partitionLog(k.topic, k.partition)
		if err != nil {
			continue // deleted meanwhile
		}
		pp.mu.Lock()
		if pp.state == loaded && pp.view == l {
			if err := writeSnapshot(l, pp); err != nil {
				s.logger.Warn("server: writing a producer snapshot", "dir", l.Dir(), "err", err)
			}
		}
		pp.mu.Unlock()
	}
}

// Close shuts down without waiting for in-flight requests.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// partitionLog returns a read-only view of a partition, and
// partitionWriter the handle produce appends with. Every path of the
// server reaches a partition through these, so how partitions are reached
// (an open-file budget, say) is one place to change.
func (s *Server) partitionLog(topic string, partition int32) (seglog.View, error) {
	return s.st.Log(topic, partition)
}

func (s *Server) partitionWriter(topic string, partition int32) (store.Writer, error) {
	return s.st.Writer(topic, partition)
}

// autoCreate says whether a topic may be created on first use.
func (s *Server) autoCreate() bool {
	return s.cfg.AutoCreateTopics == nil || *s.cfg.AutoCreateTopics
}
