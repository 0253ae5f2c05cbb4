package server

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testenv"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
)

// TestKcatSASLSSL: kcat (librdkafka) with security.protocol=SASL_SSL
// produces and consumes with each SASL mechanism, checking the server's
// certificate against the CA. (librdkafka's SCRAM final message repeats
// its nonce: scramExchange.final.)
func TestKcatSASLSSL(t *testing.T) {
	testenv.LookPath(t, "kcat", "kcat")
	pki := testutil.NewPKI(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := vfs.WriteFileAtomic(vfs.Default, ca, pki.CA); err != nil {
		t.Fatal(err)
	}
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Mechanisms {
		if err := creds.SetPassword("alice", m, "alice-pw", 0); err != nil {
			t.Fatal(err)
		}
	}
	ts := startServer(t, "", Options{TLS: serverTLS(t, pki, false), SASL: &SASLConfig{Mechanisms: Mechanisms, Credentials: creds}, SuperUsers: []string{"alice"}})
	for _, mech := range Mechanisms {
		t.Run(mech, func(t *testing.T) {
			sec := []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=" + mech,
				"-X", "sasl.username=alice", "-X", "sasl.password=alice-pw", "-X", "ssl.ca.location=" + ca}
			topic := "kcat-" + strings.ToLower(mech)
			in, want := kcatLines(50, mech)
			testenv.Kcat(t, []string{ts.addr}, in, append(sec, "-P", "-t", topic, "-K", ":")...)
			out := testenv.Kcat(t, []string{ts.addr}, "", append(sec, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n")...)
			if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
				t.Fatalf("read back %d lines, want %d", len(got), len(want))
			}
		})
	}
}
