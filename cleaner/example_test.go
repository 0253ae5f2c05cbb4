package cleaner_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// writePrometheus renders a metrics snapshot in Prometheus' text
// exposition format. Serve it from an HTTP handler at /metrics: no
// Prometheus library is needed, in seglog or in the program.
func writePrometheus(w io.Writer, m cleaner.Metrics) {
	counter := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	counter("seglog_cleaner_segments_deleted_total", "Segments deleted by retention.", m.SegmentsDeleted)
	counter("seglog_cleaner_bytes_deleted_total", "Bytes of segments deleted by retention.", m.BytesDeleted)
	counter("seglog_cleaner_failures_total", "Failed log passes.", m.Failures)
	fmt.Fprintf(w, "# HELP seglog_cleaner_backlog Logs waiting for a worker.\n# TYPE seglog_cleaner_backlog gauge\nseglog_cleaner_backlog %d\n", m.Backlog)
	fmt.Fprintf(w, "# HELP seglog_log_start_offset First offset of the log.\n# TYPE seglog_log_start_offset gauge\n")
	for _, l := range m.Logs {
		fmt.Fprintf(w, "seglog_log_start_offset{dir=%q} %d\n", l.Dir, l.StartOffset)
	}
	fmt.Fprintf(w, "# HELP seglog_log_cleaner_failed Whether the log's last pass failed.\n# TYPE seglog_log_cleaner_failed gauge\n")
	for _, l := range m.Logs {
		failed := 0
		if l.Failed {
			failed = 1
		}
		fmt.Fprintf(w, "seglog_log_cleaner_failed{dir=%q} %d\n", l.Dir, failed)
	}
}

// Retention over a log, then its metrics exported for Prometheus.
func Example_prometheus() {
	fs := vfs.NewMem()
	l, err := seglog.Open("/data/bookings-0", seglog.Options{FS: fs})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	// Two segments: one of records 8 days old, one of records from now.
	old := time.Now().Add(-8 * 24 * time.Hour).UnixMilli()
	l.Append(record.Record{Value: []byte("booking 1"), Timestamp: old})
	l.Roll()
	l.Append(record.Record{Value: []byte("booking 2")})

	c := cleaner.New(cleaner.Options{Workers: 4})
	c.Add(cleaner.Wrap(l), cleaner.DefaultPolicy()) // 7 days
	// A service calls c.Start(ctx) and c.Stop(); one round here.
	if err := c.RunOnce(context.Background()); err != nil {
		panic(err)
	}
	writePrometheus(os.Stdout, c.Metrics())
	// Output:
	// # HELP seglog_cleaner_segments_deleted_total Segments deleted by retention.
	// # TYPE seglog_cleaner_segments_deleted_total counter
	// seglog_cleaner_segments_deleted_total 1
	// # HELP seglog_cleaner_bytes_deleted_total Bytes of segments deleted by retention.
	// # TYPE seglog_cleaner_bytes_deleted_total counter
	// seglog_cleaner_bytes_deleted_total 77
	// # HELP seglog_cleaner_failures_total Failed log passes.
	// # TYPE seglog_cleaner_failures_total counter
	// seglog_cleaner_failures_total 0
	// # HELP seglog_cleaner_backlog Logs waiting for a worker.
	// # TYPE seglog_cleaner_backlog gauge
	// seglog_cleaner_backlog 0
	// # HELP seglog_log_start_offset First offset of the log.
	// # TYPE seglog_log_start_offset gauge
	// seglog_log_start_offset{dir="/data/bookings-0"} 1
	// # HELP seglog_log_cleaner_failed Whether the log's last pass failed.
	// # TYPE seglog_log_cleaner_failed gauge
	// seglog_log_cleaner_failed{dir="/data/bookings-0"} 0
}
