package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

var quiet = slog.New(slog.DiscardHandler)

const testDir = "/data"

// testStore is a store on an in-memory FS, on a simulated clock, with a
// UI server in front of it.
type testStore struct {
	st    *store.Store
	fs    vfs.FS
	clock *SimClock
	srv   *httptest.Server
}

func newTestStore(t *testing.T) *testStore {
	t.Helper()
	fs := vfs.NewMem()
	clock := NewSimClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st, err := store.Open(testDir, store.Options{FS: fs, OffsetsPartitions: 2, Clock: clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testStore{st: st, fs: fs, clock: clock}
	ts.srv = httptest.NewServer(New(st, Options{Clock: clock, FS: fs, Logger: quiet}))
	t.Cleanup(func() {
		ts.srv.Close()
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return ts
}

// serveReadOnly makes the test server show the store through a second,
// read-only open of the same directory, as seglog ui does beside a
// writer.
func (ts *testStore) serveReadOnly(t *testing.T) {
	t.Helper()
	view, err := store.Open(testDir, store.Options{FS: ts.fs, ReadOnly: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ts.srv.Close()
	ts.srv = httptest.NewServer(New(view, Options{Clock: ts.clock, FS: ts.fs, Logger: quiet}))
	t.Cleanup(func() {
		ts.srv.Close()
		if err := view.Close(); err != nil {
			t.Error(err)
		}
	})
}

// smallTopic is a config whose segments hold a few records each.
func smallTopic(retention time.Duration, retentionBytes int64) store.TopicConfig {
	c := store.DefaultTopicConfig()
	c.SegmentBytes = 400
	c.MaxMessageBytes = 300
	c.SegmentIndexBytes = 4096
	c.RetentionMs = retention.Milliseconds()
	if retention < 0 {
		c.RetentionMs = -1
	}
	c.RetentionBytes = retentionBytes
	return c
}

// produceN produces n keyed records one call each, the clock moving a
// minute before each.
func (ts *testStore) produceN(t *testing.T, topic string, n int) {
	t.Helper()
	for i := range n {
		ts.clock.Advance(time.Minute)
		rec := record.Record{Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "value-%d", i),
			Headers: []record.Header{{Key: "h", Value: []byte{0xff, byte(i)}}}}
		if _, err := ts.st.Produce(topic, rec); err != nil {
			t.Fatal(err)
		}
	}
}

// get fetches path and decodes its JSON into v; it returns the status.
func get(t *testing.T, base, path string, v any) int {
	t.Helper()
	res, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	body := readAnswer(t, "GET "+path, res, v)
	if res.StatusCode != http.StatusOK {
		t.Logf("GET %s: %d %s", path, res.StatusCode, body)
	}
	return res.StatusCode
}

// post sends v as JSON and decodes the answer into out; it returns the
// status.
func post(t *testing.T, base, path string, v, out any) int {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(base+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	readAnswer(t, "POST "+path, res, out)
	return res.StatusCode
}

// readAnswer reads and closes res's body and, for a 200, decodes it as
// JSON into v unless v is nil. It returns the body.
func readAnswer(t *testing.T, what string, res *http.Response, v any) []byte {
	t.Helper()
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %v in %s", what, err, body)
		}
	}
	return body
}
