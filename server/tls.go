package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/seglog/seglog/vfs"
)

// maxPEMFile bounds a certificate, key or CA file read by LoadTLSConfig:
// real ones are a few KiB, and a wrong path (a log, a device) must not be
// read whole.
const maxPEMFile = 1 << 20

// LoadTLSConfig reads a PEM certificate chain and its key for the Kafka
// listener (Options.TLS). With a clientCAFile, clients must present a
// certificate signed by one of its CAs (Kafka's ssl.client.auth=required);
// without one, no client certificate is asked for. Files are read through
// fs so that a command line can refuse a bad file before it opens the
// store.
func LoadTLSConfig(fs vfs.FS, certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("server: TLS needs both a certificate and a key file")
	}
	certPEM, err := vfs.ReadFileLimit(fs, certFile, maxPEMFile)
	if err != nil {
		return nil, fmt.Errorf("server: TLS certificate: %w", err)
	}
	keyPEM, err := vfs.ReadFileLimit(fs, keyFile, maxPEMFile)
	if err != nil {
		return nil, fmt.Errorf("server: TLS key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("server: TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		caPEM, err := vfs.ReadFileLimit(fs, clientCAFile, maxPEMFile)
		if err != nil {
			return nil, fmt.Errorf("server: TLS client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("server: TLS client CA %s: no PEM certificate in it", clientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
