package main

import (
	"crypto/tls"
	"log/slog"
	"math"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/internal/cluster"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/vfs"
)

// securityFlags are serve's TLS and SASL flags (docs/security.md). Each
// is checked, and every file they name read, before the listener is
// bound or the store opened: a missing or bad file is a usage error and
// nothing is created.
type securityFlags struct {
	tlsCert, tlsKey, tlsClientCA string
	saslMechanisms               string
	insecure                     bool
	// Hostile clients (docs/security.md): bounds on connections, and
	// KIP-368's session lifetime.
	maxConns, maxConnsPerIP int
	sessionLifetime         time.Duration

	tls        *tls.Config
	sasl       *server.SASLConfig
	insecureOn bool // --insecure let a non-loopback address be served
	// cluster is --voters: the users are the cluster's, seeded from
	// DIR's file (clusterSASL).
	cluster bool
}

func (s *securityFlags) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.tlsCert, "tls-cert", "", "PEM certificate (chain) the Kafka listener presents: clients connect with TLS (security.protocol=SSL)")
	f.StringVar(&s.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&s.tlsClientCA, "tls-client-ca", "", "PEM CA certificates: clients must present a certificate signed by one (ssl.client.auth=required)")
	f.StringVar(&s.saslMechanisms, "sasl-mechanisms", "", "require SASL authentication with these mechanisms, comma-separated: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (users: seglog users add DIR)")
	f.BoolVar(&s.insecure, "insecure", false, "serve a non-loopback --listen address without TLS and client authentication (a warning is logged)")
	f.IntVar(&s.maxConns, "max-connections", server.DefaultMaxConnections, "connections served at once; one more is closed as it is accepted (max.connections; 0 for no bound)")
	f.IntVar(&s.maxConnsPerIP, "max-connections-per-ip", server.DefaultMaxConnectionsPerIP, "connections served at once from one IP address (max.connections.per.ip; 0 for no bound)")
	f.DurationVar(&s.sessionLifetime, "sasl-session-lifetime", 0, "how long a SASL login lasts: clients log in again on the connection before it ends, and a connection whose login ended is closed at its next request (connections.max.reauth.ms, KIP-368; 0 for the connection's life)")
	cmd.MarkFlagsRequiredTogether("tls-cert", "tls-key")
	onlyWith(cmd, "tls-client-ca", "tls-cert")
	onlyWith(cmd, "sasl-session-lifetime", "sasl-mechanisms")
	limitDuration(cmd, "sasl-session-lifetime", 0, math.MaxInt64)
	limitFlag(cmd, "max-connections", 0, math.MaxInt32)
	limitFlag(cmd, "max-connections-per-ip", 0, math.MaxInt32)
}

// noBound is the flags' 0 ("no bound") as Options spell it: their zero is
// the default.
func noBound(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// check reads the TLS files and the store's credentials, ACLs and client
// quotas, and refuses a non-loopback listener that would serve anyone in the clear.
func (s *securityFlags) check(cmd *cobra.Command, dir, listen string, cluster bool) error {
	s.cluster = cluster
	if s.saslMechanisms != "" {
		mechs, err := checkMechanismsFlag(cmd, s.saslMechanisms)
		if err != nil {
			return err
		}
		// A damaged credentials file is refused before the store is
		// opened; a missing one is no users yet. In a cluster it seeds
		// the cluster's users, and is ignored once they are in force.
		creds, err := server.LoadCredentials(vfs.Default, dir)
		if err != nil {
			return err
		}
		s.sasl = &server.SASLConfig{Mechanisms: mechs, Credentials: creds, SessionLifetime: s.sessionLifetime}
	}
	if !cluster {
		// The files the server would read as it starts, refused here
		// with their file and byte before anything is opened or created;
		// both reads only read. A cluster keeps its ACLs and quotas in
		// the replicated metadata instead.
		if s.sasl != nil {
			if _, err := server.ReadACLs(vfs.Default, dir); err != nil {
				return err
			}
		}
		if _, err := server.LoadQuotas(vfs.Default, dir); err != nil {
			return err
		}
	}
	if s.tlsCert != "" {
		cfg, err := server.LoadTLSConfig(vfs.Default, s.tlsCert, s.tlsKey, s.tlsClientCA)
		if err != nil {
			return usageErrorf(cmd, "%v", err)
		}
		s.tls = cfg
	}
	secure := s.tls != nil && (s.sasl != nil || s.tlsClientCA != "")
	// An empty host is every interface; a name other than localhost is
	// taken as reachable from elsewhere.
	if host, _, _ := net.SplitHostPort(listen); !secure && !isLoopback(host) {
		if !s.insecure {
			return usageErrorf(cmd, "--listen %s is not a loopback address: serving it needs TLS and client authentication (--tls-cert and --tls-key, with --sasl-mechanisms or --tls-client-ca), or --insecure to serve it as it is (docs/security.md)", listen)
		}
		s.insecureOn = true
	}
	return nil
}

// apply sets the server's options from the checked flags, and says so
// when --insecure was needed.
func (s *securityFlags) apply(opts *server.Options, logger *slog.Logger, listen string) {
	opts.TLS = s.tls
	opts.SASL = s.sasl
	opts.MaxConnections = noBound(s.maxConns)
	opts.MaxConnectionsPerIP = noBound(s.maxConnsPerIP)
	if s.insecureOn {
		logger.Warn("seglog serve: --insecure: serving a non-loopback address without TLS and client authentication; anyone who reaches it can read, write and delete every topic",
			"listen", listen, "tls", s.tls != nil, "sasl", s.sasl != nil)
	}
	// In a cluster the node says so, knowing the cluster's users.
	if s.sasl != nil && !s.cluster && len(s.sasl.Credentials.List()) == 0 {
		logger.Warn("seglog serve: --sasl-mechanisms with no users: no client can log in until one is added (seglog users add DIR NAME --password P, before serve starts)")
	}
}

// clusterSASL is sasl with the cluster node's credentials, the users in
// the replicated metadata, in place of DIR's file, which seeds them
// (docs/security.md, "In a cluster"); nil for nil.
func clusterSASL(sasl *server.SASLConfig, n *cluster.Node) *server.SASLConfig {
	if sasl == nil {
		return nil
	}
	c := *sasl
	c.Credentials = n.Credentials()
	return &c
}

// saslSeeds is the credentials file SASL was configured with, which a
// cluster node proposes as the cluster's first users; nil without SASL.
func saslSeeds(sasl *server.SASLConfig) *server.Credentials {
	if sasl == nil {
		return nil
	}
	file, _ := sasl.Credentials.(*server.Credentials)
	return file
}
