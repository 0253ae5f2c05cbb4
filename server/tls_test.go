package server

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
)

// serverTLS writes the PKI's files into a memory FS and loads them as
// seglog serve does.
func serverTLS(t testing.TB, p *testutil.PKI, clientCA bool) *tls.Config {
	t.Helper()
	fs := vfs.NewMem()
	for name, b := range map[string][]byte{"cert.pem": p.ServerCert, "key.pem": p.ServerKey, "ca.pem": p.CA} {
		if err := vfs.WriteFileAtomic(fs, name, b); err != nil {
			t.Fatal(err)
		}
	}
	ca := ""
	if clientCA {
		ca = "ca.pem"
	}
	cfg, err := LoadTLSConfig(fs, "cert.pem", "key.pem", ca)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestTLSProduceConsume(t *testing.T) {
	pki := testutil.NewPKI(t)
	ts := startServer(t, "", Options{TLS: serverTLS(t, pki, false)})
	cl := ts.client(kgo.DialTLSConfig(pki.ClientTLS(t, false)), kgo.AllowAutoTopicCreation())
	want := produceRecords(t, cl, "tls", 20, "over-tls")
	got := consumeAll(t, ts.addr, "tls", 20, kgo.DialTLSConfig(pki.ClientTLS(t, false)))
	sameRecords(t, want, got)
}

// A plaintext client gets no Kafka answer from a TLS listener.
func TestTLSRefusesPlaintext(t *testing.T) {
	pki := testutil.NewPKI(t)
	ts := startServer(t, "", Options{TLS: serverTLS(t, pki, false)})
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err == nil {
		t.Fatal("a plaintext client was answered by a TLS listener")
	}
}

func TestTLSClientCertificateRequired(t *testing.T) {
	pki := testutil.NewPKI(t)
	ts := startServer(t, "", Options{TLS: serverTLS(t, pki, true)})
	// Without a certificate the handshake fails.
	nc, err := tls.Dial("tcp", ts.addr, pki.ClientTLS(t, false))
	if err == nil {
		err = nc.Handshake()
		if err == nil {
			// TLS 1.3 reports the server's refusal on the first read.
			_, err = nc.Read(make([]byte, 1))
		}
		nc.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client without a certificate: %v, want a certificate error", err)
	}
	cl := ts.client(kgo.DialTLSConfig(pki.ClientTLS(t, true)), kgo.AllowAutoTopicCreation())
	want := produceRecords(t, cl, "mtls", 5, "mtls")
	sameRecords(t, want, consumeAll(t, ts.addr, "mtls", 5, kgo.DialTLSConfig(pki.ClientTLS(t, true))))
}

func TestLoadTLSConfigErrors(t *testing.T) {
	pki := testutil.NewPKI(t)
	fs := vfs.NewMem()
	for name, b := range map[string][]byte{"cert.pem": pki.ServerCert, "key.pem": pki.ServerKey, "junk": []byte("not pem")} {
		if err := vfs.WriteFileAtomic(fs, name, b); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ cert, key, ca, want string }{
		{"missing.pem", "key.pem", "", "missing.pem"},
		{"cert.pem", "missing.pem", "", "missing.pem"},
		{"cert.pem", "junk", "", "junk"},
		{"cert.pem", "key.pem", "junk", "no PEM certificate"},
		{"cert.pem", "", "", "both"},
	} {
		_, err := LoadTLSConfig(fs, c.cert, c.key, c.ca)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadTLSConfig(%q, %q, %q) = %v, want an error naming %q", c.cert, c.key, c.ca, err, c.want)
		}
	}
}
