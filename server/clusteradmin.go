package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// clusterAdminTimeout bounds a change through the controller (a topic
// created on first use, a producer id block) when the request carries no
// timeout of its own.
const clusterAdminTimeout = 30 * time.Second

// adminContext bounds a controller change by a request's timeout in
// milliseconds, or clusterAdminTimeout when it gives none.
func adminContext(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	d := time.Duration(timeoutMillis) * time.Millisecond
	if d <= 0 {
		d = clusterAdminTimeout
	}
	return context.WithTimeout(ctx, d)
}

// clusterTopics fills Metadata's brokers and controller from the Cluster
// (its live brokers) and is the topicSource of a cluster: each
// partition's leader, leader epoch, replicas, ISR and offline replicas as
// this node last knows them (a partition without a leader is
// LEADER_NOT_AVAILABLE, which clients retry). A topic asked for by name is
// created through the controller on first use, with the cluster's default
// replication factor; the offsets topic never is (the nodes adopt it at
// start-up).
func (s *Server) clusterTopics(ctx context.Context, resp *kmsg.MetadataResponse) topicSource {
	s.clusterBrokers(resp)
	return topicSource{
		all:        s.cluster.Topics,
		partitions: s.cluster.Partitions,
		createOnFirstUse: func(name string) ([]PartitionInfo, error) {
			if name == store.OffsetsTopic {
				return s.cluster.Partitions(name)
			}
			return s.clusterCreateOnFirstUse(ctx, name)
		},
	}
}

// clusterBrokers sets Metadata's brokers and controller id to the live
// brokers and the controller the Cluster knows now.
func (s *Server) clusterBrokers(resp *kmsg.MetadataResponse) {
	brokers, controller := s.cluster.Brokers()
	resp.Brokers = resp.Brokers[:0]
	for _, b := range brokers {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = brokerEndpoint(b)
		resp.Brokers = append(resp.Brokers, mb)
	}
	resp.ControllerID = controller
}

// brokerEndpoint is a cluster's broker as every answer naming brokers gives
// it (Metadata, DescribeCluster, Produce's KIP-951 leader hints): the
// address it advertises, and its rack only when it has one (null, not
// empty, is "no rack" to clients). kmsg gives each answer its own broker
// type, with these four fields alike.
func brokerEndpoint(b Broker) (nodeID int32, host string, port int32, rack *string) {
	if b.Rack != "" {
		rack = kmsg.StringPtr(b.Rack)
	}
	return b.NodeID, b.Host, b.Port, rack
}

// clusterCreateOnFirstUse is createOnFirstUse through the controller.
func (s *Server) clusterCreateOnFirstUse(ctx context.Context, name string) ([]PartitionInfo, error) {
	ctx, cancel := adminContext(ctx, 0)
	defer cancel()
	err := s.cluster.CreateTopic(ctx, name, int32(s.cfg.NumPartitions), -1, s.clusterTopicConfigs(nil))
	if errors.Is(err, ErrInvalidReplicationFactor) {
		// Fewer live brokers than the default replication factor, as
		// while a cluster starts: clients retry, where INVALID_REPLICATION_FACTOR
		// would fail the first record a script sends to a new cluster.
		// Said in the log, once a while: with a node down for good the
		// topic is never made, and clients only retry.
		s.errs.Log(slog.LevelWarn, name, "server: a topic created on first use waits for enough live brokers", "topic", name, "err", err)
		return nil, fmt.Errorf("%w: %w", errNotPlacedYet, err)
	}
	if err != nil && !errors.Is(err, store.ErrTopicExists) {
		return nil, err
	}
	return s.cluster.Partitions(name)
}

// clusterTopicConfigs is the config a topic created through this node
// gets in a cluster: the server's topic config (serve --config) where it
// differs from the default, then the request's own. On one node the
// server's config is the base the store creates from; the controller
// knows only the map it is given, and creates the topic alike on every
// replica, so the base travels in it (as overrides of the topic).
func (s *Server) clusterTopicConfigs(requested map[string]string) map[string]string {
	def := store.DefaultTopicConfig()
	configs := make(map[string]string)
	for _, k := range store.Keys() {
		if v := s.cfg.TopicConfig.Get(k); v != def.Get(k) {
			configs[k] = v
		}
	}
	for k, v := range requested {
		configs[k] = v
	}
	return configs
}

// clusterDescribeCluster fills DescribeCluster's brokers and controller
// from the Cluster.
func (s *Server) clusterDescribeCluster(resp *kmsg.DescribeClusterResponse) {
	brokers, controller := s.cluster.Brokers()
	resp.ControllerID = controller
	for _, b := range brokers {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = brokerEndpoint(b)
		resp.Brokers = append(resp.Brokers, rb)
	}
}

// clusterCreateTopic creates one topic of a CreateTopics through the
// controller, after the checks a single node makes, and returns the
// replication factor the topic got. ValidateOnly checks without creating.
func (s *Server) clusterCreateTopic(ctx context.Context, t kmsg.CreateTopicsRequestTopic, n int, validateOnly bool) (int16, error) {
	rf := t.ReplicationFactor
	brokers, _ := s.cluster.Brokers()
	if rf == 0 || rf < -1 || int(rf) > len(brokers) {
		return 0, &configError{kerr.InvalidReplicationFactor.Code,
			fmt.Sprintf("replication factor %d: %d live brokers", rf, len(brokers))}
	}
	if validateOnly {
		err := store.ValidateTopic(t.Topic)
		if err == nil && (n < 1 || n > store.MaxPartitions) {
			err = fmt.Errorf("%w: %d", store.ErrInvalidPartitions, n)
		}
		if _, perr := s.cluster.Partitions(t.Topic); err == nil && perr == nil {
			err = fmt.Errorf("%w: %s", store.ErrTopicExists, t.Topic)
		}
		return rf, err
	}
	requested := make(map[string]string)
	for _, c := range t.Configs {
		if c.Value != nil {
			requested[c.Name] = *c.Value
		}
	}
	if err := s.cluster.CreateTopic(ctx, t.Topic, int32(n), rf, s.clusterTopicConfigs(requested)); err != nil {
		return 0, err
	}
	if parts, err := s.cluster.Partitions(t.Topic); err == nil && len(parts) > 0 {
		rf = int16(len(parts[0].Replicas))
	}
	return rf, nil
}

// clusterCreatePartitions is CreatePartitions in a cluster: through the
// controller, which assigns the new partitions over the live brokers (an
// explicit assignment is refused: the controller plans, as for
// CreateTopics without one). It returns an error code and message, 0 on
// success.
func (s *Server) clusterCreatePartitions(t kmsg.CreatePartitionsRequestTopic, validateOnly bool, timeoutMillis int32) (int16, string) {
	if t.Assignment != nil {
		return kerr.InvalidReplicaAssignment.Code, "a replicated cluster assigns new partitions itself: send no assignment"
	}
	parts, err := s.cluster.Partitions(t.Topic)
	if err != nil {
		return errCode(err), err.Error()
	}
	if int(t.Count) <= len(parts) {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("topic %s has %d partitions; the count can only grow", t.Topic, len(parts))
	}
	if int(t.Count) > store.MaxPartitions {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("at most %d partitions", store.MaxPartitions)
	}
	if validateOnly {
		return 0, ""
	}
	ctx, cancel := s.produceContext(timeoutMillis)
	defer cancel()
	if err := s.cluster.CreatePartitions(ctx, t.Topic, t.Count); err != nil {
		return errCode(err), err.Error()
	}
	return 0, ""
}

// clusterAlterTopic is alterTopic in a cluster: f applied to the config
// this node's store mirrors, checked here, and the result's overrides
// sent to the controller as the topic's whole set of overrides. Two
// alters racing through different nodes: the later replaces the earlier.
func (s *Server) clusterAlterTopic(name string, validateOnly bool, f func(store.TopicConfig) (store.TopicConfig, error)) error {
	if _, err := s.cluster.Partitions(name); err != nil {
		return err
	}
	cur, err := s.st.TopicConfigOf(name)
	if err != nil {
		return err
	}
	next, err := f(cur)
	if err != nil {
		return err
	}
	if err := next.Validate(); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	overrides := map[string]string{}
	for _, k := range next.Overrides() {
		overrides[k] = next.Get(k)
	}
	ctx, cancel := s.produceContext(0)
	defer cancel()
	return s.cluster.AlterTopicConfig(ctx, name, overrides)
}
