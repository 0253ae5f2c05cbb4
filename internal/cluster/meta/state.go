package meta

import (
	"maps"
	"slices"

	"github.com/seglog/seglog/server/acl"
	"github.com/seglog/seglog/store"
)

// Broker is one registered node as the cluster knows it.
type Broker struct {
	// ID is the node id: the broker id clients see in Metadata, and the
	// raft server id (its decimal string).
	ID int32
	// Host and Port are the advertised Kafka listener.
	Host string
	Port int32
	// RaftAddr is the node's raft address, the one in --voters.
	RaftAddr string
	// Epoch is the raft index of the RegisterBroker that last registered
	// it, as KRaft's broker epoch is the offset of the registration
	// record: it grows with every restart, so the server can tell a
	// stale registration from a fresh one.
	Epoch uint64
	// DirectoryID is the directory.id of the DIR it registered from, ""
	// if it registered from a version without directory ids.
	DirectoryID string
}

// Topic is one topic: its identity, configuration and replica
// assignment.
type Topic struct {
	// Name is the topic's name.
	Name string
	// ID is the topic id (a UUID), chosen by the controller when the
	// topic is created, so a topic deleted and created again under the
	// same name is a different topic.
	ID [16]byte
	// Configs holds the topic's overrides by Kafka config name
	// (retention.ms, cleanup.policy, ...); absent names take the
	// cluster's defaults. Values are as store.TopicConfig.Set parses them.
	Configs map[string]string
	// Replicas holds, per partition, the replicas' broker ids in
	// preference order: the first is the preferred leader.
	Replicas [][]int32
}

// clone returns a deep copy, so a caller can never reach state an Apply
// will build on.
func (t *Topic) clone() Topic {
	c := *t
	c.Configs = maps.Clone(t.Configs)
	c.Replicas = make([][]int32, len(t.Replicas))
	for i, r := range t.Replicas {
		c.Replicas[i] = slices.Clone(r)
	}
	return c
}

// ProducerIDBlock is a range of producer ids handed to one broker, as
// KIP-730's AllocateProducerIds hands them: the broker gives ids from it
// to InitProducerId requests without asking the controller each time.
type ProducerIDBlock struct {
	// Broker is the broker the block was handed to.
	Broker int32
	// First is the block's first id; the block is [First, First+Size).
	First int64
	// Size is the number of ids.
	Size int64
}

// ProducerIDBlockSize is the number of ids in a block, Kafka's.
const ProducerIDBlockSize = 1000

// State is the cluster metadata at one raft index. A *State handed out by
// the FSM or a Node is never modified afterwards: Apply builds the next
// State beside it, sharing only what did not change. Its accessors return
// copies, so a caller cannot change what another reader sees.
type State struct {
	index      uint64
	clusterID  string
	brokers    map[int32]Broker
	topics     map[string]*Topic // never modified once in a published State
	nextPID    int64
	lastBlocks map[int32]ProducerIDBlock
	acls       []acl.ACL // sorted; never modified once in a published State
	// creds are the SASL credentials (credentials.go), their byte
	// slices never modified once in a published State; credsInForce
	// says the metadata, not the nodes' files, holds the truth.
	creds        map[credKey]Credential
	credsInForce bool
	quotas       map[QuotaEntity]map[string]float64 // values never modified once published (quotas.go)
	// unreadable is the first committed entry this build could not
	// decode (a newer build's command): from it on, this State is not
	// the one the other nodes hold (Unreadable). Not in snapshots: the
	// FSM takes none past it.
	unreadable error
}

// emptyState is the state before any command.
func emptyState() *State {
	return &State{brokers: map[int32]Broker{}, topics: map[string]*Topic{}, lastBlocks: map[int32]ProducerIDBlock{},
		creds: map[credKey]Credential{}, quotas: map[QuotaEntity]map[string]float64{}}
}

// next returns a copy to apply a command to: the maps are new, the Topic
// values they point to are shared and must be replaced, not modified.
func (s *State) next() *State {
	return &State{
		index:        s.index,
		clusterID:    s.clusterID,
		brokers:      maps.Clone(s.brokers),
		topics:       maps.Clone(s.topics),
		nextPID:      s.nextPID,
		lastBlocks:   maps.Clone(s.lastBlocks),
		acls:         s.acls,
		creds:        maps.Clone(s.creds),
		credsInForce: s.credsInForce,
		quotas:       maps.Clone(s.quotas),
		unreadable:   s.unreadable,
	}
}

// Index is the raft index of the last command applied (or of the snapshot
// restored), 0 for the empty state.
func (s *State) Index() uint64 { return s.index }

// ClusterID returns the cluster id SetClusterID set, "" before.
func (s *State) ClusterID() string { return s.clusterID }

// Unreadable returns, wrapping ErrNewerMetadata, the first committed
// entry this build could not decode because a newer build wrote it (a
// command type or version it does not know), nil if none: the State
// lacks what that entry did, so a node must not act on it (a topic it
// misses is not a deleted topic). Damage (ErrBadEncoding) reads alike on
// every node and is not this.
func (s *State) Unreadable() error { return s.unreadable }

// Broker returns the broker with the given id.
func (s *State) Broker(id int32) (Broker, bool) {
	b, ok := s.brokers[id]
	return b, ok
}

// Brokers returns every registered broker, by id.
func (s *State) Brokers() []Broker {
	out := make([]Broker, 0, len(s.brokers))
	for _, b := range s.brokers {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Broker) int { return int(a.ID) - int(b.ID) })
	return out
}

// BrokerIDs returns the registered brokers' ids, sorted: the input of
// Assign.
func (s *State) BrokerIDs() []int32 {
	out := make([]int32, 0, len(s.brokers))
	for id := range s.brokers {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Topic returns a copy of the named topic.
func (s *State) Topic(name string) (Topic, bool) {
	t, ok := s.topics[name]
	if !ok {
		return Topic{}, false
	}
	return t.clone(), true
}

// TopicNames returns the topics' names, sorted.
func (s *State) TopicNames() []string {
	out := slices.Collect(maps.Keys(s.topics))
	slices.Sort(out)
	return out
}

// Partitions returns the named topic's partition count, 0 if there is no
// such topic.
func (s *State) Partitions(name string) int {
	if t, ok := s.topics[name]; ok {
		return len(t.Replicas)
	}
	return 0
}

// Replicas returns a copy of one partition's replicas, in preference
// order.
func (s *State) Replicas(topic string, partition int32) ([]int32, bool) {
	t, ok := s.topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Replicas) {
		return nil, false
	}
	return slices.Clone(t.Replicas[partition]), true
}

// NextProducerID is the first producer id no block has been handed yet.
func (s *State) NextProducerID() int64 { return s.nextPID }

// LastProducerIDBlock returns the block last handed to a broker.
func (s *State) LastProducerIDBlock(broker int32) (ProducerIDBlock, bool) {
	b, ok := s.lastBlocks[broker]
	return b, ok
}

// CoordinatorPartition returns the __consumer_offsets partition that holds
// a group and so whose leader is the group's coordinator, with its
// replicas; ok is false while the offsets topic does not exist. The
// partition is Kafka's abs(hashCode(group)) % partitions, computed by
// store.OffsetsPartitionFor, the function the single node uses, so a
// group keeps its partition when a node joins a cluster.
func (s *State) CoordinatorPartition(group string) (partition int32, replicas []int32, ok bool) {
	t, ok := s.topics[store.OffsetsTopic]
	if !ok || len(t.Replicas) == 0 {
		return 0, nil, false
	}
	p := store.OffsetsPartitionFor(group, len(t.Replicas))
	return p, slices.Clone(t.Replicas[p]), true
}
