package multiraft

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestStaleReplicaStopsItsGroup: a replica started again over storage
// that lacks entries it acknowledged (as an older copy of its DIR would)
// hears its leader name a commit index past its last entry, where etcd
// raft panics. The panic stops that group (Config.Stopped gets
// ErrRaftPanic) instead of the process: a walk saw a whole node die on a
// stack trace. The node's other group goes on committing.
func TestStaleReplicaStopsItsGroup(t *testing.T) {
	stopped := make(chan error, 16)
	c := newCluster(t, 3, 2, Config{Stopped: func(g uint64, err error) {
		select {
		case stopped <- fmt.Errorf("group %d: %w", g, err):
		default:
		}
	}})
	c.waitLeaders()
	for i := range 5 {
		c.propose(1, fmt.Sprintf("a%d", i))
	}
	c.waitAgree(1, 5)
	m := c.members[3]
	// Stopped, node 3 leads nothing: the others elect among themselves.
	c.stop(m)
	m.storage[1] = NewMemoryStorage() // the older copy: none of group 1's entries
	c.start(m)
	err := <-stopped
	if !errors.Is(err, ErrRaftPanic) {
		t.Fatalf("stopped with %v, want ErrRaftPanic", err)
	}
	if !strings.HasPrefix(err.Error(), "group 1:") {
		t.Fatalf("%v: the wrong group stopped", err)
	}
	c.propose(2, "b0")
	c.waitAgree(2, 1)
}
