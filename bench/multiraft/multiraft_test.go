package main

import (
	"testing"
	"time"
)

// TestHashicorpFailsOver runs the measurement's hashicorp cluster small:
// every partition elects, commands commit through the leaders, and when
// the node leading most partitions dies each of its partitions gets a
// leader and a commit on the survivors. The limits only turn a hang into
// a failure; speed is what the program measures, not what this asserts.
func TestHashicorpFailsOver(t *testing.T) {
	c, err := newCluster(3, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer c.shutdown()
	if err := c.start(tuned, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.waitLeaders(time.Minute, func(int) {}); err != nil {
		t.Fatal(err)
	}
	n, err := c.load(200*time.Millisecond, 100, 2)
	if err != nil || n == 0 {
		t.Fatalf("load committed %d: %v", n, err)
	}
	if err := c.waitLeaders(time.Minute, func(int) {}); err != nil {
		t.Fatal(err)
	}
	checkFailover(t, c.leaderCounts(), c.failover)
	if s := c.nodes[0].mux.Stats(); s.BadHeader != 0 || s.Overflow != 0 {
		t.Fatalf("raftmux refused raft's connections: %+v", s)
	}
}

// TestEtcdFailsOver does the same for the etcd prototype.
func TestEtcdFailsOver(t *testing.T) {
	c, err := newEtcdCluster(3, 4, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.shutdown()
	if err := c.waitLeaders(time.Minute); err != nil {
		t.Fatal(err)
	}
	if c.sent.Load() == 0 {
		t.Fatal("no messages sent")
	}
	checkFailover(t, c.leaderCounts(), c.failover)
}

// checkFailover kills the node leading most partitions and checks that
// each partition it led was timed to a new leader and a commit.
func checkFailover(t *testing.T, counts []int, failover func(int, time.Duration) ([]time.Duration, []time.Duration, error)) {
	t.Helper()
	victim := 0
	for i, n := range counts {
		if n > counts[victim] {
			victim = i
		}
	}
	if counts[victim] == 0 {
		t.Fatalf("no node leads a partition: %v", counts)
	}
	elected, committed, err := failover(victim, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(elected) != counts[victim] || len(committed) != counts[victim] {
		t.Fatalf("%d partitions timed, the victim led %d", len(elected), counts[victim])
	}
	for i := range elected {
		if elected[i] <= 0 || committed[i] < elected[i] {
			t.Fatalf("partition %d: elected after %v, committed after %v", i, elected[i], committed[i])
		}
	}
}
