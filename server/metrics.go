package server

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/latency"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// What the server counts, for an operator's dashboards (docs/metrics.md).
//
// The hot path only adds to atomics: per topic, per API key, and a few
// gauges; nothing here knows of Prometheus, so an embedder gets the figures
// from Metrics without that dependency, and seglog serve exports them
// (internal/promexport). What lives in the store (offsets, sizes, group
// commits) is read when a snapshot is taken, not counted.

// serverMetrics is what the server counts as it answers; its zero value
// is ready.
type serverMetrics struct {
	connsOpen     atomic.Int64
	connsAccepted atomic.Int64
	connsRefused  atomic.Int64
	parkedFetches atomic.Int64
	apis          [kmsg.MaxKey + 1]latency.Histogram
	// topics maps a topic name to its *topicCounters. An entry is made
	// only for a topic a request succeeded on, so a client naming random
	// topics grows nothing.
	topics sync.Map
}

type topicCounters struct {
	bytesIn, messagesIn, bytesOut, messagesOut atomic.Int64
}

func (m *serverMetrics) topic(name string) *topicCounters {
	if v, ok := m.topics.Load(name); ok {
		return v.(*topicCounters)
	}
	v, _ := m.topics.LoadOrStore(name, new(topicCounters))
	return v.(*topicCounters)
}

// request counts one answered request of key, which took since start.
func (m *serverMetrics) request(key int16, start time.Time) {
	if key < 0 || int(key) >= len(m.apis) {
		return
	}
	m.apis[key].Observe(time.Since(start))
}

// produced counts the batches of a Produce that were stored (or
// replicated): a partition answered without error. As Kafka's
// BytesInPerSec, a retried batch answered as a duplicate counts again.
func (m *serverMetrics) produced(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
	for i, t := range req.Topics {
		var bytes, msgs int64
		for j, p := range t.Partitions {
			if resp.Topics[i].Partitions[j].ErrorCode != 0 || len(p.Records) < record.HeaderSize {
				continue
			}
			bytes += int64(len(p.Records))
			msgs += int64(record.Batch(p.Records).NumRecords())
		}
		if bytes > 0 {
			c := m.topic(t.Topic)
			c.bytesIn.Add(bytes)
			c.messagesIn.Add(msgs)
		}
	}
}

// fetched counts the record sets of a Fetch response as it is sent:
// before, as Kafka counts BytesOutPerSec when it builds the response, so
// that a client holding the records finds them counted.
// Messages are the offsets the batches span: the response carries the
// batches as files hold them, and their record counts would cost a read
// of every batch header; the two differ only where compaction left gaps.
func (m *serverMetrics) fetched(topics []fetchTopic) {
	for _, t := range topics {
		var bytes, msgs int64
		for _, p := range t.parts {
			if p.slice == nil || p.slice.Len() == 0 {
				continue
			}
			bytes += p.slice.Len()
			msgs += p.slice.LastOffset() - p.slice.FirstOffset() + 1
		}
		if bytes > 0 {
			c := m.topic(t.name)
			c.bytesOut.Add(bytes)
			c.messagesOut.Add(msgs)
		}
	}
}

// Metrics is a snapshot of a Server's figures: counters since New, gauges
// as they were, and what the store and the group coordinator held when it
// was taken. Counters never go down; slices are sorted and the caller's.
type Metrics struct {
	// ConnectionsOpen is how many client connections are being served;
	// ConnectionsAccepted, how many were accepted since New.
	ConnectionsOpen, ConnectionsAccepted int64
	// ConnectionsRefused counts the connections closed as they were
	// accepted, over Options.MaxConnections or MaxConnectionsPerIP.
	ConnectionsRefused int64
	// ParkedFetches is how many Fetch requests wait for data (long
	// polling: fewer than MinBytes available, MaxWait not passed).
	ParkedFetches int64
	// Requests has one entry per API key answered at least once, by key.
	Requests []RequestMetrics
	// Topics has one entry per topic produced to or fetched from, by
	// name (a deleted topic keeps its entry: counters do not go back).
	Topics []TopicMetrics
	// Partitions has one entry per partition of the store, by topic and
	// partition (an offsets partition among them).
	Partitions []PartitionMetrics
	// GroupLag has one entry per committed offset of a group this node
	// coordinates, by group, topic and partition.
	GroupLag []GroupLagMetrics
	// Cluster is a cluster node's view of the cluster; nil on a single
	// node.
	Cluster *ClusterMetrics
	// Cleaner is what the store's cleaner did (retention's deletions,
	// compaction's bytes, each partition's dirty ratio); nil for a
	// read-only store, which runs none.
	Cleaner *store.CleanerMetrics
	// Logs is what the store's partition Logs spent on rolls, flushes,
	// opens and recovery (store.Store.LogStats); nil for a read-only
	// store.
	Logs *seglog.StatsSnapshot
	// Throttles counts the client-quota throttles given, one entry per
	// quota key (docs/quotas.md).
	Throttles []ThrottleMetrics
}

// RequestMetrics counts the requests of one API key.
type RequestMetrics struct {
	// Key is the Kafka API key (0 Produce, 1 Fetch, ...), Name its name
	// as kmsg spells it ("Produce", "Fetch", ...).
	Key  int16
	Name string
	// Requests is how many were answered (or closed the connection
	// after parsing, as an unsupported version does).
	Requests int64
	// Latency is the time from a request's arrival, parsed, to its
	// answer written.
	Latency Histogram
}

// Histogram is a latency distribution with fixed bounds.
type Histogram struct {
	// Bounds are the buckets' upper bounds in seconds, the same for
	// every histogram, from 0.5 ms to 30 s;
	// Cumulative[i] counts the observations at or under Bounds[i], as
	// Prometheus' buckets do. Count includes those above the last bound.
	Bounds     []float64
	Cumulative []uint64
	Count      uint64
	// Sum is the observations' total in seconds.
	Sum float64
}

// histogramOf snapshots h.
func histogramOf(h *latency.Histogram) Histogram {
	cum, count, sum := h.Snapshot()
	return Histogram{Bounds: slices.Clone(latency.Bounds[:]), Cumulative: cum, Count: count, Sum: sum}
}

// TopicMetrics is one topic's traffic through the server.
type TopicMetrics struct {
	Topic string
	// BytesIn and MessagesIn count stored Produce record batches (their
	// size as sent, records as their headers say).
	BytesIn, MessagesIn int64
	// BytesOut counts the record bytes Fetch responses sent, and
	// MessagesOut the offsets those batches span (the records, but for
	// gaps compaction left).
	BytesOut, MessagesOut int64
}

// PartitionMetrics is one partition's log as the store saw it at the
// snapshot.
type PartitionMetrics struct {
	Topic     string
	Partition int32
	// StartOffset and EndOffset are the log's bounds (EndOffset is the
	// next offset to be written), Size its segments' bytes.
	StartOffset, EndOffset, Size int64
	Segments                     int
	// Err is why the partition could not be read; the other fields are
	// then zero.
	Err error
}

// GroupLagMetrics is one consumer group's position on one partition.
type GroupLagMetrics struct {
	Group     string
	Topic     string
	Partition int32
	// Committed is the group's committed offset, End the partition's log
	// end, Lag the records between them (from the log start when
	// retention removed records below the commit; negative for a commit
	// past the end).
	Committed, End, Lag int64
}

// Metrics returns a snapshot of the server's figures. It reads every
// partition's bounds from the store (without opening closed logs) and
// every group's commits from the coordinator, so it costs a walk of the
// store: take it at scrape intervals, not per request.
func (s *Server) Metrics() Metrics {
	m := &s.metrics
	out := Metrics{
		ConnectionsOpen:     m.connsOpen.Load(),
		ConnectionsAccepted: m.connsAccepted.Load(),
		ConnectionsRefused:  m.connsRefused.Load(),
		ParkedFetches:       m.parkedFetches.Load(),
		Throttles:           s.quota.metrics(),
	}
	for key := range m.apis {
		h := histogramOf(&m.apis[key])
		if h.Count == 0 {
			continue
		}
		out.Requests = append(out.Requests, RequestMetrics{Key: int16(key), Name: kmsg.NameForKey(int16(key)),
			Requests: int64(h.Count), Latency: h})
	}
	m.topics.Range(func(k, v any) bool {
		c := v.(*topicCounters)
		out.Topics = append(out.Topics, TopicMetrics{Topic: k.(string),
			BytesIn: c.bytesIn.Load(), MessagesIn: c.messagesIn.Load(),
			BytesOut: c.bytesOut.Load(), MessagesOut: c.messagesOut.Load()})
		return true
	})
	slices.SortFunc(out.Topics, func(a, b TopicMetrics) int { return strings.Compare(a.Topic, b.Topic) })
	out.Partitions = partitionMetrics(s.st)
	out.Cleaner, out.Logs = storeCounters(s.st)
	s.mu.Lock()
	coord := s.coord
	s.mu.Unlock()
	if coord != nil { // nil until Serve
		out.GroupLag = s.groupLag(coord.gs, out.Partitions)
	}
	out.Cluster = s.clusterMetrics()
	return out
}

// StoreMetrics is the part of a Metrics snapshot a store holds without a
// server: every partition's bounds and size, and the lag of every group
// with commits in the store's offsets topic, and its cleaner's and Logs'
// counters unless it is read-only. Nothing is counted, so the traffic figures are
// empty. For a read-only store, Refresh it first, as every reader of one
// does.
func StoreMetrics(st *store.Store) Metrics {
	var out Metrics
	out.Partitions = partitionMetrics(st)
	out.Cleaner, out.Logs = storeCounters(st)
	out.GroupLag = groupLag(localGroups{st}, nil)
	return out
}

// storeCounters is the store's cleaner figures and its Logs' counters,
// or nils for a read-only store: its zeros would read as a cleaner that
// never ran and logs never flushed, on a page beside a broker whose
// cleaner runs and whose logs flush.
func storeCounters(st *store.Store) (*store.CleanerMetrics, *seglog.StatsSnapshot) {
	if st.ReadOnly() {
		return nil, nil
	}
	m, l := st.CleanerMetrics(), st.LogStats()
	return &m, &l
}

func partitionMetrics(st *store.Store) []PartitionMetrics {
	var out []PartitionMetrics
	for _, topic := range st.Topics() {
		info, err := st.DescribeTopic(topic)
		if err != nil {
			continue // deleted since the listing
		}
		for _, p := range info.Partitions {
			out = append(out, PartitionMetrics{Topic: topic, Partition: p.Partition, StartOffset: p.StartOffset,
				EndOffset: p.EndOffset, Size: p.Size, Segments: p.Segments, Err: p.Err})
		}
	}
	return out
}

// groupLag reads the commits of every group the coordinator keeps (on a
// cluster node, those of the offsets partitions it leads). A single node's
// group store computes the lag against the log end, as
// kafka-consumer-groups --describe does; a cluster's commits come without
// bounds, and their lag is taken against the high watermark, the end a
// consumer can read to.
func (s *Server) groupLag(gs groupStore, parts []PartitionMetrics) []GroupLagMetrics {
	if s.cluster == nil {
		return groupLag(gs, nil)
	}
	type key struct {
		topic     string
		partition int32
	}
	bounds := make(map[key]PartitionMetrics, len(parts))
	for _, p := range parts {
		bounds[key{p.Topic, p.Partition}] = p
	}
	return groupLag(gs, func(row *GroupLagMetrics) bool {
		b, ok := bounds[key{row.Topic, row.Partition}]
		if !ok || b.Err != nil {
			return false
		}
		end := b.EndOffset
		if st, err := s.cluster.State(row.Topic, row.Partition); err == nil {
			end = min(max(st.HighWatermark, b.StartOffset), end)
		}
		// As the store's lag: negative past the end, and counted from
		// the start when retention passed the commit.
		row.End, row.Lag = end, end-max(row.Committed, b.StartOffset)
		if row.Committed > end {
			row.Lag = end - row.Committed
		}
		return true
	})
}

// groupLag lists every commit of gs's groups with the lag gs computed;
// bound, when not nil, sets a row's end and lag instead, or drops the row.
func groupLag(gs groupStore, bound func(*GroupLagMetrics) bool) []GroupLagMetrics {
	var out []GroupLagMetrics
	for _, g := range gs.groups() {
		rows, err := gs.committedAll(g)
		if err != nil {
			continue // deleted since the listing
		}
		for _, r := range rows {
			if r.Err != nil {
				continue // the partition's own entry carries its error
			}
			row := GroupLagMetrics{Group: g, Topic: r.Topic, Partition: r.Partition, Committed: r.Committed, End: r.End, Lag: r.Lag}
			if bound != nil && !bound(&row) {
				continue
			}
			out = append(out, row)
		}
	}
	return out
}
