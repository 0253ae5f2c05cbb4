// Package promexport exports a server's figures (server.Metrics) in the
// Prometheus text format: a Collector over the snapshot, and the HTTP
// handler seglog serve --metrics-listen answers with. It is the one
// package that imports the Prometheus client, so that the engine and an
// embedder who does not want it carry no such dependency. docs/metrics.md
// lists every name and the Kafka metric it corresponds to.
package promexport

import (
	"net/http"
	"net/http/pprof"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seglog/seglog/server"
)

// Collector is a prometheus.Collector over a snapshot function: every
// scrape takes one snapshot and reports it whole, so the figures of a
// scrape are of one moment.
type Collector struct {
	snapshot func() (server.Metrics, error)
}

// Snapshot is what a Collector reports: a (*server.Server).Metrics, or
// server.StoreMetrics of a store that may fail to refresh. An error fails
// the scrape, rather than report figures that vanish.
type Snapshot func() (server.Metrics, error)

// Of is the Snapshot of a server.
func Of(srv *server.Server) Snapshot {
	return func() (server.Metrics, error) { return srv.Metrics(), nil }
}

// NewCollector returns a Collector over snapshot.
func NewCollector(snapshot Snapshot) *Collector {
	return &Collector{snapshot: snapshot}
}

// desc builds the metric descriptions below; the names follow Prometheus'
// conventions (a unit suffix, _total on counters).
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The metrics, in the order of docs/metrics.md.
var (
	connectionsOpen     = desc("seglog_server_connections", "Client connections being served.")
	connectionsAccepted = desc("seglog_server_connections_accepted_total", "Client connections accepted.")
	connectionsRefused  = desc("seglog_server_connections_refused_total", "Client connections closed as they were accepted, over --max-connections or --max-connections-per-ip.")
	parkedFetches       = desc("seglog_server_parked_fetches", "Fetch requests waiting for data (long polling).")
	throttles           = desc("seglog_server_quota_throttles_total", "Responses throttled by a client quota, per quota key.", "quota")
	throttleSeconds     = desc("seglog_server_quota_throttle_seconds_total", "Time of the client-quota throttles given, per quota key.", "quota")
	requests            = desc("seglog_server_requests_total", "Requests answered, per API.", "api")
	requestDuration     = desc("seglog_server_request_duration_seconds", "Time from a request parsed to its answer written, per API.", "api")
	bytesIn             = desc("seglog_topic_bytes_in_total", "Bytes of record batches stored by Produce, per topic.", "topic")
	messagesIn          = desc("seglog_topic_messages_in_total", "Records stored by Produce, per topic.", "topic")
	bytesOut            = desc("seglog_topic_bytes_out_total", "Bytes of record batches sent by Fetch, per topic.", "topic")
	messagesOut         = desc("seglog_topic_messages_out_total", "Offsets spanned by the batches sent by Fetch (records, but for compaction gaps), per topic.", "topic")
	logStart            = desc("seglog_partition_log_start_offset", "A partition's log start offset.", "topic", "partition")
	logEnd              = desc("seglog_partition_log_end_offset", "A partition's log end offset (the next offset written).", "topic", "partition")
	logSize             = desc("seglog_partition_size_bytes", "Bytes of a partition's segments.", "topic", "partition")
	logSegments         = desc("seglog_partition_segments", "Segments of a partition's log.", "topic", "partition")
	groupCommitted      = desc("seglog_consumer_group_committed_offset", "A consumer group's committed offset on a partition.", "group", "topic", "partition")
	groupLag            = desc("seglog_consumer_group_lag", "Records between a consumer group's committed offset and the partition's end.", "group", "topic", "partition")
	brokers             = desc("seglog_cluster_brokers", "Live brokers of the cluster.")
	activeController    = desc("seglog_cluster_active_controller", "1 on the node that is the cluster's controller, else 0.")
	leaderPartitions    = desc("seglog_cluster_leader_partitions", "Partitions this node leads.")
	underReplicated     = desc("seglog_cluster_under_replicated_partitions", "Partitions this node leads with fewer in-sync replicas than replicas.")
	offlinePartitions   = desc("seglog_cluster_offline_partitions", "Partitions without a leader, in this node's view.")
	partLeader          = desc("seglog_cluster_partition_leader", "A partition's leader node id (-1 for none).", "topic", "partition")
	partLeaderEpoch     = desc("seglog_cluster_partition_leader_epoch", "A partition's leader epoch: it goes up with every election.", "topic", "partition")
	partReplicas        = desc("seglog_cluster_partition_replicas", "A partition's replicas.", "topic", "partition")
	partInSync          = desc("seglog_cluster_partition_in_sync_replicas", "A partition's in-sync replicas.", "topic", "partition")
	isrShrinks          = desc("seglog_cluster_isr_shrinks_total", "Times an in-sync set of a partition this node led lost a member.")
	isrExpands          = desc("seglog_cluster_isr_expands_total", "Times an in-sync set of a partition this node led gained a member.")
	commitDuration      = desc("seglog_cluster_commit_duration_seconds", "Time from proposing a producer batch to its raft commit, on this node.")
	cleanerPasses       = desc("seglog_cleaner_passes_total", "Rounds of the store's cleaner over every partition.")
	cleanerLastRun      = desc("seglog_cleaner_last_run_timestamp_seconds", "When the cleaner's last round ended, in Unix seconds.")
	cleanerDeleted      = desc("seglog_cleaner_deleted_bytes_total", "Bytes of segments retention deleted.")
	cleanerDeletedSegs  = desc("seglog_cleaner_deleted_segments_total", "Segments retention deleted.")
	compactionRounds    = desc("seglog_cleaner_compaction_rounds_total", "Compaction rounds run.")
	compactionRead      = desc("seglog_cleaner_compaction_read_bytes_total", "Segment bytes compaction read.")
	compactionWritten   = desc("seglog_cleaner_compaction_written_bytes_total", "Segment bytes compaction wrote.")
	cleanerFailures     = desc("seglog_cleaner_failures_total", "Failed retention passes and compaction rounds.")
	dirtyRatio          = desc("seglog_partition_dirty_ratio", "A compacted partition's dirty share of its cleanable bytes at the cleaner's last pass.", "topic", "partition")
	logRolls            = desc("seglog_log_rolls_total", "Active segments rolled, over every partition.")
	logRollSeconds      = desc("seglog_log_roll_seconds_total", "Time spent rolling segments.")
	logFlushes          = desc("seglog_log_flushes_total", "Flushes (fsync rounds) that made appended records durable.")
	logFlushSeconds     = desc("seglog_log_flush_seconds_total", "Time spent flushing.")
	logOpens            = desc("seglog_log_opens_total", "Partition Logs opened (first use, or reopened after the budget of open Logs closed them).")
	logOpenSeconds      = desc("seglog_log_open_seconds_total", "Time spent opening partition Logs, recovery included.")
	logRecoveries       = desc("seglog_log_recoveries_total", "Partition Logs recovered after a crash (on their first use).")
	logRecoverySeconds  = desc("seglog_log_recovery_seconds_total", "Time spent opening partition Logs that needed recovery.")
	logRecoveredSegs    = desc("seglog_log_recovered_segments_total", "Segments scanned by recovery.")
)

var descs = []*prometheus.Desc{connectionsOpen, connectionsAccepted, connectionsRefused, parkedFetches, throttles, throttleSeconds, requests, requestDuration,
	bytesIn, messagesIn, bytesOut, messagesOut, logStart, logEnd, logSize, logSegments, groupCommitted, groupLag,
	brokers, activeController, leaderPartitions, underReplicated, offlinePartitions,
	partLeader, partLeaderEpoch, partReplicas, partInSync, isrShrinks, isrExpands, commitDuration,
	cleanerPasses, cleanerLastRun, cleanerDeleted, cleanerDeletedSegs, compactionRounds, compactionRead,
	compactionWritten, cleanerFailures, dirtyRatio,
	logRolls, logRollSeconds, logFlushes, logFlushSeconds, logOpens, logOpenSeconds,
	logRecoveries, logRecoverySeconds, logRecoveredSegs}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// Collect takes a snapshot and sends it as metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	m, err := c.snapshot()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(connectionsOpen, err)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	histogram := func(d *prometheus.Desc, h server.Histogram, labels ...string) {
		buckets := make(map[float64]uint64, len(h.Bounds))
		for i, b := range h.Bounds {
			buckets[b] = h.Cumulative[i]
		}
		ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets, labels...)
	}
	gauge(connectionsOpen, float64(m.ConnectionsOpen))
	counter(connectionsAccepted, float64(m.ConnectionsAccepted))
	counter(connectionsRefused, float64(m.ConnectionsRefused))
	gauge(parkedFetches, float64(m.ParkedFetches))
	for _, t := range m.Throttles {
		counter(throttles, float64(t.Throttles), t.Quota)
		counter(throttleSeconds, t.Seconds, t.Quota)
	}
	for _, r := range m.Requests {
		counter(requests, float64(r.Requests), r.Name)
		histogram(requestDuration, r.Latency, r.Name)
	}
	for _, t := range m.Topics {
		counter(bytesIn, float64(t.BytesIn), t.Topic)
		counter(messagesIn, float64(t.MessagesIn), t.Topic)
		counter(bytesOut, float64(t.BytesOut), t.Topic)
		counter(messagesOut, float64(t.MessagesOut), t.Topic)
	}
	for _, p := range m.Partitions {
		if p.Err != nil {
			continue // no figures: the log does not open
		}
		part := strconv.Itoa(int(p.Partition))
		gauge(logStart, float64(p.StartOffset), p.Topic, part)
		gauge(logEnd, float64(p.EndOffset), p.Topic, part)
		gauge(logSize, float64(p.Size), p.Topic, part)
		gauge(logSegments, float64(p.Segments), p.Topic, part)
	}
	for _, g := range m.GroupLag {
		part := strconv.Itoa(int(g.Partition))
		gauge(groupCommitted, float64(g.Committed), g.Group, g.Topic, part)
		gauge(groupLag, float64(g.Lag), g.Group, g.Topic, part)
	}
	if cl := m.Cluster; cl != nil {
		active := 0.0
		if cl.ActiveController {
			active = 1
		}
		gauge(brokers, float64(cl.Brokers))
		gauge(activeController, active)
		gauge(leaderPartitions, float64(cl.LeaderPartitions))
		gauge(underReplicated, float64(cl.UnderReplicated))
		gauge(offlinePartitions, float64(cl.Offline))
		counter(isrShrinks, float64(cl.ISRShrinks))
		counter(isrExpands, float64(cl.ISRExpands))
		histogram(commitDuration, cl.CommitLatency)
		for _, p := range cl.Partitions {
			part := strconv.Itoa(int(p.Partition))
			gauge(partLeader, float64(p.Leader), p.Topic, part)
			gauge(partLeaderEpoch, float64(p.LeaderEpoch), p.Topic, part)
			gauge(partReplicas, float64(p.Replicas), p.Topic, part)
			gauge(partInSync, float64(p.InSync), p.Topic, part)
		}
	}
	if cm := m.Cleaner; cm != nil {
		counter(cleanerPasses, float64(cm.Passes))
		if !cm.LastRun.IsZero() {
			gauge(cleanerLastRun, float64(cm.LastRun.UnixNano())/1e9)
		}
		counter(cleanerDeleted, float64(cm.BytesDeleted))
		counter(cleanerDeletedSegs, float64(cm.SegmentsDeleted))
		counter(compactionRounds, float64(cm.CompactionRounds))
		counter(compactionRead, float64(cm.BytesRead))
		counter(compactionWritten, float64(cm.BytesWritten))
		counter(cleanerFailures, float64(cm.Failures))
		for _, p := range cm.Partitions {
			if p.DirtyRatio < 0 {
				continue // not compacted, or not measured yet
			}
			gauge(dirtyRatio, p.DirtyRatio, p.Topic, strconv.Itoa(int(p.Partition)))
		}
	}
	if lg := m.Logs; lg != nil {
		counter(logRolls, float64(lg.Rolls))
		counter(logRollSeconds, lg.RollTime.Seconds())
		counter(logFlushes, float64(lg.Flushes))
		counter(logFlushSeconds, lg.FlushTime.Seconds())
		counter(logOpens, float64(lg.Opens))
		counter(logOpenSeconds, lg.OpenTime.Seconds())
		counter(logRecoveries, float64(lg.Recoveries))
		counter(logRecoverySeconds, lg.RecoveryTime.Seconds())
		counter(logRecoveredSegs, float64(lg.SegmentsRecovered))
	}
}

// Handler serves /metrics in the Prometheus text format: the snapshot's
// figures, the Go runtime's and the process'. With pprof, it also serves
// net/http/pprof under /debug/pprof/, which an operator asks for
// explicitly: profiles show the program's internals and cost CPU.
func Handler(snapshot Snapshot, withPprof bool) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(snapshot),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
