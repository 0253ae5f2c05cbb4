package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
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
	checkServeRefusals(t, []serveRefusal{
		{[]string{"--tls-cert", filepath.Join(files, "missing"), "--tls-key", key}, "missing"},
		{[]string{"--tls-cert", cert, "--tls-key", junk}, "junk"},
		{[]string{"--tls-cert", cert}, "tls-key"},
		{[]string{"--tls-cert", cert, "--tls-key", key, "--tls-client-ca", junk}, "no PEM certificate"},
		{[]string{"--tls-client-ca", ca}, "tls-cert"},
	})
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

// TestServeNonLoopbackNeedsSecurity: without TLS and client
// authentication, serve refuses a non-loopback address unless --insecure,
// which logs a warning.
func TestServeNonLoopbackNeedsSecurity(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:9092", "example.com:9092"} {
		dir := filepath.Join(t.TempDir(), "store")
		r := invoke(t, "", "serve", dir, "--listen", listen)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--insecure") {
			t.Errorf("serve --listen %s: exit %d, stderr %q; want a usage error naming --insecure", listen, r.code, r.stderr)
		}
		if exists(dir) {
			t.Errorf("serve --listen %s created %s", listen, dir)
		}
	}
	pki := testutil.NewPKI(t)
	cert, key, ca := writePKI(t, t.TempDir(), pki)
	for _, c := range []struct {
		args         []string
		ok, insecure bool
	}{
		{[]string{"--listen", "127.0.0.1:0"}, true, false},
		{[]string{"--listen", "localhost:0"}, true, false},
		{[]string{"--listen", "0.0.0.0:0", "--insecure"}, true, true},
		{[]string{"--listen", "0.0.0.0:0", "--tls-cert", cert, "--tls-key", key}, false, false},
		{[]string{"--listen", "0.0.0.0:0", "--tls-cert", cert, "--tls-key", key, "--insecure"}, true, true},
		{[]string{"--listen", "0.0.0.0:0", "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", ca}, true, false},
		{[]string{"--listen", "0.0.0.0:0", "--tls-cert", cert, "--tls-key", key, "--sasl-mechanisms", "SCRAM-SHA-256"}, true, false},
		{[]string{"--listen", "0.0.0.0:0", "--sasl-mechanisms", "SCRAM-SHA-256"}, false, false},
	} {
		cmd := newServeCmd()
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		var sec securityFlags
		sec.tlsCert, _ = cmd.Flags().GetString("tls-cert")
		sec.tlsKey, _ = cmd.Flags().GetString("tls-key")
		sec.tlsClientCA, _ = cmd.Flags().GetString("tls-client-ca")
		sec.saslMechanisms, _ = cmd.Flags().GetString("sasl-mechanisms")
		sec.insecure, _ = cmd.Flags().GetBool("insecure")
		listen, _ := cmd.Flags().GetString("listen")
		err := sec.check(cmd, t.TempDir(), listen, false)
		if (err == nil) != c.ok || sec.insecureOn != c.insecure {
			t.Errorf("%v: check = %v, insecure %v; want ok %v, insecure %v", c.args, err, sec.insecureOn, c.ok, c.insecure)
			continue
		}
		if err != nil {
			continue
		}
		var logs lockedBuffer
		var opts server.Options
		sec.apply(&opts, slog.New(slog.NewTextHandler(&logs, nil)), listen)
		if warned := strings.Contains(logs.String(), "--insecure"); warned != c.insecure {
			t.Errorf("%v: warning logged %v, want %v: %q", c.args, warned, c.insecure, logs.String())
		}
	}
}

// TestServeSASLFlagsRefused: a mechanism serve does not speak and a
// damaged credentials file are refused before the store is opened.
func TestServeSASLFlagsRefused(t *testing.T) {
	checkServeRefusals(t, []serveRefusal{
		{[]string{"--sasl-mechanisms", "GSSAPI"}, "GSSAPI"},
		{[]string{"--sasl-mechanisms", "PLAIN,PLAIN"}, "twice"},
	})
	dir := t.TempDir()
	mustInvoke(t, "", "users", "add", dir, "alice", "--password", "pw")
	name := filepath.Join(dir, server.CredentialsFile)
	b := readVFS(t, name)
	b[12] ^= 1
	writeVFS(t, name, b)
	before := dirSnapshot(t, dir)
	r := invoke(t, "", "serve", dir, "--listen", "127.0.0.1:0", "--sasl-mechanisms", "PLAIN")
	if r.code == 0 || !strings.Contains(r.stderr, name) || !strings.Contains(r.stderr, "at byte") {
		t.Errorf("serve on a damaged credentials file: exit %d, stderr %q; want an error naming the file and byte", r.code, r.stderr)
	}
	if after := dirSnapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("%s changed", dir)
	}
	for _, args := range [][]string{{"users", "list", dir}, {"users", "add", dir, "bob", "--password", "x"}} {
		if r := invoke(t, "", args...); r.code == 0 || !strings.Contains(r.stderr, "at byte") {
			t.Errorf("seglog %v on a damaged credentials file: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

// TestServeSASLProcess: users added with seglog users log in to seglog
// serve --sasl-mechanisms with franz-go's SCRAM and PLAIN; a wrong
// password is refused.
func TestServeSASLProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "users", "add", dir, "alice", "--password", "alice-pw")
	mustInvoke(t, "", "users", "add", dir, "alice", "--password", "alice-pw", "--mechanism", "SCRAM-SHA-512")
	mustInvoke(t, "", "users", "add", dir, "bob", "--password", "bob-pw", "--mechanism", "PLAIN")
	addr, stop := startServe(t, dir, "--sasl-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "--super-users", "alice,User:bob")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, mech := range []sasl.Mechanism{
		scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism(),
		scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism(),
		plain.Auth{User: "bob", Pass: "bob-pw"}.AsMechanism(),
	} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"))
		if err != nil {
			t.Fatal(err)
		}
		err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte(mech.Name())}).FirstErr()
		cl.Close()
		if err != nil {
			t.Fatalf("%s: %v", mech.Name(), err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	// alice has no PLAIN credential: a PLAIN login is refused.
	if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("PLAIN without a PLAIN credential: %v", err)
	}
	cl.Close()
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}

// TestUsersCommand: add, list and delete; list writes nothing; a
// directory that is not a store, or that a server holds, is refused.
func TestUsersCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "users", "add", dir, "alice", "--password", "a")
	mustInvoke(t, "", "users", dir, "add", "bob", "--password", "b", "--mechanism", "SCRAM-SHA-512")
	mustInvoke(t, "", "users", "add", dir, "bob", "--password", "b", "--mechanism", "PLAIN")
	before := dirSnapshot(t, dir)
	out := mustInvoke(t, "", "users", "list", dir).stdout
	for _, want := range []string{"alice  SCRAM-SHA-256  4096", "bob    PLAIN", "bob    SCRAM-SHA-512"} {
		if !strings.Contains(out, want) {
			t.Errorf("list: %q lacks %q", out, want)
		}
	}
	if strings.Contains(string(readVFS(t, filepath.Join(dir, server.CredentialsFile))), "\x00b\x00") {
		t.Error("a password is in the credentials file")
	}
	if after := dirSnapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("users list changed %s", dir)
	}
	mustInvoke(t, "", "users", "delete", dir, "bob", "--mechanism", "PLAIN")
	mustInvoke(t, "", "users", "delete", dir, "alice")
	out = mustInvoke(t, "", "users", "list", dir).stdout
	if strings.Contains(out, "alice") || strings.Contains(out, "PLAIN") || !strings.Contains(out, "SCRAM-SHA-512") {
		t.Errorf("after deletes: %q", out)
	}
	if r := invoke(t, "", "users", "delete", dir, "nobody"); r.code == 0 || !strings.Contains(r.stderr, "no such user") {
		t.Errorf("delete nobody: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := invoke(t, "", "users", "add", dir, "x", "--password", "p", "--mechanism", "MD5"); r.code != exitUsage {
		t.Errorf("add --mechanism MD5: exit %d, want a usage error", r.code)
	}
	if r := invoke(t, "", "users", "add", dir, "x"); r.code != exitUsage || !strings.Contains(r.stderr, "password") {
		t.Errorf("add without --password: exit %d, stderr %q", r.code, r.stderr)
	}
	missing := filepath.Join(t.TempDir(), "nothing")
	for _, args := range [][]string{{"users", "list", missing}, {"users", "delete", missing, "bob"}} {
		if r := invoke(t, "", args...); r.code == 0 || exists(missing) {
			t.Errorf("seglog %v on a missing directory: exit %d, exists %v", args, r.code, exists(missing))
		}
	}
	// A server holds the store: add is refused with the protocol's way.
	addr, stop := startServe(t, dir)
	if r := invoke(t, "", "users", "add", dir, "carol", "--password", "c"); r.code == 0 || !strings.Contains(r.stderr, "kafka-configs.sh --bootstrap-server "+addr) {
		t.Errorf("add beside a server: exit %d, stderr %q", r.code, r.stderr)
	}
	mustInvoke(t, "", "users", "list", dir)
	stop()
}

// TestServeDamagedACLsAndQuotasRefused: a damaged ACL file (read with SASL
// on) or client-quotas file is refused in serve's flag checks, naming the
// file and the byte, before the store is opened: DIR is left as it was.
func TestServeDamagedACLsAndQuotasRefused(t *testing.T) {
	for _, c := range []struct {
		file string
		args []string
	}{
		{server.ACLFile, []string{"--sasl-mechanisms", "PLAIN"}},
		{server.QuotasFile, nil},
	} {
		// A store serve would open, and write to, had the file passed.
		dir := filepath.Join(t.TempDir(), "store")
		mustInvoke(t, "", "topics", "create", dir, "t", "--partitions", "1")
		name := filepath.Join(dir, c.file)
		writeVFS(t, name, []byte("not a seglog file at all"))
		before := dirSnapshot(t, dir)
		r := invoke(t, "", append([]string{"serve", dir, "--listen", "127.0.0.1:0"}, c.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, name) || !strings.Contains(r.stderr, "at byte 0") {
			t.Errorf("serve on a damaged %s: exit %d, stderr %q; want an error naming the file and byte", c.file, r.code, r.stderr)
		}
		if after := dirSnapshot(t, dir); !maps.Equal(before, after) {
			t.Errorf("serve on a damaged %s changed %s", c.file, dir)
		}
	}
}

// serveRefusal is flags serve must refuse as a usage error naming want.
type serveRefusal struct {
	args []string
	want string
}

// checkServeRefusals runs serve with each case's flags on a DIR that
// does not exist: a usage error naming the case's want, and DIR not
// created.
func checkServeRefusals(t *testing.T, cases []serveRefusal) {
	t.Helper()
	for _, c := range cases {
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
