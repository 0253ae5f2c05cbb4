package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// TestUIMetricsPage: seglog ui serves the store's figures at /metrics,
// kept up to date with a writer beside it, and writes nothing.
func TestUIMetricsPage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "1")
	mustInvoke(t, "b1\tBookingCreated\nb2\tBookingCreated\nb3\tPaid\n", "produce", dir, "--topic", "bookings")
	mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "billing", "--from-beginning")
	url, stop := startUI(t, dir)
	defer stop()
	page := string(httpGet(t, url+"/metrics"))
	for _, want := range []string{
		`seglog_partition_log_end_offset{partition="0",topic="bookings"} 3`,
		`seglog_consumer_group_committed_offset{group="billing",partition="0",topic="bookings"} 3`,
		`seglog_consumer_group_lag{group="billing",partition="0",topic="bookings"} 0`,
	} {
		if !strings.Contains(page, want+"\n") {
			t.Errorf("no %s in\n%s", want, page)
		}
	}
	w, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Produce("bookings", record.Record{Key: []byte("b4"), Value: []byte("Paid")}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the page shows the writer's record", func() bool {
		return strings.Contains(string(httpGet(t, url+"/metrics")), `seglog_consumer_group_lag{group="billing",partition="0",topic="bookings"} 1`+"\n")
	})
}
