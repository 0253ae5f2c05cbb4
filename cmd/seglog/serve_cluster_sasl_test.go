package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestServeClusterSASLProcess: seglog serve --voters --sasl-mechanisms
// starts; the user added to DIR's file with seglog users add seeds the
// cluster's users and logs in with SCRAM to produce and consume; a wrong
// password is refused; users list then says the cluster's users are in
// force, and users add says the file is ignored.
func TestServeClusterSASLProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "users", "add", dir, "admin", "--password", "admin-pw")
	raft := freeAddrs(t, 1)[0] // a one-voter cluster is its own controller
	addr, stop := startServe(t, dir, "--voters", "1@"+raft, "--node-id", "1", "--raft-listen", raft,
		"--sasl-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512", "--super-users", "admin")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha256Mechanism()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(admin), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("secure"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(admin), kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for n := 0; n < 10; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 10: %v", n, ctx.Err())
		}
		n += fs.NumRecords()
	}
	wrong, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: "admin", Pass: "nope"}.AsSha256Mechanism()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := wrong.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	wrong.Close()
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}

	out := mustInvoke(t, "", "users", "list", dir).stdout
	if !strings.Contains(out, "In force: the cluster's users") || !strings.Contains(out, "admin") {
		t.Errorf("users list on the node's directory:\n%s", out)
	}
	r := mustInvoke(t, "", "users", "add", dir, "eve", "--password", "eve-pw")
	if !strings.Contains(r.stderr, "this file is ignored") {
		t.Errorf("users add on the node's directory said nothing of the file being ignored: %q", r.stderr)
	}
	if out := mustInvoke(t, "", "users", "list", dir).stdout; strings.Contains(out, "eve") {
		t.Errorf("users list shows eve, added to the ignored file:\n%s", out)
	}
}
