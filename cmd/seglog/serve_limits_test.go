package main

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/server"
)

// TestServeHostileFlags: --max-connections, --max-connections-per-ip and
// --sasl-session-lifetime reach the server's options (0 is no bound,
// which Options spell negative), and bad values are usage errors that
// create nothing.
func TestServeHostileFlags(t *testing.T) {
	for _, c := range []struct {
		args       []string
		max, perIP int
		lifetime   time.Duration
	}{
		{nil, server.DefaultMaxConnections, server.DefaultMaxConnectionsPerIP, 0},
		{[]string{"--max-connections", "5", "--max-connections-per-ip", "2"}, 5, 2, 0},
		{[]string{"--max-connections", "0", "--max-connections-per-ip", "0"}, -1, -1, 0},
		{[]string{"--sasl-mechanisms", "PLAIN", "--sasl-session-lifetime", "90s"}, server.DefaultMaxConnections, server.DefaultMaxConnectionsPerIP, 90 * time.Second},
	} {
		cmd := &cobra.Command{}
		var sec securityFlags
		sec.flags(cmd)
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		if err := sec.check(cmd, t.TempDir(), "127.0.0.1:0", false); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		var opts server.Options
		sec.apply(&opts, slog.New(slog.NewTextHandler(io.Discard, nil)), "127.0.0.1:0")
		lifetime := time.Duration(0)
		if opts.SASL != nil {
			lifetime = opts.SASL.SessionLifetime
		}
		if opts.MaxConnections != c.max || opts.MaxConnectionsPerIP != c.perIP || lifetime != c.lifetime {
			t.Errorf("%v: max %d, per ip %d, lifetime %v; want %d, %d, %v", c.args,
				opts.MaxConnections, opts.MaxConnectionsPerIP, lifetime, c.max, c.perIP, c.lifetime)
		}
	}
	checkServeRefusals(t, []serveRefusal{
		{[]string{"--sasl-session-lifetime", "1m"}, "sasl-mechanisms"},
		{[]string{"--max-connections", "-1"}, "max-connections"},
		{[]string{"--max-connections-per-ip", "-1"}, "max-connections-per-ip"},
		{[]string{"--sasl-mechanisms", "PLAIN", "--sasl-session-lifetime", "-1s"}, "sasl-session-lifetime"},
	})
}

// TestServeMaxConnectionsPerIP: a serve process with
// --max-connections-per-ip 1 answers one connection from this address and
// closes a second as it is accepted.
func TestServeMaxConnectionsPerIP(t *testing.T) {
	addr, stop := startServe(t, t.TempDir(), "--max-connections-per-ip", "1")
	defer stop()
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	first.SetDeadline(time.Now().Add(30 * time.Second))
	// ApiVersions v0: key 18, version 0, correlation 1, no client id.
	req := binary.BigEndian.AppendUint32(nil, 10)
	req = append(req, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff)
	if _, err := first.Write(req); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(first, size[:]); err != nil {
		t.Fatalf("the first connection was not answered: %v", err)
	}
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	second.SetDeadline(time.Now().Add(30 * time.Second))
	if n, err := second.Read(size[:]); err == nil {
		t.Fatalf("the second connection read %d bytes, want it closed", n)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the second connection is still open")
	}
}
