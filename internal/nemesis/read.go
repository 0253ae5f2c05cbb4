package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// retryDelay paces the final read's retries after an error answered at
// once (a leader that moved, an election under way): a pause between
// attempts, not a wait standing in for a condition, which the retry
// itself checks.
const retryDelay = 50 * time.Millisecond

// ReadAll reads every record of topic from the start of each partition
// to its end offset (ListOffsets latest, the high watermark, asked
// first), as a new consumer would, and returns them with the end offsets
// it read up to, by partition. A partition that does not reach its end
// before ctx is done is an error naming it and where the read stopped.
//
// It fetches from each partition's leader itself (Fetch, read
// uncommitted, decoded by kgo.ProcessFetchPartition as kgo's consumer
// decodes) instead of running a consumer, because the end is reached
// when the next offset to fetch reaches the end offset, and only the
// fetch knows that offset: a partition whose log ends with a control
// batch (a raft entry in a cluster, a transaction marker) has no record
// at end-1 for a consumer to return, and a consumer does not expose its
// position past the control batches it skipped.
func ReadAll(ctx context.Context, brokers []string, topic string) ([]Record, map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	var ends map[int32]int64
	var id [16]byte
	for {
		ends, id, err = endOffsets(ctx, cl, topic)
		if err == nil {
			break
		}
		if !pause(ctx) {
			return nil, nil, fmt.Errorf("nemesis: end offsets of %s: %w", topic, err)
		}
	}
	parts := make([]int32, 0, len(ends))
	for p := range ends {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	var out []Record
	var short []string
	for _, p := range parts {
		f := &leaderFetcher{cl: cl, topic: topic, id: id, partition: p, leader: -1}
		recs, err := readPartition(ctx, f.fetch, TP{topic, p}, ends[p])
		out = append(out, recs...)
		if err != nil {
			short = append(short, err.Error())
		}
	}
	if len(short) > 0 {
		return out, ends, fmt.Errorf("nemesis: the final read did not reach the end: %s", strings.Join(short, ", "))
	}
	return out, ends, nil
}

// fetchFunc fetches a partition from offset: the partition's part of a
// Fetch response, or an error when there was no answer.
type fetchFunc func(ctx context.Context, offset int64) (*kmsg.FetchResponseTopicPartition, error)

// readPartition reads tp from offset 0 until the next offset to fetch
// reaches end, with fetch, and returns the records read. Control batches
// move the next offset without giving a record, as in kgo's consumer, so
// a log ending with one is read to its end. Errors the broker answers
// (a leader moving, an election) are retried until ctx is done; a batch
// that does not decode (a bad CRC, a broken compression) is an error at
// once, naming its offset: the log is damaged, and retrying reads it
// again.
func readPartition(ctx context.Context, fetch fetchFunc, tp TP, end int64) ([]Record, error) {
	var out []Record
	var last error // the last answer that was an error, for the report
	off := int64(0)
	for off < end {
		if ctx.Err() != nil {
			return out, fmt.Errorf("%s read up to offset %d of %d (last error: %v): %w", tp, off, end, last, ctx.Err())
		}
		rp, err := fetch(ctx, off)
		if err == nil {
			err = kerr.ErrorForCode(rp.ErrorCode)
		}
		if err != nil {
			last = err
			pause(ctx)
			continue
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: off, Topic: tp.Topic, Partition: tp.Partition},
			rp, kgo.DefaultDecompressor(), nil)
		for _, r := range fp.Records {
			out = append(out, Record{TP: tp, Offset: r.Offset, Value: string(r.Value)})
		}
		if fp.Err != nil {
			return out, fmt.Errorf("%s: the batch at offset %d does not decode: %w", tp, next, fp.Err)
		}
		if next <= off {
			// An answer without a whole batch at off: a new leader whose
			// high watermark has not yet reached what the old one
			// acknowledged, or a log that ends short of end.
			pause(ctx)
			continue
		}
		off = next
	}
	return out, nil
}

// pause waits retryDelay, or until ctx is done; it reports whether ctx
// is still live.
func pause(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(retryDelay):
		return true
	}
}

// leaderFetcher fetches one partition from its leader, asking Metadata
// for the leader again after an error.
type leaderFetcher struct {
	cl        *kgo.Client
	topic     string
	id        [16]byte // the topic id, for Fetch v13 and later, which name topics by id
	partition int32
	leader    int32 // -1: ask Metadata
}

// fetch is a fetchFunc.
func (f *leaderFetcher) fetch(ctx context.Context, offset int64) (*kmsg.FetchResponseTopicPartition, error) {
	if f.leader < 0 {
		mt, err := topicMetadata(ctx, f.cl, f.topic)
		if err != nil {
			return nil, err
		}
		for _, p := range mt.Partitions {
			if p.Partition == f.partition {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, fmt.Errorf("metadata of %s-%d: %w", f.topic, f.partition, err)
				}
				f.leader = p.Leader
			}
		}
		if f.leader < 0 {
			return nil, fmt.Errorf("%s-%d has no leader", f.topic, f.partition)
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 200
	req.MinBytes = 1
	req.MaxBytes = 4 << 20
	req.SessionEpoch = -1 // no fetch session: every request names its partition
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = f.topic, f.id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.LogStartOffset = f.partition, offset, -1, -1
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, f.cl.Broker(int(f.leader)))
	if err != nil {
		f.leader = -1
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		f.leader = -1
		return nil, err
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if p := &resp.Topics[i].Partitions[j]; p.Partition == f.partition {
				if p.ErrorCode != 0 {
					f.leader = -1
				}
				return p, nil
			}
		}
	}
	err = fmt.Errorf("the Fetch answer of broker %d left out %s-%d", f.leader, f.topic, f.partition)
	f.leader = -1
	return nil, err
}

// topicMetadata asks Metadata for topic.
func topicMetadata(ctx context.Context, cl kmsg.Requestor, topic string) (*kmsg.MetadataResponseTopic, error) {
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 {
		return nil, fmt.Errorf("nemesis: Metadata answered %d topics for one", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return nil, fmt.Errorf("nemesis: metadata of %s: %w", topic, err)
	}
	return &resp.Topics[0], nil
}

// endOffsets asks each partition's end offset (ListOffsets latest: the
// high watermark) of topic, and returns them with the topic's id.
func endOffsets(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, [16]byte, error) {
	mt, err := topicMetadata(ctx, cl, topic)
	if err != nil {
		return nil, [16]byte{}, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for _, p := range mt.Partitions {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p.Partition, -1, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	req.Topics = append(req.Topics, lt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, mt.TopicID, err
	}
	ends := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, mt.TopicID, fmt.Errorf("nemesis: end offset of %s-%d: %w", topic, p.Partition, err)
			}
			ends[p.Partition] = p.Offset
		}
	}
	if len(ends) != len(mt.Partitions) {
		return nil, mt.TopicID, errors.New("nemesis: ListOffsets left out partitions of " + topic)
	}
	return ends, mt.TopicID, nil
}
