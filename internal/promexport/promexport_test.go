package promexport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// serve runs a server over a new store on a loopback port and returns it
// with its address and store.
func serve(t *testing.T) (*server.Server, string, *store.Store) {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{OffsetsPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(st, server.Options{NumPartitions: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		if err := <-done; !errors.Is(err, server.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv, ln.Addr().String(), st
}

// scrape reads and parses the page at url.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value is the counter or gauge of family name with the labels given as
// name=value pairs; ok is false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// TestScrapeCountsWhatWasSent produces n records of a known size with kgo
// and consumes them, then scrapes /metrics: the topic's bytes and messages
// in and out are exactly what was sent, the batches as the log stores
// them, and the per-API request counters moved.
func TestScrapeCountsWhatWasSent(t *testing.T) {
	srv, addr, st := serve(t)
	page := httptest.NewServer(Handler(Of(srv), false))
	defer page.Close()

	const n = 500
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.ProducerBatchMaxBytes(8<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "scraped", Key: fmt.Appendf(nil, "k%03d", i), Value: []byte(strings.Repeat("v", 100))})
	}
	if err := prod.ProduceSync(ctx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The log holds the batches as they arrived: its size is the bytes
	// that came in.
	var stored int64
	for p := range int32(2) {
		l, err := st.Log("scraped", p)
		if err != nil {
			t.Fatal(err)
		}
		stored += l.Size()
	}
	// A request is counted once its answer is written, which the client
	// may have read first.
	var produces float64
	testutil.WaitFor(t, "Produce requests counted", func() bool {
		produces, _ = value(scrape(t, page.URL+"/metrics"), "seglog_server_requests_total", "api", "Produce")
		return produces >= 1
	})

	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("scraped"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	fams := scrape(t, page.URL+"/metrics")
	for _, c := range []struct {
		name string
		want float64
	}{
		{"seglog_topic_bytes_in_total", float64(stored)},
		{"seglog_topic_messages_in_total", n},
		{"seglog_topic_bytes_out_total", float64(stored)},
		{"seglog_topic_messages_out_total", n},
	} {
		if got, ok := value(fams, c.name, "topic", "scraped"); !ok || got != c.want {
			t.Errorf("%s{topic=scraped} = %v (found %v), want %v", c.name, got, ok, c.want)
		}
	}
	testutil.WaitFor(t, "Fetch requests counted", func() bool {
		fams := scrape(t, page.URL+"/metrics")
		fetches, _ := value(fams, "seglog_server_requests_total", "api", "Fetch")
		observed, _ := value(fams, "seglog_server_request_duration_seconds", "api", "Fetch")
		return fetches >= 1 && observed == fetches
	})
	var end float64
	for p := range 2 {
		e, ok := value(fams, "seglog_partition_log_end_offset", "topic", "scraped", "partition", fmt.Sprint(p))
		if !ok {
			t.Errorf("no log end offset for partition %d", p)
		}
		end += e
	}
	if end != n {
		t.Errorf("log end offsets sum to %v, want %d", end, n)
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}

	// Another produce moves the Produce counter and the bytes in.
	if err := prod.ProduceSync(ctx(t), &kgo.Record{Topic: "scraped", Value: []byte("one more")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "one more Produce request counted", func() bool {
		got, _ := value(scrape(t, page.URL+"/metrics"), "seglog_server_requests_total", "api", "Produce")
		return got > produces
	})
	after := scrape(t, page.URL+"/metrics")
	if got, _ := value(after, "seglog_topic_messages_in_total", "topic", "scraped"); got != n+1 {
		t.Errorf("messages in %v after one more, want %d", got, n+1)
	}
}

// TestPprofOnlyWhenAsked: /debug/pprof/ answers only with pprof on.
func TestPprofOnlyWhenAsked(t *testing.T) {
	snap := func() (server.Metrics, error) { return server.Metrics{}, nil }
	for _, on := range []bool{false, true} {
		page := httptest.NewServer(Handler(snap, on))
		resp, err := http.Get(page.URL + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		page.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; resp.StatusCode != want {
			t.Errorf("pprof %v: status %d, want %d", on, resp.StatusCode, want)
		}
	}
}

// TestDocsListEveryMetric: docs/metrics.md names every metric the
// collector describes.
func TestDocsListEveryMetric(t *testing.T) {
	doc, err := vfs.ReadFileLimit(vfs.Default, "../../docs/metrics.md", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	for _, d := range descs {
		m := name.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		if !strings.Contains(string(doc), "`"+m[1]+"`") {
			t.Errorf("docs/metrics.md does not list %s", m[1])
		}
	}
}

// TestClusterFigures: a cluster node's view is exported, and a single
// node's page has no cluster metrics.
func TestClusterFigures(t *testing.T) {
	snap := server.Metrics{Cluster: &server.ClusterMetrics{Brokers: 3, ActiveController: true, LeaderPartitions: 2,
		UnderReplicated: 1, Offline: 1, Partitions: []server.ClusterPartitionMetrics{
			{Topic: "t", Partition: 4, Leader: -1, LeaderEpoch: 7, Replicas: 3, InSync: 0}},
		ISRShrinks: 2, ISRExpands: 5,
		CommitLatency: server.Histogram{Bounds: []float64{0.001, 0.01}, Cumulative: []uint64{4, 6}, Count: 9, Sum: 1.5}}}
	page := httptest.NewServer(Handler(func() (server.Metrics, error) { return snap, nil }, false))
	defer page.Close()
	fams := scrape(t, page.URL+"/metrics")
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"seglog_cluster_brokers", nil, 3},
		{"seglog_cluster_active_controller", nil, 1},
		{"seglog_cluster_leader_partitions", nil, 2},
		{"seglog_cluster_under_replicated_partitions", nil, 1},
		{"seglog_cluster_offline_partitions", nil, 1},
		{"seglog_cluster_partition_leader", []string{"topic", "t", "partition", "4"}, -1},
		{"seglog_cluster_partition_leader_epoch", []string{"topic", "t", "partition", "4"}, 7},
		{"seglog_cluster_partition_replicas", []string{"topic", "t", "partition", "4"}, 3},
		{"seglog_cluster_partition_in_sync_replicas", []string{"topic", "t", "partition", "4"}, 0},
		{"seglog_cluster_isr_shrinks_total", nil, 2},
		{"seglog_cluster_isr_expands_total", nil, 5},
		{"seglog_cluster_commit_duration_seconds", nil, 9},
	} {
		if got, ok := value(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	single := httptest.NewServer(Handler(func() (server.Metrics, error) { return server.Metrics{}, nil }, false))
	defer single.Close()
	if fams := scrape(t, single.URL+"/metrics"); fams["seglog_cluster_brokers"] != nil {
		t.Error("cluster metrics on a single node")
	}
}

// TestCleanerFigures: the store's cleaner figures are exported, a
// partition's dirty ratio only where it was measured, and a snapshot
// without them (a read-only store's) has no cleaner metrics.
func TestCleanerFigures(t *testing.T) {
	last := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snap := server.Metrics{Cleaner: &store.CleanerMetrics{Passes: 4, LastRun: last, SegmentsDeleted: 3,
		BytesDeleted: 6000, RecordsDeleted: 70, CompactionRounds: 2, BytesRead: 9000, BytesWritten: 1000, Failures: 1,
		Partitions: []store.PartitionCleanerMetrics{
			{Topic: "c", Partition: 1, DirtyRatio: 0.75},
			{Topic: "r", Partition: 0, DirtyRatio: -1, BytesDeleted: 6000}}}}
	page := httptest.NewServer(Handler(func() (server.Metrics, error) { return snap, nil }, false))
	defer page.Close()
	fams := scrape(t, page.URL+"/metrics")
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"seglog_cleaner_passes_total", nil, 4},
		{"seglog_cleaner_last_run_timestamp_seconds", nil, float64(last.Unix())},
		{"seglog_cleaner_deleted_bytes_total", nil, 6000},
		{"seglog_cleaner_deleted_segments_total", nil, 3},
		{"seglog_cleaner_compaction_rounds_total", nil, 2},
		{"seglog_cleaner_compaction_read_bytes_total", nil, 9000},
		{"seglog_cleaner_compaction_written_bytes_total", nil, 1000},
		{"seglog_cleaner_failures_total", nil, 1},
		{"seglog_partition_dirty_ratio", []string{"topic", "c", "partition", "1"}, 0.75},
	} {
		if got, ok := value(fams, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := value(fams, "seglog_partition_dirty_ratio", "topic", "r"); ok {
		t.Error("a dirty ratio for a partition never measured")
	}
	none := httptest.NewServer(Handler(func() (server.Metrics, error) { return server.Metrics{}, nil }, false))
	defer none.Close()
	if fams := scrape(t, none.URL+"/metrics"); fams["seglog_cleaner_passes_total"] != nil || fams["seglog_log_rolls_total"] != nil {
		t.Error("cleaner or log metrics without their figures")
	}
}

// TestLogFigures: the Logs' counters are exported, times in seconds.
func TestLogFigures(t *testing.T) {
	snap := server.Metrics{Logs: &seglog.StatsSnapshot{Rolls: 3, RollTime: 1500 * time.Millisecond,
		Flushes: 9, FlushTime: 250 * time.Millisecond, Opens: 5, OpenTime: 4 * time.Second,
		Recoveries: 2, RecoveryTime: 3 * time.Second, SegmentsRecovered: 7}}
	page := httptest.NewServer(Handler(func() (server.Metrics, error) { return snap, nil }, false))
	defer page.Close()
	fams := scrape(t, page.URL+"/metrics")
	for name, want := range map[string]float64{
		"seglog_log_rolls_total": 3, "seglog_log_roll_seconds_total": 1.5,
		"seglog_log_flushes_total": 9, "seglog_log_flush_seconds_total": 0.25,
		"seglog_log_opens_total": 5, "seglog_log_open_seconds_total": 4,
		"seglog_log_recoveries_total": 2, "seglog_log_recovery_seconds_total": 3,
		"seglog_log_recovered_segments_total": 7,
	} {
		if got, ok := value(fams, name); !ok || got != want {
			t.Errorf("%s = %v (found %v), want %v", name, got, ok, want)
		}
	}
}

// TestSnapshotErrorFailsScrape: a snapshot that cannot be taken fails the
// scrape (500) instead of reporting no figures.
func TestSnapshotErrorFailsScrape(t *testing.T) {
	page := httptest.NewServer(Handler(func() (server.Metrics, error) { return server.Metrics{}, errors.New("no refresh") }, false))
	defer page.Close()
	resp, err := http.Get(page.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "no refresh") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}
