package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/internal/promexport"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

func init() { register(newServeCmd) }

func newServeCmd() *cobra.Command {
	var (
		listen, advertise string
		nodeID            int32
		autoCreate        bool
		numPartitions     int
		configs           []string
		maxRequest        int
		grace             time.Duration
		verbose           bool
		fetchCopy         bool
		rebalanceDelay    time.Duration
		retentionEvery    time.Duration
		cl                clusterFlags
		metricsListen     string
		withPprof         bool
		logFormat         string
		logLevel          string
		sec               securityFlags
		metricsAcc        = metricsAccess()
		superUsers        []string
	)
	cmd := &cobra.Command{
		Use:   "serve DIR",
		Short: "Serve a store over the Kafka protocol, so Kafka clients (kcat, franz-go, …) produce and consume",
		Long: `Run a single-node Kafka-protocol broker over the store in DIR (created if
missing). Unmodified Kafka clients produce to and consume from it; a
producer's batch is stored as it arrived and fetches are sent from the
segment files with sendfile(2). See docs/serve.md for the API keys and
versions spoken, idempotence, acks and what is not supported.

With --voters (and --node-id, --raft-listen) DIR is one node of a
replicated cluster instead: every partition a raft group over its
replicas, acks=all meaning a majority. docs/cluster.md walks through
starting three nodes.

Every flag is checked and the listener bound before DIR is opened or
created: a bad value or address is a usage error (exit status 2), a port in
use exits 1, and DIR is left as it was.

TLS (--tls-cert, --tls-key, --tls-client-ca) and SASL logins
(--sasl-mechanisms, users from seglog users add) are in docs/security.md.
With SASL on, every request is authorized against the ACLs (CreateAcls
through kadm or kafka-acls.sh), except for the --super-users.
Without TLS and client authentication, a --listen address other than
loopback is refused unless --insecure, which logs a warning.

The node id and cluster id are kept in DIR/meta.properties, written on
the first start; a later start given another --node-id is refused, as
Kafka refuses it (without --node-id it keeps its id). SIGTERM or SIGINT
stops accepting connections, lets in-flight requests finish (up to
--grace) and closes the store cleanly.

--metrics-listen HOST:PORT serves Prometheus metrics at /metrics (bytes and
messages per topic, requests and latency per API, partitions' offsets,
groups' lag; docs/metrics.md), and with --pprof Go's profiler. On an
address other than loopback the page needs --metrics-token (or
--metrics-token-file), or --insecure to serve it to anyone.
--log-format json writes the log lines as JSON objects.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Everything that can be refused is, before the store is
			// opened (which creates it): the flags, then the listener.
			cfg := store.DefaultTopicConfig()
			if err := cfg.SetAll(configs); err != nil {
				return asUsageError(cmd, err)
			}
			if err := checkListenAddress(cmd, "listen", listen); err != nil {
				return err
			}
			var metricsToken string
			var metricsOpen bool
			if metricsListen != "" {
				if err := checkListenAddress(cmd, "metrics-listen", metricsListen); err != nil {
					return err
				}
				metricsAcc.insecure = sec.insecure
				var err error
				if metricsToken, metricsOpen, err = metricsAcc.check(cmd, metricsListen); err != nil {
					return err
				}
			}
			if advertise != "" {
				if err := server.CheckAdvertise(advertise); err != nil {
					return usageErrorf(cmd, "invalid --advertise: %v", err)
				}
			}
			if err := cl.check(cmd, nodeID, listen, advertise); err != nil {
				return err
			}
			if err := sec.check(cmd, args[0], listen, cl.voters != ""); err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return withServingHolder(err, args[0])
			}
			if err := cl.listen(); err != nil {
				return errors.Join(err, ln.Close())
			}
			// Bound with the other listeners, before the store is opened;
			// closed by the deferred calls on every way out.
			var metricsLn net.Listener
			if metricsListen != "" {
				if metricsLn, err = net.Listen("tcp", metricsListen); err != nil {
					return errors.Join(err, ln.Close(), cl.close())
				}
				defer metricsLn.Close()
			}
			logger := serveLogger(cmd.ErrOrStderr(), logFormat, logLevel, verbose)
			// The lock file names the listener, so that a command the
			// store's lock turns away can go through the server instead.
			// In a cluster __consumer_offsets is a replicated topic:
			// only raft writes it.
			// A DIR of another node, or one that lost its node's state,
			// is refused before the store's open recovers (writes) it.
			if err := cl.checkDir(args[0], nodeID); err != nil {
				return errors.Join(err, ln.Close(), cl.close())
			}
			if cmd.Flags().Changed("node-id") {
				if err := checkNodeID(args[0], nodeID); err != nil {
					return errors.Join(err, ln.Close(), cl.close())
				}
			}
			// The offsets topic inherits --config as a Kafka broker's
			// __consumer_offsets inherits its defaults (min.insync.replicas
			// among them), under the topic's own keys. It is made at the
			// store's first open only: an existing one keeps its config.
			offsets := store.OffsetsTopicConfig(cfg)
			st, err := store.Open(args[0], store.Options{Logger: logger, Holder: serveHolder(ln, advertise),
				ReplicatedOffsets: cl.enabled(), OffsetsConfig: &offsets, RetentionCheckInterval: retentionEvery})
			if err != nil {
				return errors.Join(err, ln.Close(), cl.close())
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// In a cluster the node comes first: the server takes the
			// cluster id from it, which waits for a controller.
			opts := server.Options{Advertise: advertise, NodeID: nodeID,
				AutoCreateTopics: &autoCreate, NumPartitions: numPartitions, TopicConfig: &cfg,
				MaxRequestBytes: maxRequest, Logger: logger, FetchCopy: fetchCopy,
				GroupInitialRebalanceDelay: rebalanceDelay}
			sec.apply(&opts, logger, listen)
			for _, u := range superUsers {
				// Kafka's super.users names principals: User:alice.
				opts.SuperUsers = append(opts.SuperUsers, strings.TrimPrefix(u, "User:"))
			}
			if rebalanceDelay == 0 {
				opts.GroupInitialRebalanceDelay = -1 // the flag's 0 is "none"; the Config's zero is Kafka's default
			}
			if err := cl.start(ctx, cmd, args[0], st, ln, advertise, nodeID, logger, verbose, &opts); err != nil {
				return errors.Join(err, ln.Close(), cl.close(), st.Close())
			}
			srv, err := server.New(st, opts)
			if err != nil {
				return errors.Join(err, ln.Close(), cl.close(), st.Close())
			}
			if err := st.Start(ctx); err != nil {
				ln.Close()
				return errors.Join(err, cl.close(), st.Close())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "seglog serve: listening on %s, node %d, cluster %s\n", ln.Addr(), srv.NodeID(), srv.ClusterID())
			var page *http.Server
			if metricsLn != nil {
				if metricsOpen {
					logger.Warn("seglog serve: --insecure: serving metrics on a non-loopback address without a token; anyone who reaches it reads every topic's and group's name and figures",
						"metrics-listen", metricsListen)
				}
				page = &http.Server{Handler: guard(promexport.Handler(promexport.Of(srv), withPprof), metricsLn.Addr(), metricsToken),
					ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
				go page.Serve(metricsLn)
				fmt.Fprintf(cmd.OutOrStdout(), "seglog serve: metrics on http://%s/metrics\n", metricsLn.Addr())
				logger.Info("seglog serve: metrics", "addr", metricsLn.Addr().String())
			}
			logger.Info("seglog serve: listening", "addr", ln.Addr().String(), "node", srv.NodeID(), "cluster", srv.ClusterID())
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			var serveErr, failure error
			nodeFailed, nodeErr := cl.failed()
			select {
			case <-ctx.Done():
				// A controlled shutdown: the partitions' clients move to
				// their new leaders while this node still answers.
				cl.handOver(cmd.ErrOrStderr())
			case serveErr = <-served:
			case <-nodeFailed:
				// The node cannot go on (a newer build's metadata):
				// serve stops with its error.
				failure = nodeErr()
			}
			if page != nil {
				// Before the store closes: a scrape reads it.
				page.Close()
			}
			sctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			shutErr := srv.Shutdown(sctx)
			if serveErr == nil {
				<-served
			} else if errors.Is(serveErr, server.ErrServerClosed) {
				serveErr = nil
			}
			err = errors.Join(failure, serveErr, shutErr, cl.close(), st.Close())
			if err == nil {
				fmt.Fprintln(cmd.OutOrStdout(), "seglog serve: stopped")
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9092", "address to listen on (host:port; port 0 picks a free one)")
	f.StringVar(&advertise, "advertise", "", "host:port clients are told to connect to, port 1 to 65535 (default: the listen address)")
	f.Int32Var(&nodeID, "node-id", 0, "node id written to meta.properties on first start (not negative); a later start given another is refused")
	f.BoolVar(&autoCreate, "auto-create-topics", true, "create a topic a client asks for by name (auto.create.topics.enable)")
	f.IntVar(&numPartitions, "num-partitions", 1, "partitions of a topic created on first use, 1 to 100000 (num.partitions)")
	f.StringArrayVar(&configs, "config", nil, "topic config for topics created through the server, key=value (repeatable)")
	f.IntVar(&maxRequest, "max-request-bytes", server.DefaultMaxRequestBytes, "largest request accepted, 1 to 2147483647 (socket.request.max.bytes)")
	f.DurationVar(&grace, "grace", 30*time.Second, "how long shutdown waits for in-flight requests")
	f.BoolVar(&verbose, "verbose", false, "log connection errors")
	f.DurationVar(&retentionEvery, "retention-check-interval", cleaner.DefaultCheckInterval, "time between the background cleaner's rounds of retention and compaction, 1s or more; the first runs 30s after start, or after this if shorter (log.retention.check.interval.ms)")
	f.DurationVar(&rebalanceDelay, "group-initial-rebalance-delay", 3*time.Second, "how long a new consumer group's first rebalance waits for more members (group.initial.rebalance.delay.ms; 0 for none)")
	f.BoolVar(&fetchCopy, "fetch-copy", false, "send fetched records with read and write instead of sendfile (a benchmark baseline)")
	f.StringVar(&metricsListen, "metrics-listen", "", "serve Prometheus metrics at http://HOST:PORT/metrics (docs/metrics.md; port 0 picks a free one)")
	f.BoolVar(&withPprof, "pprof", false, "also serve Go's profiler at /debug/pprof/ on the --metrics-listen address")
	onlyWith(cmd, "pprof", "metrics-listen")
	metricsAcc.flags(cmd, false)
	onlyWith(cmd, "metrics-token", "metrics-listen")
	onlyWith(cmd, "metrics-token-file", "metrics-listen")
	f.StringVar(&logFormat, "log-format", "text", "how log lines are written to standard error: text (key=value) or json (one object a line)")
	f.StringVar(&logLevel, "log-level", "warn", "lowest level logged: debug, info, warn or error (--verbose is debug)")
	oneOf(cmd, "log-format", "text", "json")
	oneOf(cmd, "log-level", "debug", "info", "warn", "error")
	exclusive(cmd, "verbose", "log-level")
	cl.flags(cmd)
	sec.flags(cmd)
	f.StringSliceVar(&superUsers, "super-users", nil, "SASL users no ACL applies to, comma-separated (super.users); everyone else may do only what the ACLs allow (docs/security.md)")
	onlyWith(cmd, "super-users", "sasl-mechanisms")
	limitFlag(cmd, "node-id", 0, math.MaxInt32)
	limitFlag(cmd, "num-partitions", 1, store.MaxPartitions)
	// A request's size is a 32-bit field.
	limitFlag(cmd, "max-request-bytes", 1, math.MaxInt32)
	limitDuration(cmd, "grace", 0, math.MaxInt64)
	limitDuration(cmd, "group-initial-rebalance-delay", 0, math.MaxInt64)
	limitDuration(cmd, "retention-check-interval", time.Second, math.MaxInt64)
	return cmd
}

// withServingHolder adds to a listener's bind error, when the port is in
// use, who holds DIR if its lock file names a live process: most often
// the same serve started twice, which the store's lock would have named
// had the bind not come first (it must: the lock file names the bound
// listener). The lock file is only read.
func withServingHolder(err error, dir string) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	data, rerr := vfs.ReadFileLimit(vfs.Default, filepath.Join(dir, layout.LockFile), 4096)
	if rerr != nil {
		return err
	}
	h, ok := layout.ParseHolder(data)
	if !ok || h.PID <= 0 || syscall.Kill(h.PID, 0) != nil {
		return err // nobody named, or the process named is gone
	}
	return fmt.Errorf("%w (%s is held by %s: it is serving this store already)", err, dir, h)
}

// serveHolder is what serve writes into the store's lock file: its
// command, and the address Kafka clients reach it at (--advertise, else
// the bound listener's).
func serveHolder(ln net.Listener, advertise string) store.Holder {
	addr := advertise
	if addr == "" {
		addr = ln.Addr().String()
	}
	return store.Holder{Command: "seglog serve", Listener: addr}
}

// serveLogger is serve's logger: text or JSON lines on w (--log-format),
// from the --log-level given (the flags' values are checked already), or
// debug with --verbose, which predates --log-level.
func serveLogger(w io.Writer, format, level string, verbose bool) *slog.Logger {
	var l slog.Level
	if verbose {
		l = slog.LevelDebug
	} else if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// checkNodeID refuses a --node-id other than the one dir's
// meta.properties keeps, before anything opens dir: a broker's id does
// not change (Kafka refuses such a start too), and a single node used to
// go on as its old id, saying so only in its first line. A dir without
// the file takes the id.
func checkNodeID(dir string, nodeID int32) error {
	path := filepath.Join(dir, layout.MetaPropertiesFile)
	m, err := layout.ReadMetaProperties(vfs.Default, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case m.NodeID != nodeID:
		return fmt.Errorf("%s names node.id=%d, and serve was given --node-id %d: a node's id does not change once its directory is made; give --node-id %d or leave it out", path, m.NodeID, nodeID, m.NodeID)
	}
	return nil
}
