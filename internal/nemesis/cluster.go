package nemesis

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Node is one node of a replicated cluster as its command line names it,
// fixed before any node starts: every node's --voters names every node's
// raft address, so all of them are chosen up front.
type Node struct {
	ID    int32  // --node-id, the broker id clients see and the N of N@ in --voters
	Kafka string // --listen, host:port, where clients connect
	Raft  string // --raft-listen, host:port, where the other nodes connect
}

// PlanCluster picks the addresses of an n-node cluster on the loopback:
// node ids 1 to n, each with a Kafka and a raft port that were free a
// moment ago. The 2n listeners are held open until all are picked, so
// no port is picked twice.
func PlanCluster(n int) ([]Node, error) {
	lns := make([]net.Listener, 0, 2*n)
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range 2 * n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
	}
	nodes := make([]Node, n)
	for i := range nodes {
		nodes[i] = Node{ID: int32(i + 1), Kafka: lns[2*i].Addr().String(), Raft: lns[2*i+1].Addr().String()}
	}
	return nodes, nil
}

// Voters is the --voters value every node of nodes gets, itself
// included: ID@raft address, comma-separated, in the order given.
func Voters(nodes []Node) string {
	vs := make([]string, len(nodes))
	for i, n := range nodes {
		vs[i] = strconv.Itoa(int(n.ID)) + "@" + n.Raft
	}
	return strings.Join(vs, ",")
}

// ServeArgs is the command line of nodes[i] after `seglog serve DIR`,
// exactly as issue 30 gives it (--node-id N --listen HOST:KPORT
// --raft-listen HOST:RPORT --voters 1@HOST:RPORT1,...), then extra. A
// restart runs the same command with the same DIR.
func ServeArgs(nodes []Node, i int, extra ...string) []string {
	n := nodes[i]
	args := []string{"--node-id", strconv.Itoa(int(n.ID)), "--listen", n.Kafka, "--raft-listen", n.Raft, "--voters", Voters(nodes)}
	return append(args, extra...)
}

// PartitionState is what Metadata says of one partition of a replicated
// topic.
type PartitionState struct {
	Leader   int32   // -1 when there is none
	Replicas []int32 // sorted
	ISR      []int32 // sorted: the replicas the leader sees as caught up
}

// InSync reports whether every replica of the partition is in its ISR
// and the partition has a leader: every replica holds what the leader
// has committed, so a clean stop leaves replicas CompareReplicas can
// compare up to the high watermark.
func (s PartitionState) InSync() bool {
	return s.Leader >= 0 && len(s.Replicas) > 0 && slices.Equal(s.Replicas, s.ISR)
}

// String is the leader, replicas and ISR, as kcat -L says them.
func (s PartitionState) String() string {
	return fmt.Sprintf("leader %d, replicas %v, isr %v", s.Leader, s.Replicas, s.ISR)
}

// Partitions asks Metadata (of whichever of brokers answers) for the
// state of each partition of topic, by partition.
func Partitions(ctx context.Context, brokers []string, topic string) (map[int32]PartitionState, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return TopicState(ctx, cl, topic)
}

// TopicState is Partitions through a client of the caller's: of
// whichever broker kgo picks when cl is a *kgo.Client, of that broker
// when it is a *kgo.Broker (to ask a survivor rather than wait out a
// dead node's retries).
func TopicState(ctx context.Context, cl kmsg.Requestor, topic string) (map[int32]PartitionState, error) {
	mt, err := topicMetadata(ctx, cl, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]PartitionState{}
	for _, p := range mt.Partitions {
		s := PartitionState{Leader: p.Leader, Replicas: slices.Sorted(slices.Values(p.Replicas)), ISR: slices.Sorted(slices.Values(p.ISR))}
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			// LEADER_NOT_AVAILABLE during an election: no leader yet.
			s.Leader = -1
		}
		out[p.Partition] = s
	}
	return out, nil
}
