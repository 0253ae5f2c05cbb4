package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/internal/testutil"
)

// writePKI writes a test PKI's PEM files into dir and returns their paths.
func writePKI(t *testing.T, dir string, pki *testutil.PKI) (cert, key, ca string) {
	t.Helper()
	cert, key, ca = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem")
	writeVFS(t, cert, pki.ServerCert)
	writeVFS(t, key, pki.ServerKey)
	writeVFS(t, ca, pki.CA)
	return cert, key, ca
}

// TestServeTLSFlagsRefused: a TLS file that is missing or not what it
// should be is a usage error, and the store directory is not created.
func TestServeTLSFlagsRefused(t *testing.T) {
	files := t.TempDir()
	cert, key, ca := writePKI(t, files, testutil.NewPKI(t))
	junk := filepath.Join(files, "junk")
	writeVFS(t, junk, []byte("not a certificate"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", filepath.Join(files, "missing"), "--tls-key", key}, "missing"},
		{[]string{"--tls-cert", cert, "--tls-key", junk}, "junk"},
		{[]string{"--tls-cert", cert}, "tls-key"},
		{[]string{"--tls-cert", cert, "--tls-key", key, "--tls-client-ca", junk}, "no PEM certificate"},
		{[]string{"--tls-client-ca", ca}, "tls-cert"},
	} {
		dir := filepath.Join(t.TempDir(), "store")
		r := invoke(t, "", append([]string{"serve", dir, "--listen", "127.0.0.1:0"}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want a usage error naming %q", c.args, r.code, r.stderr, c.want)
		}
		if exists(dir) {
			t.Errorf("serve %v created %s", c.args, dir)
		}
	}
}

// TestServeTLSProcess: seglog serve with --tls-cert, --tls-key and
// --tls-client-ca answers a kgo client presenting a certificate.
func TestServeTLSProcess(t *testing.T) {
	pki := testutil.NewPKI(t)
	cert, key, ca := writePKI(t, t.TempDir(), pki)
	addr, stop := startServe(t, filepath.Join(t.TempDir(), "store"), "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", ca)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(pki.ClientTLS(t, true)),
		kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("secret")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}
