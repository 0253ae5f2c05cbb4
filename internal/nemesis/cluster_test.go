package nemesis

import (
	"slices"
	"strings"
	"testing"
)

// TestPlanCluster: ids 1 to n, and 2n distinct loopback ports.
func TestPlanCluster(t *testing.T) {
	nodes, err := PlanCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, n := range nodes {
		if n.ID != int32(i+1) {
			t.Errorf("node %d has id %d", i, n.ID)
		}
		for _, a := range []string{n.Kafka, n.Raft} {
			if seen[a] || !strings.HasPrefix(a, "127.0.0.1:") {
				t.Errorf("address %s picked twice or not on the loopback: %v", a, nodes)
			}
			seen[a] = true
		}
	}
}

// TestServeArgs: every node's command line is issue 30's, with its own
// id and addresses and the same --voters, itself included; extra flags
// follow.
func TestServeArgs(t *testing.T) {
	nodes := []Node{
		{ID: 1, Kafka: "127.0.0.1:9001", Raft: "127.0.0.1:9101"},
		{ID: 2, Kafka: "127.0.0.1:9002", Raft: "127.0.0.1:9102"},
		{ID: 3, Kafka: "127.0.0.1:9003", Raft: "127.0.0.1:9103"},
	}
	const voters = "1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103"
	if got := Voters(nodes); got != voters {
		t.Fatalf("Voters = %q, want %q", got, voters)
	}
	got := ServeArgs(nodes, 1, "--grace", "10s")
	want := []string{"--node-id", "2", "--listen", "127.0.0.1:9002", "--raft-listen", "127.0.0.1:9102", "--voters", voters, "--grace", "10s"}
	if !slices.Equal(got, want) {
		t.Fatalf("ServeArgs(node 2) = %q, want %q", got, want)
	}
	// A restart keeps the address: --listen is the one the node was given.
	if again := withListen(append([]string{"serve", "d"}, got...), "127.0.0.1:9002"); !slices.Equal(again[2:], want) {
		t.Fatalf("restart's command line %q, want %q", again[2:], want)
	}
}

// TestPartitionStateInSync: a partition is in sync when it has a leader
// and its ISR is every replica.
func TestPartitionStateInSync(t *testing.T) {
	for _, c := range []struct {
		s    PartitionState
		want bool
	}{
		{PartitionState{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, true},
		{PartitionState{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}}, false},
		{PartitionState{Leader: -1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, false},
		{PartitionState{Leader: 1}, false},
	} {
		if got := c.s.InSync(); got != c.want {
			t.Errorf("%v: InSync() = %v, want %v", c.s, got, c.want)
		}
	}
}
