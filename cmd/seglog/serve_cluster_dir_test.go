package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
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
	node := oneVoterWithOrders(t, dir)
	raft := node[len(node)-1] // --raft-listen's

	before := dirSnapshot(t, dir)
	if code, stderr := refusedServe(t, "serve", dir, "--listen", "127.0.0.1:0"); code != 1 || !strings.Contains(stderr, "is a cluster node's") {
		t.Fatalf("serve without --voters on a cluster node's directory: exit %d, stderr %q; want 1 and why", code, stderr)
	}
	for _, args := range [][]string{
		{"topics", dir, "create", "mine", "--partitions", "1"},
		{"topics", dir, "delete", "orders"},
		{"produce", dir, "--topic", "orders"},
		{"produce", filepath.Join(dir, "orders-0")},
		{"clean", dir},
		{"groups", dir, "delete", "g"},
		{"consume", dir, "--topic", "orders", "--group", "g", "--from-beginning"},
	} {
		r := invoke(t, "x\n", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "cluster node's") {
			t.Errorf("seglog %s on a cluster node's directory: exit %d, stderr %q; want a refusal saying why", strings.Join(args, " "), r.code, r.stderr)
		}
		if r.stdout != "" {
			// consume --group printed the records, then its commit was refused.
			t.Errorf("seglog %s on a cluster node's directory printed %q before its refusal", strings.Join(args, " "), r.stdout)
		}
	}
	vfstest.Unchanged(t, "the refused writers", before, dirSnapshot(t, dir))
	// Served as another node, with the DIR as a crash leaves it (no
	// clean-shutdown marker, so an open recovers it, writing): refused
	// before the store is opened.
	if err := vfs.Default.Remove(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatal(err)
	}
	crashed := dirSnapshot(t, dir)
	if r := invoke(t, "", "serve", dir, "--listen", "127.0.0.1:0", "--voters", "2@"+raft, "--node-id", "2", "--raft-listen", raft); r.code != 1 || !strings.Contains(r.stderr, "belongs to another node") {
		t.Errorf("serve as node 2 on node 1's directory: exit %d, stderr %q; want 1 and why", r.code, r.stderr)
	}
	vfstest.Unchanged(t, "serve as another node", crashed, dirSnapshot(t, dir))

	if out := mustInvoke(t, "", "topics", dir, "list").stdout; !strings.Contains(out, "orders") {
		t.Errorf("topics list on the node's directory:\n%s", out)
	}
	mustInvoke(t, "", "users", "add", dir, "admin", "--password", "admin-pw")

	addr, stop := startServe(t, dir, node...)
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

// TestServeClusterWipedDirRefused: in a two-voter cluster, node 2 started
// again over an empty DIR (a wiped disk) exits 1 saying its DIR is not
// the one it registered from, having written no record there; started
// over its own DIR it rejoins, and the records acknowledged before are
// still there.
func TestServeClusterWipedDirRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cluster nodes")
	}
	base := t.TempDir()
	rafts := freeAddrs(t, 2)
	voters := "1@" + rafts[0] + ",2@" + rafts[1]
	node := func(id int) []string {
		return []string{"--voters", voters, "--node-id", fmt.Sprint(id), "--raft-listen", rafts[id-1]}
	}
	dir2 := filepath.Join(base, "node-2")
	// Node 2 in the background: node 1's start waits for a quorum.
	var stderr2 lockedBuffer
	two := seglogProcess(t, &stderr2, append([]string{"serve", dir2, "--listen", "127.0.0.1:0"}, node(2)...)...)
	if err := two.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { two.Process.Kill() })
	addr, stop := startServe(t, filepath.Join(base, "node-1"), node(1)...)
	defer stop()
	if got := produceCreating(t, addr, "orders", "a", "b", "c"); len(got) != 3 || got[2] != 2 {
		t.Fatalf("acknowledged at %v, want offsets 0 to 2", got)
	}
	if err := two.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, two.Wait(), &stderr2); code != 0 {
		t.Fatalf("node 2 exited %d", code)
	}

	wiped := filepath.Join(base, "node-2-wiped")
	var stderr lockedBuffer
	blank := seglogProcess(t, &stderr, append([]string{"serve", wiped, "--listen", "127.0.0.1:0"}, node(2)...)...)
	done := make(chan error, 1)
	if err := blank.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { blank.Process.Kill() })
	go func() { done <- blank.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(t, err, &stderr); code != 1 || !strings.Contains(stderr.String(), "not the one the node registered from") {
			t.Fatalf("node 2 over an empty DIR: exit %d, stderr %q; want 1 and why", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("node 2 over an empty DIR still runs after a minute; stderr %q", stderr.String())
	}
	if _, err := vfs.Default.Stat(filepath.Join(wiped, "orders-0")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused node made orders-0 in the empty DIR: %v", err)
	}

	// Over its own DIR it rejoins: an acks=all write on the RF 2 topic
	// needs it, and its copy holds every record.
	_, stop2 := startServe(t, dir2, node(2)...)
	if got := produceCreating(t, addr, "orders", "d"); len(got) != 1 || got[0] != 3 {
		t.Fatalf("after node 2 rejoined: acknowledged at %v, want offset 3", got)
	}
	if code := stop2(); code != 0 {
		t.Fatalf("node 2 exited %d", code)
	}
	if got := consumedValues(t, filepath.Join(dir2, "orders-0")); strings.Join(got, ",") != "a,b,c,d" {
		t.Errorf("node 2's orders-0 holds %q, want a, b, c, d", got)
	}
}

// TestServeClusterNodeDirLost: a node's DIR whose .cluster_node was
// deleted (a user walking docs/cluster.md did, thinking it resyncs the
// node) or moved away: serve with the node's command line exits 1 saying
// what happened and what to do, and changes nothing in the DIR, left as
// a crash leaves it (no clean-shutdown marker) so that opening the store
// would have written. Put back, the node serves its records again.
// Without the refusal the node served and replicated nothing, its log
// taking the cluster's topics for ones its store had before it joined.
func TestServeClusterNodeDirLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster node")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "node-1")
	node := oneVoterWithOrders(t, dir)

	nodeDir, aside := filepath.Join(dir, ".cluster_node"), filepath.Join(base, "cluster_node-aside")
	if err := vfs.Default.Rename(nodeDir, aside); err != nil {
		t.Fatal(err)
	}
	if err := vfs.Default.Remove(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatal(err)
	}
	before := dirSnapshot(t, dir)
	code, msg := refusedServe(t, append([]string{"serve", dir, "--listen", "127.0.0.1:0"}, node...)...)
	if code != 1 || !strings.Contains(msg, "lost its cluster node's state") ||
		!strings.Contains(msg, nodeDir+" is missing") || !strings.Contains(msg, "Put .cluster_node back") {
		t.Fatalf("serve over a DIR without .cluster_node: exit %d, stderr %q; want 1, what happened and what to do", code, msg)
	}
	vfstest.Unchanged(t, "the refused serve", before, dirSnapshot(t, dir))

	if err := vfs.Default.Rename(aside, nodeDir); err != nil {
		t.Fatal(err)
	}
	addr, stop := startServe(t, dir, node...)
	if got := produceCreating(t, addr, "orders", "d"); len(got) != 1 || got[0] != 3 {
		t.Fatalf("with .cluster_node back: acknowledged at %v, want offset 3 after its three records", got)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}

// oneVoterWithOrders runs a one-voter cluster node in dir (its own
// controller), produces a, b and c to a new topic orders, stops it, and
// returns the flags that start it again as that node.
func oneVoterWithOrders(t *testing.T, dir string) []string {
	t.Helper()
	raft := freeAddrs(t, 1)[0]
	node := []string{"--voters", "1@" + raft, "--node-id", "1", "--raft-listen", raft}
	addr, stop := startServe(t, dir, node...)
	if got := produceCreating(t, addr, "orders", "a", "b", "c"); len(got) != 3 || got[2] != 2 {
		t.Fatalf("acknowledged at %v, want offsets 0 to 2", got)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	return node
}

// refusedServe runs seglog with args, a serve expected to refuse to
// start, and returns its exit code and stderr; it fails the test if the
// serve started (a serve that starts prints its address, a refused one
// exits without a line).
func refusedServe(t *testing.T, args ...string) (code int, stderr string) {
	t.Helper()
	var buf lockedBuffer
	serve := seglogProcess(t, &buf, args...)
	out, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill() })
	if lines := bufio.NewScanner(out); lines.Scan() {
		t.Fatalf("seglog %s started: %s", strings.Join(args, " "), lines.Text())
	}
	err = serve.Wait()
	return exitCode(t, err, &buf), buf.String()
}
