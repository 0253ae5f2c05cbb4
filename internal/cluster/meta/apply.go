package meta

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/seglog/seglog/server/acl"
	"github.com/seglog/seglog/store"
)

// Refusals of a command. Where the store has a sentinel for the same
// fault (store.ErrTopicExists, store.ErrUnknownTopic, store.ErrInvalidTopic,
// store.ErrInvalidPartitions, store.ErrInvalidConfig, store.ErrInternalTopic)
// the error wraps it, so the server's mapping to Kafka error codes holds
// for the cluster too; the ones below are the cluster's own.
var (
	// ErrInvalidBroker reports a registration with an id below 0, an
	// empty host or raft address, or a port outside 1..65535.
	ErrInvalidBroker = errors.New("meta: invalid broker registration")
	// ErrUnknownBroker reports a broker id no RegisterBroker has
	// registered.
	ErrUnknownBroker = errors.New("meta: unknown broker")
	// ErrInvalidReplicaAssignment reports replica lists Kafka would
	// refuse with INVALID_REPLICA_ASSIGNMENT: empty, a broker twice,
	// lengths that differ, an unregistered broker.
	ErrInvalidReplicaAssignment = errors.New("meta: invalid replica assignment")
	// ErrInvalidReplicationFactor reports a replication factor below 1
	// or above the brokers available (INVALID_REPLICATION_FACTOR).
	ErrInvalidReplicationFactor = errors.New("meta: invalid replication factor")
	// ErrInvalidTopicID reports a CreateTopic whose id is all zero or is
	// another topic's.
	ErrInvalidTopicID = errors.New("meta: invalid topic id")
	// ErrStalePlan reports a CreatePartitions planned against a partition
	// count the topic no longer has.
	ErrStalePlan = errors.New("meta: command planned against an older state")
	// ErrProducerIDsExhausted reports that no block of producer ids is
	// left below 2^63.
	ErrProducerIDsExhausted = errors.New("meta: producer ids exhausted")
	// ErrClusterID reports a SetClusterID that is empty, longer than
	// MaxClusterIDLen, or differs from the id already set.
	ErrClusterID = errors.New("meta: invalid cluster id")
	// ErrDirectoryID reports a registration (State.CheckDirectory) or a
	// SetBrokerDirectory from another directory than the one the broker
	// registered from before: the node's DIR was wiped or replaced, and
	// its replicas' raft state with it, so it cannot rejoin their groups
	// as the replica they knew.
	ErrDirectoryID = errors.New("meta: broker registered from another directory")
)

// ErrNewerMetadata is State.Unreadable's error: the metadata holds an
// entry a newer build wrote, which this one cannot apply.
var ErrNewerMetadata = errors.New("meta: the metadata holds an entry a newer build wrote")

// MaxClusterIDLen bounds a cluster id: Kafka's are 22 characters.
const MaxClusterIDLen = 64

// MaxDirectoryIDLen bounds a directory id, as MaxClusterIDLen a
// cluster id.
const MaxDirectoryIDLen = 64

// Result is what applying one command answers: the raft index it was
// applied at, and for AllocateProducerIDs the block, for RegisterBroker
// the broker's epoch. Err is the refusal, and a refused command changed
// nothing.
type Result struct {
	// Index is the raft index of the command.
	Index uint64
	// Block is the block an AllocateProducerIDs handed out.
	Block ProducerIDBlock
	// Epoch is the epoch a RegisterBroker gave the broker.
	Epoch uint64
	// DeletedACLs are, per filter of a DeleteACLs, the ACLs it removed.
	DeletedACLs [][]acl.ACL
	// Err is the command's refusal, nil if it was applied.
	Err error
}

// maxConfigs bounds a topic's overrides, and maxConfigLen the length of a
// name or value: Kafka's configs are a few dozen short strings, and the
// bounds keep one command from making the state, and every snapshot,
// huge.
const (
	maxConfigs   = 256
	maxConfigLen = 1024
)

// apply returns the state after c at index, or the refusal; s itself is
// never modified. It must be deterministic: it reads nothing but s and c
// (no clock, no randomness, no local configuration), so every node
// builds the same state from the same log.
func (s *State) apply(index uint64, c Command) (*State, Result, error) {
	res := Result{Index: index}
	var n *State
	var err error
	switch c := c.(type) {
	case *RegisterBroker:
		n, err = s.registerBroker(index, c)
		res.Epoch = index
	case *CreateTopic:
		n, err = s.createTopic(c)
	case *DeleteTopic:
		n, err = s.deleteTopic(c)
	case *AlterTopicConfig:
		n, err = s.alterTopicConfig(c)
	case *CreatePartitions:
		n, err = s.createPartitions(c)
	case *AllocateProducerIDs:
		n, res.Block, err = s.allocateProducerIDs(c)
	case *SetClusterID:
		n, err = s.setClusterID(c)
	case *SetBrokerDirectory:
		n, err = s.setBrokerDirectory(c)
	case *CreateACLs:
		n, err = s.createACLs(c)
	case *DeleteACLs:
		n, res.DeletedACLs, err = s.deleteACLs(c)
	case *SetCredential:
		n, err = s.setCredential(c)
	case *DeleteCredential:
		n, err = s.deleteCredential(c)
	case *AlterClientQuotas:
		n, err = s.alterClientQuotas(c)
	default:
		err = fmt.Errorf("%w: %T", ErrUnknownCommand, c)
	}
	if err != nil {
		return s, Result{Index: index, Err: err}, err
	}
	n.index = index
	return n, res, nil
}

func (s *State) registerBroker(index uint64, c *RegisterBroker) (*State, error) {
	switch {
	case c.ID < 0:
		return nil, fmt.Errorf("%w: id %d", ErrInvalidBroker, c.ID)
	case c.Host == "" || len(c.Host) > maxConfigLen:
		return nil, fmt.Errorf("%w: broker %d: host of %d bytes", ErrInvalidBroker, c.ID, len(c.Host))
	case c.Port < 1 || c.Port > math.MaxUint16:
		return nil, fmt.Errorf("%w: broker %d: port %d", ErrInvalidBroker, c.ID, c.Port)
	case c.RaftAddr == "" || len(c.RaftAddr) > maxConfigLen:
		return nil, fmt.Errorf("%w: broker %d: raft address of %d bytes", ErrInvalidBroker, c.ID, len(c.RaftAddr))
	}
	n := s.next()
	// The directory id, once set, stays (SetBrokerDirectory).
	n.brokers[c.ID] = Broker{ID: c.ID, Host: c.Host, Port: c.Port, RaftAddr: c.RaftAddr, Epoch: index, DirectoryID: s.brokers[c.ID].DirectoryID}
	return n, nil
}

// CheckDirectory returns ErrDirectoryID if broker id registered from a
// directory other than dir before; "" (a build without directory ids)
// is never refused, since it cannot be told from one. The controller
// asks before it proposes a registration.
func (s *State) CheckDirectory(id int32, dir string) error {
	old := s.brokers[id].DirectoryID
	if old == "" || dir == "" || old == dir {
		return nil
	}
	return fmt.Errorf("%w: broker %d registered from directory.id=%s, and this registration comes from directory.id=%s", ErrDirectoryID, id, old, dir)
}

func (s *State) setBrokerDirectory(c *SetBrokerDirectory) (*State, error) {
	b, ok := s.brokers[c.Broker]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %d", ErrUnknownBroker, c.Broker)
	case c.DirectoryID == "" || len(c.DirectoryID) > MaxDirectoryIDLen:
		return nil, fmt.Errorf("%w: broker %d: directory id of %d bytes (1 to %d)", ErrInvalidBroker, c.Broker, len(c.DirectoryID), MaxDirectoryIDLen)
	}
	if err := s.CheckDirectory(c.Broker, c.DirectoryID); err != nil {
		return nil, err
	}
	n := s.next()
	b.DirectoryID = c.DirectoryID
	n.brokers[c.Broker] = b
	return n, nil
}

func (s *State) setClusterID(c *SetClusterID) (*State, error) {
	switch {
	case c.ID == "" || len(c.ID) > MaxClusterIDLen:
		return nil, fmt.Errorf("%w: %d bytes (1 to %d)", ErrClusterID, len(c.ID), MaxClusterIDLen)
	case s.clusterID != "" && s.clusterID != c.ID:
		return nil, fmt.Errorf("%w: %q; the cluster is %q", ErrClusterID, c.ID, s.clusterID)
	}
	n := s.next()
	n.clusterID = c.ID
	return n, nil
}

// collisionKey is Kafka's Topic.unifyCollisionChars: '.' and '_' collide
// in metric names, so Kafka refuses a topic that differs from an existing
// one only by them. (store has the same one-liner, unexported.)
func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

func (s *State) createTopic(c *CreateTopic) (*State, error) {
	if err := store.ValidateTopic(c.Name); err != nil {
		return nil, err
	}
	if _, ok := s.topics[c.Name]; ok {
		return nil, fmt.Errorf("%w: %s", store.ErrTopicExists, c.Name)
	}
	if c.ID == ([16]byte{}) {
		return nil, fmt.Errorf("%w: all zero", ErrInvalidTopicID)
	}
	key := collisionKey(c.Name)
	for name, t := range s.topics {
		if collisionKey(name) == key {
			// The store's and Kafka's refusal: InvalidTopicException.
			return nil, fmt.Errorf("%w: %q collides with existing topic %q (Kafka treats '.' and '_' alike)", store.ErrInvalidTopic, c.Name, name)
		}
		if t.ID == c.ID {
			return nil, fmt.Errorf("%w: %x is topic %s's", ErrInvalidTopicID, c.ID, name)
		}
	}
	if len(c.Replicas) < 1 || len(c.Replicas) > store.MaxPartitions {
		return nil, fmt.Errorf("%w: %d (must be 1..%d)", store.ErrInvalidPartitions, len(c.Replicas), store.MaxPartitions)
	}
	if err := s.checkAssignment(c.Replicas, len(c.Replicas[0])); err != nil {
		return nil, err
	}
	if err := checkConfigs(c.Configs); err != nil {
		return nil, err
	}
	t := &Topic{Name: c.Name, ID: c.ID, Configs: maps.Clone(c.Configs), Replicas: cloneAssignment(c.Replicas)}
	n := s.next()
	n.topics[c.Name] = t
	return n, nil
}

// checkAssignment checks that every list has rf distinct registered
// brokers.
func (s *State) checkAssignment(a [][]int32, rf int) error {
	for p, r := range a {
		if len(r) == 0 || len(r) != rf {
			return fmt.Errorf("%w: partition %d has %d replicas, the others %d", ErrInvalidReplicaAssignment, p, len(r), rf)
		}
		for i, b := range r {
			if slices.Contains(r[:i], b) {
				return fmt.Errorf("%w: partition %d lists broker %d twice", ErrInvalidReplicaAssignment, p, b)
			}
			if _, ok := s.brokers[b]; !ok {
				return fmt.Errorf("%w: partition %d: %w %d", ErrInvalidReplicaAssignment, p, ErrUnknownBroker, b)
			}
		}
	}
	return nil
}

// checkConfigs bounds a config map. The values' meaning is checked by the
// controller before proposing (checkTopicConfigs), not here: Apply must
// answer the same on every node whatever version of the config parser
// each runs, as KRaft replays config records without validating them.
func checkConfigs(m map[string]string) error {
	if len(m) > maxConfigs {
		return fmt.Errorf("%w: %d configs, the limit is %d", store.ErrInvalidConfig, len(m), maxConfigs)
	}
	for k, v := range m {
		if k == "" || len(k) > maxConfigLen || len(v) > maxConfigLen {
			return fmt.Errorf("%w: config %.64q of %d bytes, value of %d", store.ErrInvalidConfig, k, len(k), len(v))
		}
	}
	return nil
}

func cloneAssignment(a [][]int32) [][]int32 {
	out := make([][]int32, len(a))
	for i, r := range a {
		out[i] = slices.Clone(r)
	}
	return out
}

func (s *State) deleteTopic(c *DeleteTopic) (*State, error) {
	if _, ok := s.topics[c.Name]; !ok {
		return nil, fmt.Errorf("%w: %s", store.ErrUnknownTopic, c.Name)
	}
	if c.Name == store.OffsetsTopic {
		return nil, fmt.Errorf("%w: %s", store.ErrInternalTopic, c.Name)
	}
	n := s.next()
	delete(n.topics, c.Name)
	return n, nil
}

func (s *State) alterTopicConfig(c *AlterTopicConfig) (*State, error) {
	t, ok := s.topics[c.Name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", store.ErrUnknownTopic, c.Name)
	}
	var cfg map[string]string
	if c.Replace {
		if len(c.Delete) > 0 {
			return nil, fmt.Errorf("%w: a replacing change deletes nothing by name", store.ErrInvalidConfig)
		}
		cfg = maps.Clone(c.Set)
	} else {
		cfg = maps.Clone(t.Configs)
		if cfg == nil {
			cfg = map[string]string{}
		}
		maps.Copy(cfg, c.Set)
		for _, k := range c.Delete {
			delete(cfg, k)
		}
	}
	if err := checkConfigs(cfg); err != nil {
		return nil, err
	}
	if len(cfg) == 0 {
		cfg = nil
	}
	nt := *t
	nt.Configs = cfg
	n := s.next()
	n.topics[c.Name] = &nt
	return n, nil
}

func (s *State) createPartitions(c *CreatePartitions) (*State, error) {
	t, ok := s.topics[c.Name]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %s", store.ErrUnknownTopic, c.Name)
	case c.Name == store.OffsetsTopic:
		// Its count decides which partition holds each group.
		return nil, fmt.Errorf("%w: %s", store.ErrInternalTopic, c.Name)
	case int(c.From) != len(t.Replicas):
		return nil, fmt.Errorf("%w: %s has %d partitions, the command was planned for %d", ErrStalePlan, c.Name, len(t.Replicas), c.From)
	case len(c.Replicas) == 0:
		return nil, fmt.Errorf("%w: %s has %d partitions; the count can only grow", store.ErrInvalidPartitions, c.Name, len(t.Replicas))
	case len(t.Replicas)+len(c.Replicas) > store.MaxPartitions:
		return nil, fmt.Errorf("%w: %d (must be 1..%d)", store.ErrInvalidPartitions, len(t.Replicas)+len(c.Replicas), store.MaxPartitions)
	}
	// Kafka refuses new partitions whose replication factor differs from
	// the topic's.
	if err := s.checkAssignment(c.Replicas, len(t.Replicas[0])); err != nil {
		return nil, err
	}
	nt := *t
	nt.Replicas = append(slices.Clip(t.Replicas), cloneAssignment(c.Replicas)...)
	n := s.next()
	n.topics[c.Name] = &nt
	return n, nil
}

func (s *State) allocateProducerIDs(c *AllocateProducerIDs) (*State, ProducerIDBlock, error) {
	if _, ok := s.brokers[c.Broker]; !ok {
		return nil, ProducerIDBlock{}, fmt.Errorf("%w: %d", ErrUnknownBroker, c.Broker)
	}
	if s.nextPID > math.MaxInt64-ProducerIDBlockSize {
		return nil, ProducerIDBlock{}, ErrProducerIDsExhausted
	}
	b := ProducerIDBlock{Broker: c.Broker, First: s.nextPID, Size: ProducerIDBlockSize}
	n := s.next()
	n.nextPID += ProducerIDBlockSize
	n.lastBlocks[c.Broker] = b
	return n, b, nil
}
