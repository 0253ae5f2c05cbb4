package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/internal/testutil"
)

// TestServeMetricsFlagsRefusedFirst: a bad --metrics-listen, --pprof
// without it, a bad --log-format or --log-level, and a metrics port in use
// are refused before the store is created, as --listen's are: usage
// errors exit 2, the port in use 1.
func TestServeMetricsFlagsRefusedFirst(t *testing.T) {
	fresh := filepath.Join(t.TempDir(), "new")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--metrics-listen", "bogus"}, `invalid --metrics-listen "bogus"`, 2},
		{[]string{"--metrics-listen", "127.0.0.1:70000"}, "invalid --metrics-listen", 2},
		{[]string{"--pprof"}, "--pprof only applies with --metrics-listen", 2},
		{[]string{"--log-format", "xml"}, `invalid --log-format "xml"`, 2},
		{[]string{"--log-level", "loud"}, `invalid --log-level "loud"`, 2},
		{[]string{"--log-level", "info", "--verbose"}, "not both", 2},
		{[]string{"--metrics-listen", busy.Addr().String()}, "address already in use", 1},
		{[]string{"--metrics-listen", "0.0.0.0:0"}, "--metrics-listen 0.0.0.0:0 is not a loopback address", 2},
		{[]string{"--metrics-listen", ":0"}, "needs --metrics-token TOKEN or --metrics-token-file FILE, or --insecure", 2},
		{[]string{"--metrics-token", "t"}, "--metrics-token only applies with --metrics-listen", 2},
		{[]string{"--metrics-listen", "0.0.0.0:0", "--metrics-token", " "}, "--metrics-token is empty", 2},
	} {
		args := append([]string{"serve", fresh, "--listen", "127.0.0.1:0"}, c.args...)
		r := invoke(t, "", args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("seglog %s: exit %d, stderr %q; want exit %d naming %q", strings.Join(args, " "), r.code, r.stderr, c.code, c.want)
		}
		if exists(fresh) {
			t.Fatalf("seglog %s created the store", strings.Join(args, " "))
		}
	}
}

// startMetricsServe runs seglog serve as a process with args after DIR and
// returns the Kafka address and the metrics page's URL from its first two
// lines, and stop, which sends SIGTERM and returns the exit status.
func startMetricsServe(t *testing.T, stderr *lockedBuffer, args ...string) (stop func() int, addr, metrics string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	cmd := seglogProcess(t, stderr, append([]string{"serve", dir, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(out)
	var got []string
	for len(got) < 2 && lines.Scan() {
		got = append(got, lines.Text())
	}
	if len(got) < 2 {
		t.Fatalf("output %q; stderr: %s", got, stderr.String())
	}
	addr, _, ok := strings.Cut(strings.TrimPrefix(got[0], "seglog serve: listening on "), ",")
	metrics, found := strings.CutPrefix(got[1], "seglog serve: metrics on ")
	if !ok || !found {
		t.Fatalf("unexpected output %q", got)
	}
	go io.Copy(io.Discard, out)
	stop = func() int {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		return exitCode(t, cmd.Wait(), stderr)
	}
	return stop, addr, metrics
}

func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestServeMetricsPage runs serve with --metrics-listen: the page counts
// what a client produced, and pprof is not served without --pprof.
func TestServeMetricsPage(t *testing.T) {
	var stderr lockedBuffer
	stop, addr, metrics := startMetricsServe(t, &stderr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("m"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for range 10 {
		cl.Produce(ctx, &kgo.Record{Value: []byte("v")}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	code, page := getStatus(t, metrics)
	if code != http.StatusOK || !strings.Contains(page, `seglog_topic_messages_in_total{topic="m"} 10`+"\n") {
		t.Fatalf("GET %s: %d\n%s", metrics, code, page)
	}
	if code, _ := getStatus(t, strings.TrimSuffix(metrics, "/metrics")+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("pprof without --pprof: status %d", code)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
}

// TestServeMetricsToken: on an address other than loopback the page (and
// the profiler) answers only a scraper sending the token; with --insecure
// and no token it answers anyone, and the start says so.
func TestServeMetricsToken(t *testing.T) {
	const token = "scrape-me"
	var stderr lockedBuffer
	stop, _, metrics := startMetricsServe(t, &stderr, "--metrics-listen", "0.0.0.0:0", "--metrics-token", token, "--pprof")
	get := func(url, bearer string) int {
		t.Helper()
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	pprof := strings.TrimSuffix(metrics, "/metrics") + "/debug/pprof/"
	for _, c := range []struct {
		url, bearer string
		want        int
	}{
		{metrics, "", http.StatusUnauthorized},
		{metrics, "wrong", http.StatusUnauthorized},
		{pprof, "", http.StatusUnauthorized},
		{metrics, token, http.StatusOK},
		{pprof, token, http.StatusOK},
	} {
		if got := get(c.url, c.bearer); got != c.want {
			t.Errorf("GET %s with token %q: %d, want %d", c.url, c.bearer, got, c.want)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}

	var open lockedBuffer
	stop, _, metrics = startMetricsServe(t, &open, "--metrics-listen", "0.0.0.0:0", "--insecure", "--log-level", "warn")
	if got := get(metrics, ""); got != http.StatusOK {
		t.Errorf("GET %s with --insecure: %d", metrics, got)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, open.String())
	}
	if !strings.Contains(open.String(), "serving metrics on a non-loopback address without a token") {
		t.Errorf("no warning for open metrics: %s", open.String())
	}
}

// TestServePprof: with --pprof the metrics listener serves the profiler.
func TestServePprof(t *testing.T) {
	var stderr lockedBuffer
	stop, _, metrics := startMetricsServe(t, &stderr, "--pprof")
	if code, body := getStatus(t, strings.TrimSuffix(metrics, "/metrics")+"/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof: status %d", code)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
}

// TestServeJSONLogs: with --log-format json every line on standard error
// is a JSON object, at the levels --log-level lets through: a client
// sending a request size out of bounds is logged at info, as it is
// closed.
func TestServeJSONLogs(t *testing.T) {
	var stderr lockedBuffer
	stop, addr, _ := startMetricsServe(t, &stderr, "--log-format", "json", "--log-level", "info")
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte{0, 0, 0, 1}); err != nil { // a request of 1 byte
		t.Fatal(err)
	}
	// The server closes the connection after logging why.
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection stayed open")
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec struct{ Level, Msg, Reason string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q (%v)", line, err)
		}
		if rec.Level == "DEBUG" {
			t.Errorf("debug line at --log-level info: %q", line)
		}
		msgs = append(msgs, rec.Msg+": "+rec.Reason)
	}
	if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, "server: closing connection: request size 1") }) {
		t.Errorf("no line about the closed connection in %q", msgs)
	}
	if !slices.Contains(msgs, "seglog serve: listening: ") {
		t.Errorf("no listening line in %q", msgs)
	}
}

// TestServeRetentionCheckInterval: --retention-check-interval sets the
// time between the background cleaner's rounds; at 1s the page counts
// three rounds within the wait, which the default (30 s to the first,
// then 5 minutes) takes over ten minutes to reach. Below 1s is refused.
func TestServeRetentionCheckInterval(t *testing.T) {
	if r := invoke(t, "", "serve", filepath.Join(t.TempDir(), "s"), "--retention-check-interval", "10ms"); r.code != 2 || !strings.Contains(r.stderr, "--retention-check-interval") {
		t.Errorf("--retention-check-interval 10ms: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
	var stderr lockedBuffer
	stop, _, metrics := startMetricsServe(t, &stderr, "--retention-check-interval", "1s")
	testutil.WaitFor(t, "three cleaner rounds", func() bool {
		_, page := getStatus(t, metrics)
		_, after, _ := strings.Cut(page, "\nseglog_cleaner_passes_total ")
		line, _, _ := strings.Cut(after, "\n")
		n, err := strconv.ParseFloat(line, 64)
		return err == nil && n >= 3
	})
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	}
}
