package ui

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seglog/seglog/internal/testenv"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// -ui.docs writes the two screenshots the README shows into docs/img.
var docsImages = flag.Bool("ui.docs", false, "write docs/img/ui-store.png and docs/img/ui-playground.png from the browser test")

// browser starts headless Chromium and returns a context whose tab the
// test drives. Without chromium the test skips, or fails under CI
// (testenv.LookPath; .ci/run installs it).
func browser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("the browser test starts Chromium; not in -short runs")
	}
	path := testenv.LookPath(t, "chromium", "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 800),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first Run starts the browser; it must not run under a timeout.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// run runs actions with a deadline, failing the test on error.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression that returns a JSON string and
// decodes it into v.
func eval(t *testing.T, ctx context.Context, expr string, v any) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	s, err := chromedp.Run(tctx, chromedp.Evaluate[string]("JSON.stringify("+expr+")"))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("evaluate %s: %v in %s", expr, err, s)
	}
}

// waitFor polls a JavaScript predicate until it holds.
func waitFor(t *testing.T, ctx context.Context, what, pred string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](pred, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, pred, err)
	}
}

// screenshot saves the whole page under the test's artifact directory
// (kept with go test -artifacts) and, with -ui.docs, as docs/img/name.
func screenshot(t *testing.T, ctx context.Context, name string, docs bool) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := vfs.WriteFileAtomic(vfs.Default, path, png); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	if docs && *docsImages {
		if err := vfs.WriteFileAtomic(vfs.Default, filepath.Join("..", "docs", "img", name), png); err != nil {
			t.Fatal(err)
		}
	}
}

// shownPartition is what the page draws for one partition, read from the
// DOM's data attributes.
type shownPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
	Segments  []struct {
		Base   int64  `json:"base"`
		Next   int64  `json:"next"`
		Size   int64  `json:"size"`
		Active bool   `json:"active"`
		Delete string `json:"delete"`
	} `json:"segments"`
	Markers []struct {
		Group     string `json:"group"`
		Committed int64  `json:"committed"`
		Lag       int64  `json:"lag"`
		Skipped   int64  `json:"skipped"`
	} `json:"markers"`
}

const readPartitions = `[...document.querySelectorAll('.partition')].map(p => ({
  topic: p.dataset.topic, partition: +p.dataset.partition, start: +p.dataset.start, end: +p.dataset.end,
  segments: [...p.querySelectorAll('.seg')].map(s => ({base: +s.dataset.base, next: +s.dataset.next, size: +s.dataset.size,
    active: s.dataset.active === 'true', delete: s.dataset.delete || ''})),
  markers: [...p.querySelectorAll('.marker')].map(m => ({group: m.dataset.group, committed: +m.dataset.committed,
    lag: +m.dataset.lag, skipped: +m.dataset.skipped}))}))`

// checkPage compares the partitions, segments and group markers the page
// shows with the store.
func checkPage(t *testing.T, ctx context.Context, st *store.Store) []shownPartition {
	t.Helper()
	var shown []shownPartition
	eval(t, ctx, readPartitions, &shown)
	n := 0
	for _, topic := range st.Topics() {
		parts, err := st.Partitions(topic)
		if err != nil {
			t.Fatal(err)
		}
		n += parts
	}
	if len(shown) != n {
		t.Fatalf("the page shows %d partitions, the store has %d", len(shown), n)
	}
	for _, p := range shown {
		l, err := st.Log(p.Topic, p.Partition)
		if err != nil {
			t.Fatal(err)
		}
		if p.Start != l.StartOffset() || p.End != l.EndOffset() {
			t.Errorf("%s-%d: page shows start %d end %d, store %d %d", p.Topic, p.Partition, p.Start, p.End, l.StartOffset(), l.EndOffset())
		}
		segs := l.Segments()
		if len(segs) != len(p.Segments) {
			t.Errorf("%s-%d: page shows %d segments, store has %d", p.Topic, p.Partition, len(p.Segments), len(segs))
			continue
		}
		for i, s := range segs {
			g := p.Segments[i]
			if g.Base != s.BaseOffset || g.Next != s.NextOffset || g.Size != s.Size || g.Active != s.Active {
				t.Errorf("%s-%d segment %d: page %+v, store %+v", p.Topic, p.Partition, i, g, s)
			}
		}
		rows := map[string]store.PartitionLag{}
		for _, g := range st.Groups() {
			desc, _, err := st.DescribeGroup(g)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range desc {
				if r.Topic == p.Topic && r.Partition == p.Partition {
					rows[g] = r
				}
			}
		}
		if len(p.Markers) != len(rows) {
			t.Errorf("%s-%d: page shows %d group markers, store has %d groups committed", p.Topic, p.Partition, len(p.Markers), len(rows))
		}
		for _, m := range p.Markers {
			if r := rows[m.Group]; m.Committed != r.Committed || m.Lag != r.Lag {
				t.Errorf("%s-%d group %s: page shows %d lag %d, store %d lag %d", p.Topic, p.Partition, m.Group, m.Committed, m.Lag, r.Committed, r.Lag)
			}
		}
	}
	return shown
}

// checkLocalOnly fails if the page loaded anything from another origin.
func checkLocalOnly(t *testing.T, ctx context.Context, origin string) {
	t.Helper()
	var urls []string
	eval(t, ctx, `performance.getEntriesByType('resource').map(e => e.name).concat([location.href])`, &urls)
	for _, u := range urls {
		if !strings.HasPrefix(u, origin+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s, outside %s", u, origin)
		}
	}
}

func TestBrowserStore(t *testing.T) {
	ctx := browser(t)
	st, view, fs := browserStore(t)
	srv := httptest.NewServer(New(view, Options{FS: fs, Logger: quiet}))
	defer srv.Close()

	run(t, ctx, "load", chromedp.Navigate(srv.URL+"/"))
	waitFor(t, ctx, "partitions", `document.querySelectorAll('.partition').length === 4`)
	checkPage(t, ctx, st)
	var maxLag int64
	eval(t, ctx, `+document.getElementById('max-lag').dataset.value`, &maxLag)
	if _, total, _ := st.DescribeGroup("reports"); maxLag == 0 || maxLag > total {
		t.Errorf("page shows max lag %d; the lagging group's total is %d", maxLag, total)
	}
	checkLocalOnly(t, ctx, srv.URL)

	// Writes appear without a reload: the page polls.
	l, _ := st.Log("orders", 0)
	end := l.EndOffset()
	for i := range 5 {
		if _, err := st.ProduceTo("orders", 0, rec(fmt.Sprintf("late-%d", i), "arrived while the page was open")); err != nil {
			t.Fatal(err)
		}
	}
	refreshView(t, view)
	waitFor(t, ctx, "the new end", fmt.Sprintf(`document.querySelector('.partition[data-topic="orders"][data-partition="0"]').dataset.end === "%d"`, end+5))
	checkPage(t, ctx, st)

	// A segment's batches and a record's key, value and headers.
	run(t, ctx, "open a segment", chromedp.Click(chromedp.CSS(`.partition[data-topic="orders"][data-partition="0"] .seg[data-base="0"]`)))
	waitFor(t, ctx, "batches", `document.querySelectorAll('#segment-body .batch').length > 0`)
	run(t, ctx, "open a record", chromedp.Click(chromedp.CSS(`#segment-body .records button`)))
	var detail string
	eval(t, ctx, `document.querySelector('#segment-body .rec-detail').innerText`, &detail)
	for _, want := range []string{"Key (", "Value (", "hex: ", "trace: ", "Timestamp"} {
		if !strings.Contains(detail, want) {
			t.Errorf("record detail lacks %q:\n%s", want, detail)
		}
	}
	screenshot(t, ctx, "ui-store.png", true)

	// A narrow window: nothing wider than the viewport.
	run(t, ctx, "narrow", chromedp.EmulateViewport(420, 800))
	var overflow bool
	eval(t, ctx, `document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow)
	if overflow {
		t.Error("at 420 px the page scrolls sideways")
	}
	screenshot(t, ctx, "ui-store-narrow.png", false)
}

func TestBrowserPlayground(t *testing.T) {
	ctx := browser(t)
	p, srv := newTestPlayground(t)
	run(t, ctx, "load", chromedp.Navigate(srv.URL+"/"))
	waitFor(t, ctx, "partitions", `document.querySelectorAll('.partition').length === 12`)
	checkPage(t, ctx, p.Store())

	// Produce by key: the record lands in the partition murmur2 picks.
	const key = "booking-4242"
	run(t, ctx, "produce",
		chromedp.SetValue(chromedp.CSS(`#produce-key`), key),
		chromedp.SetValue(chromedp.CSS(`#produce-value`), `{"event":"created","room":512}`),
		chromedp.Click(chromedp.CSS(`#produce-btn`)))
	waitFor(t, ctx, "the produce result", `document.getElementById('produce-result').dataset.partition !== undefined`)
	var got struct{ Partition, Offset int64 }
	eval(t, ctx, `{partition: +document.getElementById('produce-result').dataset.partition, offset: +document.getElementById('produce-result').dataset.offset}`, &got)
	want := store.PartitionForKey([]byte(key), PlaygroundPartitions)
	if got.Partition != int64(want) {
		t.Fatalf("the page says partition %d; murmur2 picks %d", got.Partition, want)
	}
	row := fmt.Sprintf(`.partition[data-partition="%d"]`, want)
	waitFor(t, ctx, "the new record on the page", fmt.Sprintf(`document.querySelector('%s').dataset.end === "%d"`, row, got.Offset+1))
	l, _ := p.Store().Log(PlaygroundTopic, want)
	for r, err := range l.Records(got.Offset) {
		if err != nil || string(r.Key) != key {
			t.Fatalf("offset %d of partition %d: key %q, %v", got.Offset, want, r.Key, err)
		}
		break
	}
	checkPage(t, ctx, p.Store())
	// The active segment of that partition shows the record.
	run(t, ctx, "open the active segment", chromedp.Click(chromedp.CSS(row+` .seg[data-active="true"]`)))
	waitFor(t, ctx, "the record in the segment", fmt.Sprintf(`[...document.querySelectorAll('#segment-body tr[data-offset="%d"]')].some(r => r.innerText.includes(%q))`, got.Offset, key))
	screenshot(t, ctx, "ui-playground.png", true)

	// Move the clock past retention: the doomed segments disappear.
	var doomed []string
	eval(t, ctx, `[...document.querySelectorAll('.seg[data-delete="retention.ms"]')].map(s => s.dataset.key)`, &doomed)
	if len(doomed) == 0 {
		t.Fatal("no segment is marked for deletion before the clock moves")
	}
	run(t, ctx, "advance", chromedp.Click(chromedp.CSS(`#advance-30m`)))
	waitFor(t, ctx, "the advance result", `document.getElementById('advance-result').dataset.segments !== undefined`)
	waitFor(t, ctx, "the doomed segments gone", fmt.Sprintf(`!%s.some(k => document.querySelector('[data-key="' + k + '"]'))`, jsArray(doomed)))
	checkPage(t, ctx, p.Store())
	var skippedShown int64
	eval(t, ctx, `[...document.querySelectorAll('.marker[data-group="analytics"]')].reduce((n, m) => n + +m.dataset.skipped, 0)`, &skippedShown)
	if skippedShown == 0 {
		t.Error("after retention the analytics markers show nothing skipped")
	}
	run(t, ctx, "consume with analytics", chromedp.Click(chromedp.CSS(`#consume-analytics`)))
	waitFor(t, ctx, "the consume result", `document.getElementById('consume-result').dataset.skipped !== undefined`)
	var skipped int64
	eval(t, ctx, `+document.getElementById('consume-result').dataset.skipped`, &skipped)
	if skipped != skippedShown {
		t.Errorf("consume skipped %d; the markers showed %d", skipped, skippedShown)
	}
	checkLocalOnly(t, ctx, srv.URL)
	screenshot(t, ctx, "ui-playground-after-retention.png", false)

	// Rewind billing to offset 0: clamped, every partition's marker moves
	// to its start.
	run(t, ctx, "rewind",
		chromedp.SetValue(chromedp.CSS(`#rewind-group`), GroupBilling),
		chromedp.SetValue(chromedp.CSS(`#rewind-by`), "offset"),
		chromedp.SetValue(chromedp.CSS(`#rewind-offset`), "0"),
		chromedp.Click(chromedp.CSS(`#rewind-btn`)))
	waitFor(t, ctx, "billing at every start", `[...document.querySelectorAll('.partition')].every(p =>
	  p.querySelector('.marker[data-group="billing"]').dataset.committed === p.dataset.start)`)
	checkPage(t, ctx, p.Store())
}

func jsArray(ss []string) string {
	b, _ := json.Marshal(ss)
	return string(b)
}
