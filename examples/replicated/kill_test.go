package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain runs the example's main instead of the tests when
// TestKillLeader starts this binary as a node.
func TestMain(m *testing.M) {
	if args := os.Getenv("REPLICATED_NODE_ARGS"); args != "" {
		os.Args = append([]string{"replicated"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// proc is one node running as its own process.
type proc struct {
	peer Peer
	cmd  *exec.Cmd
	out  bytes.Buffer
}

func startProc(t *testing.T, dir, peers string, p Peer) *proc {
	t.Helper()
	n := &proc{peer: p}
	n.cmd = exec.Command(os.Args[0])
	n.cmd.Env = append(os.Environ(), "REPLICATED_NODE_ARGS=-dir "+dir+" -id "+p.ID+" -peers "+peers)
	n.cmd.Stdout, n.cmd.Stderr = &n.out, &n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for status(p) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within 30s: %s", p.ID, n.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

// loader appends distinct values to whichever node leads, once each: a
// value answered 200 is acknowledged; one whose request failed (the node
// died, or raft could not say) is uncertain and never sent again, so the
// log may hold it once or not at all, and nothing else.
type loader struct {
	mu        sync.Mutex
	acked     []string
	uncertain map[string]bool
	stop      chan struct{}
	done      chan struct{}
}

func (l *loader) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

func (l *loader) run(peers []Peer) {
	defer close(l.done)
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		v := fmt.Sprintf("k-%d", i)
	send:
		for _, p := range peers {
			resp, err := client.Post("http://"+p.HTTP+"/append", "text/plain", strings.NewReader(v))
			if err != nil {
				if strings.Contains(err.Error(), "connection refused") {
					continue // not sent: this node is down
				}
				l.mu.Lock()
				l.uncertain[v] = true
				l.mu.Unlock()
				break send
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				l.mu.Lock()
				l.acked = append(l.acked, v)
				l.mu.Unlock()
				break send
			case http.StatusMisdirectedRequest:
				continue // a follower that did not store it
			default:
				l.mu.Lock()
				l.uncertain[v] = true
				l.mu.Unlock()
				time.Sleep(50 * time.Millisecond)
				break send
			}
		}
	}
}

// check reports what is wrong with vals, a node's log: every acknowledged
// value must be there in acknowledgement order, and nothing but
// acknowledged and uncertain values, each at most once.
func (l *loader) check(vals []string) error {
	seen := map[string]bool{}
	next := 0
	for _, v := range vals {
		if seen[v] {
			return fmt.Errorf("%s twice", v)
		}
		seen[v] = true
		switch {
		case next < len(l.acked) && v == l.acked[next]:
			next++
		case l.uncertain[v]:
		default:
			return fmt.Errorf("%s out of order or never sent", v)
		}
	}
	if next < len(l.acked) {
		return fmt.Errorf("holds %d of the %d acknowledged values; %s is missing", next, len(l.acked), l.acked[next])
	}
	return nil
}

// TestKillLeader is the README's walk-through with real processes: three
// nodes, appends running, the leader killed with SIGKILL, appends go on
// through a new leader, the killed node restarted from its directory.
// Every node ends with every acknowledged value, in order, and nothing
// else but the few whose answer the kill cut off.
func TestKillLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	dir := t.TempDir()
	var peers []Peer
	var spec []string
	for i := range 3 {
		p := Peer{ID: fmt.Sprintf("n%d", i), Raft: freeAddr(t), HTTP: freeAddr(t)}
		peers = append(peers, p)
		spec = append(spec, p.ID+"="+p.Raft+"="+p.HTTP)
	}
	procs := map[string]*proc{}
	defer func() {
		for _, n := range procs {
			n.cmd.Process.Kill()
			n.cmd.Wait()
		}
	}()
	for _, p := range peers {
		procs[p.ID] = startProc(t, dir, strings.Join(spec, ","), p)
	}
	l := &loader{uncertain: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go l.run(peers)
	waitAcked := func(n int) {
		deadline := time.Now().Add(60 * time.Second)
		for l.ackedCount() < n {
			if time.Now().After(deadline) {
				t.Fatalf("only %d values acknowledged within 60s, want %d", l.ackedCount(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitAcked(50)
	var leader Peer
	for _, p := range peers {
		if strings.HasPrefix(status(p), "Leader") {
			leader = p
		}
	}
	if leader.ID == "" {
		t.Fatal("no node reports itself leader")
	}
	k := procs[leader.ID]
	if err := k.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	k.cmd.Wait()
	delete(procs, leader.ID)
	atKill := l.ackedCount()
	waitAcked(atKill + 50)
	close(l.stop)
	<-l.done
	procs[leader.ID] = startProc(t, dir, strings.Join(spec, ","), leader)
	for _, p := range peers {
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := l.check(readPeer(t, p, 0))
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", p.ID, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("leader %s killed after %d acknowledged values; %d acknowledged in all, %d uncertain", leader.ID, atKill, len(l.acked), len(l.uncertain))
}
