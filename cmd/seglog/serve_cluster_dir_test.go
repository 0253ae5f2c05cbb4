package main

import (
	"bufio"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterNodeDirWrittenOnlyByNode: a cluster node's DIR, its node
// stopped, is not written by anything but the node. serve without
// --voters is refused (it once took acknowledged writes there that the
// cluster overwrote when the node rejoined, without a word), and so are
// the store commands that write (topics create and delete, produce,
// clean, groups delete), each saying why; none changes a byte. The read
// commands and users add (its first users seed the cluster's) still work,
// and the node starts again with its command line and serves its records.
func TestClusterNodeDirWrittenOnlyByNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster node")
	}
	dir := filepath.Join(t.TempDir(), "node-1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raft := ln.Addr().String()
	ln.Close() // serve binds it again; a one-voter cluster is its own controller
	node := []string{"--voters", "1@" + raft, "--node-id", "1", "--raft-listen", raft}
	addr, stop := startServe(t, dir, node...)
	if got := produceCreating(t, addr, "orders", "a", "b", "c"); len(got) != 3 || got[2] != 2 {
		t.Fatalf("acknowledged at %v, want offsets 0 to 2", got)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}

	before := dirSnapshot(t, dir)
	var stderr lockedBuffer
	serve := seglogProcess(t, &stderr, "serve", dir, "--listen", "127.0.0.1:0")
	out, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill() })
	if lines := bufio.NewScanner(out); lines.Scan() {
		t.Fatalf("serve without --voters started on a cluster node's directory: %s", lines.Text())
	}
	if code := exitCode(t, serve.Wait(), &stderr); code != 1 || !strings.Contains(stderr.String(), "is a cluster node's") {
		t.Fatalf("serve without --voters on a cluster node's directory: exit %d, stderr %q; want 1 and why", code, stderr.String())
	}
	for _, args := range [][]string{
		{"topics", dir, "create", "mine", "--partitions", "1"},
		{"topics", dir, "delete", "orders"},
		{"produce", dir, "--topic", "orders"},
		{"produce", filepath.Join(dir, "orders-0")},
		{"clean", dir},
		{"groups", dir, "delete", "g"},
	} {
		r := invoke(t, "x\n", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "is a cluster node's") {
			t.Errorf("seglog %s on a cluster node's directory: exit %d, stderr %q; want a refusal saying why", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	checkUnchanged(t, "the refused writers", before, dirSnapshot(t, dir))

	if out := mustInvoke(t, "", "topics", dir, "list").stdout; !strings.Contains(out, "orders") {
		t.Errorf("topics list on the node's directory:\n%s", out)
	}
	mustInvoke(t, "", "users", "add", dir, "admin", "--password", "admin-pw")

	addr, stop = startServe(t, dir, node...)
	if got := produceCreating(t, addr, "orders", "d"); len(got) != 1 || got[0] != 3 {
		t.Fatalf("the restarted node acknowledged at %v, want offset 3 after its three records", got)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}

// produceCreating produces values to topic through the server at addr,
// creating the topic (one partition) on first use, and returns the
// offsets acknowledged.
func produceCreating(t *testing.T, addr, topic string, values ...string) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var offs []int64
	for _, v := range values {
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).First()
		if err != nil {
			t.Fatalf("producing %q: %v", v, err)
		}
		offs = append(offs, r.Offset)
	}
	return offs
}
