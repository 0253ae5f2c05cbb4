package main

import (
	"crypto/tls"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/vfs"
)

// securityFlags are serve's TLS and SASL flags (docs/security.md). Each
// is checked, and every file they name read, before the listener is
// bound or the store opened: a missing or bad file is a usage error and
// nothing is created.
type securityFlags struct {
	tlsCert, tlsKey, tlsClientCA string

	tls *tls.Config
}

func (s *securityFlags) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.tlsCert, "tls-cert", "", "PEM certificate (chain) the Kafka listener presents: clients connect with TLS (security.protocol=SSL)")
	f.StringVar(&s.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&s.tlsClientCA, "tls-client-ca", "", "PEM CA certificates: clients must present a certificate signed by one (ssl.client.auth=required)")
	cmd.MarkFlagsRequiredTogether("tls-cert", "tls-key")
	onlyWith(cmd, "tls-client-ca", "tls-cert")
}

// check reads the TLS files.
func (s *securityFlags) check(cmd *cobra.Command) error {
	if s.tlsCert == "" {
		return nil
	}
	cfg, err := server.LoadTLSConfig(vfs.Default, s.tlsCert, s.tlsKey, s.tlsClientCA)
	if err != nil {
		return usageErrorf(cmd, "%v", err)
	}
	s.tls = cfg
	return nil
}

// apply sets the server's options from the checked flags.
func (s *securityFlags) apply(opts *server.Options) {
	opts.TLS = s.tls
}
