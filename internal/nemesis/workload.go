package nemesis

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopic creates topic with the given partitions, replication
// factor (-1 for the broker's default) and configs (key=value) through
// the Kafka protocol (CreateTopics, which kgo sends to the controller), as
// an operator's tool would: what the topic's configs mean is the broker's
// business, on one node or a cluster.
func CreateTopic(ctx context.Context, brokers []string, topic string, partitions int32, replicationFactor int16, configs ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, replicationFactor
	for _, kv := range configs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("nemesis: config %q is not key=value", kv)
		}
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("nemesis: CreateTopics answered %d topics for one", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		msg := ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = ": " + *m
		}
		return fmt.Errorf("nemesis: create topic %s: %w%s", topic, err, msg)
	}
	return nil
}

// Workload produces unique values to a topic from several writers, each
// its own kgo client with acks=all and idempotence (kgo's defaults, set
// explicitly here), and records every acknowledgment and every failure
// for the checker. Writers keep producing across kills and pauses: while
// the broker is down kgo retries, and records that fail are recorded as
// failed (they may be stored or not).
type Workload struct {
	Brokers []string
	Topic   string
	Writers int
	// Timeout is how long a writer waits for a produce answer before it
	// gives up on the connection and retries on a new one (kgo's
	// ProduceRequestTimeout, with as much again of RequestTimeoutOverhead).
	// Zero means 1 s (2 s in all): short, so that a SIGSTOP longer than
	// that makes the retry and the original request, still held by the
	// paused broker, race in the broker when it resumes, which idempotence
	// must resolve.
	Timeout time.Duration
	// Buffered bounds each writer's records in flight (kgo's
	// MaxBufferedRecords): a writer blocks while the broker is down
	// instead of piling up records. Zero means 200.
	Buffered int

	mu       sync.Mutex
	acked    []Record
	failed   []string
	errs     map[string]int // failure messages, counted, for the run's log
	live     []Record
	stop     context.CancelFunc
	wg       sync.WaitGroup // writers and the live reader
	promises sync.WaitGroup // records produced whose promise has not run
	writers  []*kgo.Client
	reader   *kgo.Client
}

// Value is the value writer w gives its record number seq: unique in a
// run, and saying who wrote it.
func Value(w, seq int) string { return fmt.Sprintf("w%d-%d", w, seq) }

// Start starts the writers and, with live set, a consumer reading the
// topic from the start while they write (what it sees must never
// disappear: History.LiveReads).
func (wl *Workload) Start(live bool) error {
	ctx, cancel := context.WithCancel(context.Background())
	wl.stop = cancel
	wl.errs = map[string]int{}
	buffered := wl.Buffered
	if buffered == 0 {
		buffered = 200
	}
	timeout := wl.Timeout
	if timeout == 0 {
		timeout = time.Second
	}
	// Each writer compresses with another codec, so the broker checks
	// (and a restarted broker recovers) batches of every kind.
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.ZstdCompression(), kgo.Lz4Compression(),
		kgo.SnappyCompression(), kgo.GzipCompression()}
	for w := range wl.Writers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(wl.Brokers...), kgo.DefaultProduceTopic(wl.Topic),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(buffered),
			kgo.ProducerLinger(time.Millisecond), kgo.ProducerBatchMaxBytes(16<<10),
			kgo.ProducerBatchCompression(codecs[w%len(codecs)]),
			kgo.ProduceRequestTimeout(timeout), kgo.RequestTimeoutOverhead(timeout))
		if err != nil {
			wl.Stop(context.Background())
			return err
		}
		wl.writers = append(wl.writers, cl)
		wl.wg.Add(1)
		go wl.write(ctx, cl, w)
	}
	if live {
		cl, err := kgo.NewClient(kgo.SeedBrokers(wl.Brokers...), kgo.ConsumeTopics(wl.Topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			wl.Stop(context.Background())
			return err
		}
		wl.reader = cl
		wl.wg.Add(1)
		go wl.read(ctx, cl)
	}
	return nil
}

// write produces writer w's values until ctx is done. The key is the
// value, so the default partitioner spreads them over the partitions.
// Batches are at most 16 KiB, so a topic with small segments (and so a
// max.message.bytes below kgo's 1 MB default) takes them.
func (wl *Workload) write(ctx context.Context, cl *kgo.Client, w int) {
	defer wl.wg.Done()
	for seq := 0; ctx.Err() == nil; seq++ {
		v := Value(w, seq)
		wl.promises.Add(1)
		cl.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer wl.promises.Done()
			wl.mu.Lock()
			defer wl.mu.Unlock()
			if err != nil {
				wl.failed = append(wl.failed, v)
				wl.errs[err.Error()]++
				return
			}
			wl.acked = append(wl.acked, Record{TP: TP{r.Topic, r.Partition}, Offset: r.Offset, Value: v})
		})
	}
}

// read consumes the topic until ctx is done.
func (wl *Workload) read(ctx context.Context, cl *kgo.Client) {
	defer wl.wg.Done()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		wl.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			wl.live = append(wl.live, Record{TP: TP{r.Topic, r.Partition}, Offset: r.Offset, Value: string(r.Value)})
		})
		wl.mu.Unlock()
	}
}

// Acked returns how many records were acknowledged so far.
func (wl *Workload) Acked() int {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return len(wl.acked)
}

// Stop stops producing, waits up to ctx for what is in flight to be
// acknowledged (kgo's Flush), closes the clients (failing whatever is
// left) and returns the acknowledgments, failures and live reads.
func (wl *Workload) Stop(ctx context.Context) History {
	if wl.stop != nil {
		wl.stop()
	}
	wl.wg.Wait()
	for _, cl := range wl.writers {
		cl.Flush(ctx) // an error leaves records unacknowledged: Close fails them
	}
	for _, cl := range wl.writers {
		cl.Close()
	}
	if wl.reader != nil {
		wl.reader.Close()
	}
	wl.promises.Wait()
	wl.mu.Lock()
	defer wl.mu.Unlock()
	return History{Acked: slices.Clone(wl.acked), Failed: slices.Clone(wl.failed), LiveReads: slices.Clone(wl.live)}
}

// Errors summarizes the produce failures seen, most frequent first.
func (wl *Workload) Errors() string {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	type count struct {
		msg string
		n   int
	}
	var cs []count
	for m, n := range wl.errs {
		cs = append(cs, count{m, n})
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].n > cs[j].n || cs[i].n == cs[j].n && cs[i].msg < cs[j].msg })
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%d× %s; ", c.n, c.msg)
	}
	return strings.TrimSuffix(b.String(), "; ")
}
