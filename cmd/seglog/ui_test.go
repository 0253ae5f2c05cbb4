package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/ui"
	"github.com/seglog/seglog/vfs/vfstest"
)

// startUI runs `seglog ui DIR` (runStoreUI) on a free port and returns its
// base URL and a stop function that waits for it to end.
func startUI(t *testing.T, dir string) (string, func()) {
	t.Helper()
	url, _, stop := startUIToken(t, dir, "")
	return url, stop
}

// startUIToken is startUI with --token token; it also returns the URL
// seglog ui printed.
func startUIToken(t *testing.T, dir, token string) (base, printed string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := runStoreUI(ctx, pw, dir, ln, slog.New(slog.DiscardHandler), token)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("seglog ui printed no address: %v (exit: %v)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("seglog ui printed %q", line)
	}
	printed = strings.Fields(line[i:])[0]
	base, _, _ = strings.Cut(printed, "/?")
	return strings.TrimSuffix(base, "/"), printed, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("seglog ui: %v", err)
		}
	}
}

func httpGet(t *testing.T, url string) []byte {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, body)
	}
	return body
}

// TestUIWritesNothing: a UI session over a store (the page, every API
// call, a segment's batches) leaves the store's tree as it was, byte for
// byte, mode and time.
func TestUIWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "3")
	mustInvoke(t, "b1\tBookingCreated\nb2\tBookingCreated\nb3\tPaid\n", "produce", dir, "--topic", "bookings")
	mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "billing", "--from-beginning")

	before := dirSnapshot(t, dir)
	url, stop := startUI(t, dir)
	if page := httpGet(t, url+"/"); !strings.Contains(string(page), "<title>seglog ui</title>") {
		t.Errorf("the page: %.200s", page)
	}
	httpGet(t, url+"/app.js")
	httpGet(t, url+"/style.css")
	var st ui.State
	if err := json.Unmarshal(httpGet(t, url+"/api/state"), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Topics) != 1 || len(st.Topics[0].Partitions) != 3 || len(st.Groups) != 1 || st.Playground {
		t.Fatalf("state: %+v", st)
	}
	for _, p := range st.Topics[0].Partitions {
		for _, s := range p.Segments {
			httpGet(t, url+"/api/segment?topic=bookings&partition="+itoa(int64(p.Partition))+"&base="+itoa(s.Base))
		}
		httpGet(t, url+"/api/records?topic=bookings&partition="+itoa(int64(p.Partition)))
	}
	httpGet(t, url+"/api/topics")
	httpGet(t, url+"/api/topics/bookings")
	httpGet(t, url+"/api/groups")
	req, err := http.NewRequest("GET", url+"/api/state", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "rebound.example:8080"
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("a request for another host name: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	stop()
	vfstest.Unchanged(t, "a ui session", before, dirSnapshot(t, dir))
}

// TestUIBesideWriter: the UI opens a store whose writer holds the lock,
// and shows what the writer appends while it runs.
func TestUIBesideWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "1")
	w, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	url, stop := startUI(t, dir)
	defer stop()
	for i := range 3 {
		if _, err := w.Produce("bookings", record.Record{Key: []byte("k"), Value: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, "the UI shows the writer's 3 records", func() bool {
		var topic ui.Topic
		if err := json.Unmarshal(httpGet(t, url+"/api/topics/bookings"), &topic); err != nil {
			t.Fatal(err)
		}
		return topic.Partitions[0].End == 3
	})
}

func TestUIArgs(t *testing.T) {
	for _, args := range [][]string{{"ui"}, {"ui", "--playground", "x"}, {"ui", "a", "b"}, {"ui", filepath.Join(t.TempDir(), "missing")}} {
		if r := invoke(t, "", args...); r.code == 0 || r.stderr == "" {
			t.Errorf("seglog %v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}
