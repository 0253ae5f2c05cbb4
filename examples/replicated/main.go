// Command replicated runs one node of a 3-node raft cluster on loopback
// whose log is a seglog partition (raftlog.Store), with a tiny HTTP API
// to append values and read them back. Start three (README.md, section
// "Replication with hashicorp/raft"), kill the leader, and a follower
// takes over with every acknowledged value.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	dir := flag.String("dir", "replicated-data", "directory holding each node's partition")
	id := flag.String("id", "n0", "this node's ID, one of -peers")
	peerList := flag.String("peers", "n0=127.0.0.1:7000=127.0.0.1:8000,n1=127.0.0.1:7001=127.0.0.1:8001,n2=127.0.0.1:7002=127.0.0.1:8002",
		"id=raftaddr=httpaddr for each node, comma-separated (127.0.0.1 only)")
	verbose := flag.Bool("v", false, "print raft's log")
	flag.Parse()
	peers, err := parsePeers(*peerList)
	if err != nil {
		log.Fatal(err)
	}
	var self *Peer
	for i := range peers {
		if peers[i].ID == *id {
			self = &peers[i]
		}
	}
	if self == nil {
		log.Fatalf("-id %s is not in -peers", *id)
	}
	if flag.NArg() > 0 {
		log.Fatalf("unexpected arguments %q: every setting is a flag (-h lists them)", flag.Args())
	}
	var logs io.Writer = io.Discard
	if *verbose {
		logs = os.Stderr
	}
	n, err := Start(*dir, *self, peers, true, logs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: raft on %s, HTTP on http://%s\n", self.ID, self.Raft, self.HTTP)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	if err := n.Stop(); err != nil {
		log.Fatal(err)
	}
}

func parsePeers(s string) ([]Peer, error) {
	var out []Peer
	for _, p := range strings.Split(s, ",") {
		f := strings.Split(p, "=")
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: peer %q: want id=raftaddr=httpaddr", ErrBadPeers, p)
		}
		out = append(out, Peer{ID: f[0], Raft: f[1], HTTP: f[2]})
	}
	return out, nil
}
