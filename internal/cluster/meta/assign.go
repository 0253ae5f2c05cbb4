package meta

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/seglog/seglog/store"
)

// Assign computes replica lists for partitions first, first+1, ...,
// first+count−1 of a topic with Kafka's rack-unaware assignment
// (AdminUtils.assignReplicasToBrokersRackUnaware): over the sorted
// brokers, partition p's first replica (its preferred leader) is broker
// (p + start) mod n, so leaders go round-robin; the other replicas follow
// it at a distance of 1 + (shift + j) mod (n − 1), and shift grows by one
// every n partitions, so the followers of one leader differ from round
// to round. start and shift are Kafka's random numbers, passed in so the
// result is a pure function of its inputs: the controller draws them
// once and puts the result in the command.
//
// rf must be 1..len(brokers), else the error matches
// ErrInvalidReplicationFactor (Kafka's INVALID_REPLICATION_FACTOR).
func Assign(brokers []int32, first, count, rf, start, shift int) ([][]int32, error) {
	b := slices.Clone(brokers)
	slices.Sort(b)
	b = slices.Compact(b)
	n := len(b)
	if rf < 1 || rf > n {
		return nil, fmt.Errorf("%w: %d with %d brokers", ErrInvalidReplicationFactor, rf, n)
	}
	if count < 0 || first < 0 || start < 0 || shift < 0 {
		return nil, fmt.Errorf("%w: negative input", store.ErrInvalidPartitions)
	}
	out := make([][]int32, count)
	for i := range out {
		p := first + i
		if p > 0 && p%n == 0 {
			shift++
		}
		lead := (p + start) % n
		r := make([]int32, 1, rf)
		r[0] = b[lead]
		for j := 0; j < rf-1; j++ {
			r = append(r, b[(lead+1+(shift+j)%(n-1))%n])
		}
		out[i] = r
	}
	return out, nil
}

// NewCreateTopic plans a topic's creation on the controller: it checks
// the name (valid, free), the partition count, the configs (as the
// store parses them) and computes the assignment over brokers (the live
// ones; nil means every registered broker) with a random start, and a
// random topic id, both drawn from rnd. What it returns, proposed, is
// applied the same on every node.
func NewCreateTopic(s *State, name string, partitions, rf int, configs map[string]string, brokers []int32, rnd *rand.Rand) (*CreateTopic, error) {
	if err := store.ValidateTopic(name); err != nil {
		return nil, err
	}
	if _, ok := s.topics[name]; ok {
		return nil, fmt.Errorf("%w: %s", store.ErrTopicExists, name)
	}
	if partitions < 1 || partitions > store.MaxPartitions {
		return nil, fmt.Errorf("%w: %d (must be 1..%d)", store.ErrInvalidPartitions, partitions, store.MaxPartitions)
	}
	if err := checkTopicConfigs(configs); err != nil {
		return nil, err
	}
	if brokers == nil {
		brokers = s.BrokerIDs()
	}
	n := max(len(brokers), 1)
	a, err := Assign(brokers, 0, partitions, rf, rnd.IntN(n), rnd.IntN(n))
	if err != nil {
		return nil, err
	}
	c := &CreateTopic{Name: name, Configs: maps.Clone(configs), Replicas: a}
	for c.ID == ([16]byte{}) || s.topicIDUsed(c.ID) {
		for i := 0; i < len(c.ID); i += 8 {
			v := rnd.Uint64()
			for j := range 8 {
				c.ID[i+j] = byte(v >> (8 * j))
			}
		}
		// A version 4 (random) UUID, as Kafka's Uuid.randomUuid.
		c.ID[6] = c.ID[6]&0x0f | 0x40
		c.ID[8] = c.ID[8]&0x3f | 0x80
	}
	return c, nil
}

func (s *State) topicIDUsed(id [16]byte) bool {
	for _, t := range s.topics {
		if t.ID == id {
			return true
		}
	}
	return false
}

// NewCreatePartitions plans growing a topic to total partitions, as
// Kafka's addPartitions does: the new partitions continue the rotation
// from the broker that leads partition 0 (so the assignment reads as if
// the topic had been created with total partitions), with the topic's
// replication factor, over brokers (nil: every registered broker) and a
// random shift from rnd.
func NewCreatePartitions(s *State, name string, total int, brokers []int32, rnd *rand.Rand) (*CreatePartitions, error) {
	t, ok := s.topics[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %s", store.ErrUnknownTopic, name)
	case name == store.OffsetsTopic:
		return nil, fmt.Errorf("%w: %s", store.ErrInternalTopic, name)
	case total <= len(t.Replicas):
		return nil, fmt.Errorf("%w: %s has %d partitions; the count can only grow", store.ErrInvalidPartitions, name, len(t.Replicas))
	case total > store.MaxPartitions:
		return nil, fmt.Errorf("%w: %d (must be 1..%d)", store.ErrInvalidPartitions, total, store.MaxPartitions)
	}
	if brokers == nil {
		brokers = s.BrokerIDs()
	}
	sorted := slices.Clone(brokers)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	start := max(0, slices.IndexFunc(sorted, func(b int32) bool { return b >= t.Replicas[0][0] }))
	a, err := Assign(sorted, len(t.Replicas), total-len(t.Replicas), len(t.Replicas[0]), start, rnd.IntN(max(len(sorted), 1)))
	if err != nil {
		return nil, err
	}
	return &CreatePartitions{Name: name, From: int32(len(t.Replicas)), Replicas: a}, nil
}

// NewAlterTopicConfig plans a config change: the topic must exist, and
// the overrides it would leave must parse as store.TopicConfig parses
// them.
func NewAlterTopicConfig(s *State, name string, replace bool, set map[string]string, del []string) (*AlterTopicConfig, error) {
	c := &AlterTopicConfig{Name: name, Replace: replace, Set: maps.Clone(set), Delete: slices.Clone(del)}
	n, err := s.alterTopicConfig(c)
	if err != nil {
		return nil, err
	}
	if err := checkTopicConfigs(n.topics[name].Configs); err != nil {
		return nil, err
	}
	for _, k := range del {
		if _, ok := store.KeyInfo(k); !ok {
			return nil, fmt.Errorf("%w: unknown config %q", store.ErrInvalidConfig, k)
		}
	}
	return c, nil
}

// checkTopicConfigs parses overrides with the store's parser, the one
// the single node uses for CreateTopics and AlterConfigs.
func checkTopicConfigs(m map[string]string) error {
	if err := checkConfigs(m); err != nil {
		return err
	}
	cfg := store.DefaultTopicConfig()
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		if err := cfg.Set(k, m[k]); err != nil {
			return err
		}
	}
	return cfg.Validate()
}
