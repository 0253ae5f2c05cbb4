package cluster

import "context"

// CreatePartitions grows a topic to total partitions through the
// controller, which assigns the new ones over the live brokers, and
// returns once this node's store holds them.
func (n *Node) CreatePartitions(ctx context.Context, topic string, total int32) error {
	resp, err := n.forward(ctx, request{Op: opGrow, Broker: n.cfg.NodeID, Topic: topic, Partitions: total})
	if err != nil {
		return err
	}
	return n.waitSynced(ctx, resp.Index)
}

// AlterTopicConfig makes overrides the whole of a topic's config overrides
// through the controller (AlterConfigs' meaning; the server computes an
// incremental change's result first), and returns once this node's store
// applies them.
func (n *Node) AlterTopicConfig(ctx context.Context, topic string, overrides map[string]string) error {
	resp, err := n.forward(ctx, request{Op: opAlter, Broker: n.cfg.NodeID, Topic: topic, Configs: overrides})
	if err != nil {
		return err
	}
	return n.waitSynced(ctx, resp.Index)
}
