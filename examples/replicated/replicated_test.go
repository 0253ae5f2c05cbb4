package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

var client = &http.Client{Timeout: 15 * time.Second}

// appendValue posts v to whichever node leads, following 421 answers,
// and reports whether it was acknowledged before the deadline.
func appendValue(t *testing.T, peers []Peer, up map[string]bool, v string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range peers {
			if !up[p.ID] {
				continue
			}
			resp, err := client.Post("http://"+p.HTTP+"/append", "text/plain", strings.NewReader(v))
			if err != nil {
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%q was not acknowledged within 30s", v)
}

// readPeer reads every command a node has applied, waiting until it has
// at least want of them.
func readPeer(t *testing.T, p Peer, want int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + p.HTTP + "/read?from=1&max=10000")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var vals []string
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			if _, v, ok := strings.Cut(line, "\t"); ok {
				vals = append(vals, v)
			}
		}
		if len(vals) >= want || time.Now().After(deadline) {
			return vals
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func status(p Peer) string {
	resp, err := client.Get("http://" + p.HTTP + "/status")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestFailover runs the example's three nodes on loopback, kills the
// leader after 40 acknowledged appends, appends 40 more through the new
// leader, restarts the old one from its directory, and checks that every
// node holds all 80 acknowledged values in order.
func TestFailover(t *testing.T) {
	dir := t.TempDir()
	var peers []Peer
	for i := range 3 {
		peers = append(peers, Peer{ID: fmt.Sprintf("n%d", i), Raft: freeAddr(t), HTTP: freeAddr(t)})
	}
	nodes := map[string]*Node{}
	up := map[string]bool{}
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
	}()
	for _, p := range peers {
		n, err := Start(dir, p, peers, true, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		nodes[p.ID], up[p.ID] = n, true
	}
	var acked []string
	for i := range 40 {
		v := fmt.Sprintf("value-%d", i)
		appendValue(t, peers, up, v)
		acked = append(acked, v)
	}
	var leader Peer
	for _, p := range peers {
		if strings.HasPrefix(status(p), "Leader") {
			leader = p
		}
	}
	if leader.ID == "" {
		t.Fatal("no node reports itself leader")
	}
	if err := nodes[leader.ID].Stop(); err != nil {
		t.Fatal(err)
	}
	delete(nodes, leader.ID)
	up[leader.ID] = false
	for i := 40; i < 80; i++ {
		v := fmt.Sprintf("value-%d", i)
		appendValue(t, peers, up, v)
		acked = append(acked, v)
	}
	n, err := Start(dir, leader, peers, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	nodes[leader.ID], up[leader.ID] = n, true
	for _, p := range peers {
		got := readPeer(t, p, len(acked))
		if strings.Join(got, ",") != strings.Join(acked, ",") {
			t.Fatalf("%s holds %d values %v, want the %d acknowledged ones in order", p.ID, len(got), got, len(acked))
		}
	}
}

// TestReadWaitsForIndex: a follower applies an entry only after the
// leader's next message, so the README's walk-through reads with the index
// /append answered: /read?wait=I answers once this node has applied I, on
// every node, and 504 when it does not within readWaitLimit.
func TestReadWaitsForIndex(t *testing.T) {
	defer func(d time.Duration) { readWaitLimit = d }(readWaitLimit)
	readWaitLimit = 300 * time.Millisecond // set before any node serves
	dir := t.TempDir()
	var peers []Peer
	for i := range 3 {
		peers = append(peers, Peer{ID: fmt.Sprintf("n%d", i), Raft: freeAddr(t), HTTP: freeAddr(t)})
	}
	for _, p := range peers {
		n, err := Start(dir, p, peers, true, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Stop()
	}
	up := map[string]bool{"n0": true, "n1": true, "n2": true}
	for i := range 5 {
		v := fmt.Sprintf("v%d", i)
		index := appendIndex(t, peers, up, v)
		for _, p := range peers {
			code, body := get(t, fmt.Sprintf("http://%s/read?from=%d&wait=%d", p.HTTP, index, index))
			if code != http.StatusOK || body != fmt.Sprintf("%d\t%s\n", index, v) {
				t.Fatalf("%s: /read?wait=%d right after the append: %d %q, want %q", p.ID, index, code, body, v)
			}
		}
	}
	code, body := get(t, "http://"+peers[0].HTTP+"/read?wait=1000000")
	if code != http.StatusGatewayTimeout || !strings.Contains(body, "not applied") {
		t.Fatalf("/read?wait= an index nobody has: %d %q, want 504", code, body)
	}
}

// appendIndex posts v to whichever node leads and returns the index the
// leader answered.
func appendIndex(t *testing.T, peers []Peer, up map[string]bool, v string) uint64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range peers {
			if !up[p.ID] {
				continue
			}
			resp, err := client.Post("http://"+p.HTTP+"/append", "text/plain", strings.NewReader(v))
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				i, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
				if err != nil {
					t.Fatalf("/append answered %q", b)
				}
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%q was not acknowledged within 30s", v)
	return 0
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
