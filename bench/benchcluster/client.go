package benchcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/nemesis"
)

// readyTimeout bounds each wait for the cluster to reach a state (a
// topic created, every partition led, every replica back in the ISR). A
// cluster that does not get there in a minute on this machine has failed,
// and the error says the state it was in.
const readyTimeout = 60 * time.Second

// pollEvery is how often a wait asks Metadata again.
const pollEvery = 20 * time.Millisecond

// describe lists a topic state by partition, for errors.
func describe(st map[int32]nemesis.PartitionState) string {
	ps := make([]int32, 0, len(st))
	for p := range st {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "; partition %d: %v", p, st[p])
	}
	return strings.TrimPrefix(b.String(), "; ")
}

// waitState waits until every one of topic's partitions (partitions of
// them) satisfies ok, and says what the state was if it never does.
func waitState(ctx context.Context, cl *kgo.Client, topic string, partitions int, what string, ok func(nemesis.PartitionState) bool) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var last map[int32]nemesis.PartitionState
	var lastErr error
	for {
		st, err := nemesis.TopicState(ctx, cl, topic)
		if err == nil && len(st) == partitions {
			all := true
			for _, s := range st {
				all = all && ok(s)
			}
			if all {
				return nil
			}
		}
		if err == nil {
			last = st
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("topic %s: not %s within %v: %s", topic, what, readyTimeout, describe(last))
			}
			return fmt.Errorf("topic %s: not %s within %v: %v", topic, what, readyTimeout, lastErr)
		case <-time.After(pollEvery):
		}
	}
}

// createTopic creates topic with rf replicas and configs (key=value)
// through CreateTopics (which kgo sends to the controller) and waits until
// each partition has a leader. A cluster whose metadata group has just
// started may have no controller yet, so the creation is tried again
// until readyTimeout.
func createTopic(ctx context.Context, cl *kgo.Client, brokers []string, topic string, partitions, rf int, configs ...string) error {
	tctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		err := nemesis.CreateTopic(tctx, brokers, topic, int32(partitions), int16(rf), configs...)
		// A creation whose answer was lost is found done by the retry.
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			break
		}
		select {
		case <-tctx.Done():
			return fmt.Errorf("create topic %s (%d partitions, replication factor %d): %w", topic, partitions, rf, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := checkConfigs(ctx, cl, topic, configs); err != nil {
		return err
	}
	return waitState(ctx, cl, topic, partitions, "led", func(s nemesis.PartitionState) bool { return s.Leader >= 0 })
}

// checkConfigs asks DescribeConfigs whether topic has configs (key=value),
// so that a system named for its settings is measured with them.
func checkConfigs(ctx context.Context, cl *kgo.Client, topic string, configs []string) error {
	if len(configs) == 0 {
		return nil
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe the configs of topic %s: %w", topic, err)
	}
	have := map[string]string{}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("describe the configs of topic %s: %w", topic, err)
		}
		for _, c := range r.Configs {
			if c.Value != nil {
				have[c.Name] = *c.Value
			}
		}
	}
	for _, kv := range configs {
		k, v, _ := strings.Cut(kv, "=")
		if have[k] != v {
			return fmt.Errorf("topic %s was created with %s, and DescribeConfigs says %s=%q", topic, kv, k, have[k])
		}
	}
	return nil
}

// newClient is a kgo client of the benchmark: idempotent, acks=all (kgo's
// defaults, said here), no compression, and a metadata refresh allowed
// every minAge, so that a producer that meets a dead leader looks for the
// new one at once, as the Java client does (its retry.backoff.ms is
// 100 ms), instead of kgo's default 5 s.
func newClient(brokers []string, minAge time.Duration, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MetadataMinAge(minAge)}, opts...)...)
}

// produced is what a produce phase did.
type produced struct {
	elapsed time.Duration
	// perPartition counts the records acknowledged on each partition.
	perPartition map[int32]int64
}

// produceAll writes n records of value to topic with cl (round robin over
// the partitions, as fast as acknowledgments come) and waits for every
// acknowledgment.
func produceAll(ctx context.Context, cl *kgo.Client, topic string, n int, value []byte) (produced, error) {
	var failed atomic.Pointer[error]
	var mu sync.Mutex
	per := map[int32]int64{}
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			} else {
				mu.Lock()
				per[r.Partition]++
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(start)
	if e := failed.Load(); e != nil {
		return produced{}, fmt.Errorf("produce to %s: %w", topic, *e)
	}
	return produced{elapsed: el, perPartition: per}, nil
}

// consumeAll reads topic's partitions from the start with a new kgo
// client (which fetches from each partition's leader) until each has given
// want[p] records, and returns the value bytes read. The counts are what
// was acknowledged: a partition of a cluster also holds raft's own entries
// as control batches, which clients skip, so its end offset is not its
// record count.
func consumeAll(ctx context.Context, brokers []string, minAge time.Duration, topic string, want map[int32]int64) (int64, time.Duration, error) {
	offsets := map[int32]kgo.Offset{}
	var total int64
	for p, n := range want {
		offsets[p] = kgo.NewOffset().AtStart()
		total += n
	}
	cl, err := newClient(brokers, minAge, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxPartitionBytes(8<<20))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	got := map[int32]int64{}
	var bytes, n int64
	start := time.Now()
	for n < total {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, 0, fmt.Errorf("consume %s: %d of %d records: %w", topic, n, total, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return 0, 0, fmt.Errorf("consume %s-%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition]++
			n++
			bytes += int64(len(r.Value))
		})
	}
	el := time.Since(start)
	for p, w := range want {
		if got[p] != w {
			return 0, 0, fmt.Errorf("consume %s-%d: %d records read, %d were acknowledged", topic, p, got[p], w)
		}
	}
	return bytes, el, nil
}

// readUntil reads topic's partitions from the start until each partition
// p has given the record at offset last[p], and returns every record
// read, its value as the checker's value. last is what the final marks
// were acknowledged at: everything before them is the whole partition.
func readUntil(ctx context.Context, brokers []string, minAge time.Duration, topic string, last map[int32]int64) ([]nemesis.Record, error) {
	offsets := map[int32]kgo.Offset{}
	for p := range last {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := newClient(brokers, minAge, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var out []nemesis.Record
	done := map[int32]bool{}
	for len(done) < len(last) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("final read of %s: %d partitions of %d read to their end: %w", topic, len(done), len(last), err)
		}
		for _, e := range fs.Errors() {
			return nil, fmt.Errorf("final read of %s-%d: %w", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, nemesis.Record{TP: nemesis.TP{Topic: topic, Partition: r.Partition}, Offset: r.Offset, Value: string(r.Value)})
			if r.Offset >= last[r.Partition] {
				done[r.Partition] = true
			}
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out, nil
}
