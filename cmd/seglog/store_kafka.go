package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// When `seglog serve` holds a store, the work that has a Kafka protocol
// form goes through it as a Kafka client (serverConn): the server is then
// the store's one writer, and what the command did is what the server's
// clients see.

// serverTimeout bounds one exchange with the server holding a store: a
// listener that does not answer is reported, not waited on forever.
const serverTimeout = 30 * time.Second

// commitViaServer commits a group's offsets through the server at addr,
// as a standalone consumer does (generation -1, no member id: accepted
// while the group has no live members).
func commitViaServer(ctx context.Context, addr, group, topic string, offsets map[int32]int64) error {
	c, err := dialServer(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, off := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, off
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	r, err := c.request(ctx, req)
	if err != nil {
		return fmt.Errorf("committing through the server at %s: %w", addr, err)
	}
	resp := r.(*kmsg.OffsetCommitResponse)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("committing %s-%d through the server at %s: %w", t.Topic, p.Partition, addr, err)
			}
		}
	}
	return nil
}

// deleteRecordsViaServer is DeleteRecords through the server at addr; it
// returns the partition's new start offset.
func deleteRecordsViaServer(ctx context.Context, addr, topic string, partition int32, before int64) (int64, error) {
	c, err := dialServer(ctx, addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = int32(serverTimeout / time.Millisecond)
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, before
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := c.request(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("DeleteRecords through the server at %s: %w", addr, err)
	}
	resp := r.(*kmsg.DeleteRecordsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("DeleteRecords through the server at %s: no answer for %s-%d", addr, topic, partition)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return 0, fmt.Errorf("DeleteRecords of %s-%d before %d through the server at %s: %w", topic, partition, before, addr, err)
	}
	return p.LowWatermark, nil
}
