package ui

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/store"
)

func newTestPlayground(t *testing.T) (*Playground, *httptest.Server) {
	t.Helper()
	p, err := NewPlayground(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Server())
	t.Cleanup(func() {
		srv.Close()
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p, srv
}

func TestPlaygroundScenario(t *testing.T) {
	p, srv := newTestPlayground(t)
	var st State
	get(t, srv.URL, "/api/state", &st)
	checkState(t, p.Store(), st)
	if !st.Playground || len(st.Topics) != 1 || len(st.Topics[0].Partitions) != PlaygroundPartitions || len(st.Groups) != 2 {
		t.Fatalf("scenario: %+v", st)
	}
	for _, g := range st.Groups {
		if (g.Name == GroupBilling) != (g.Lag == 0) {
			t.Errorf("group %s lag %d: billing should be caught up, analytics behind", g.Name, g.Lag)
		}
	}

	// Produce by key over HTTP: the record lands where Kafka's partitioner
	// puts the key, and the answer shows the hash.
	for _, key := range []string{"booking-1001", "booking-2077", "x"} {
		var out Produced
		if code := post(t, srv.URL, "/api/play/produce", produceRequest{Key: key, Value: "v"}, &out); code != http.StatusOK {
			t.Fatalf("produce: %d", code)
		}
		if want := store.PartitionForKey([]byte(key), PlaygroundPartitions); out.Partition != want || out.Murmur2 != store.Murmur2([]byte(key)) ||
			out.Positive%PlaygroundPartitions != want {
			t.Errorf("key %s: %+v, want partition %d", key, out, want)
		}
		var recs []Record
		get(t, srv.URL, "/api/records?topic=bookings&partition="+itoa(out.Partition)+"&from="+itoa64(out.Offset), &recs)
		if len(recs) != 1 || recs[0].Key.Text != key || recs[0].Offset != out.Offset {
			t.Errorf("key %s: the partition holds %+v at offset %d", key, recs, out.Offset)
		}
	}
	if code := post(t, srv.URL, "/api/play/consume", consumeRequest{Group: "nosuch", Max: 1}, nil); code != http.StatusBadRequest {
		t.Errorf("consume with an unknown group: %d", code)
	}
	if res, err := http.Post(srv.URL+"/api/play/produce", "text/plain", strings.NewReader(`{"key":"k","value":"v"}`)); err != nil || res.StatusCode != http.StatusBadRequest {
		t.Errorf("produce without the JSON content type (a cross-origin form): %v %v", res, err)
	} else {
		res.Body.Close()
	}
	if code := post(t, srv.URL, "/api/play/advance", advanceRequest{Ms: -5}, nil); code != http.StatusBadRequest {
		t.Errorf("advance by a negative time: %d", code)
	}

	// Advance past retention: whole segments go, analytics falls below
	// the start, and its next consume reports the skipped records.
	before := totalSegments(st)
	var adv Advanced
	if code := post(t, srv.URL, "/api/play/advance", advanceRequest{Ms: (30 * time.Minute).Milliseconds()}, &adv); code != http.StatusOK {
		t.Fatalf("advance: %d", code)
	}
	get(t, srv.URL, "/api/state", &st)
	checkState(t, p.Store(), st)
	if adv.Segments == 0 || totalSegments(st) != before-adv.Segments || adv.Behind[GroupAnalytics] == 0 || adv.Behind[GroupBilling] != 0 {
		t.Fatalf("advance: %+v; segments %d → %d", adv, before, totalSegments(st))
	}
	var marked int64
	for _, part := range st.Topics[0].Partitions {
		for _, m := range part.Groups {
			if m.Group == GroupAnalytics {
				marked += m.Skipped
			}
		}
	}
	if marked != adv.Behind[GroupAnalytics] {
		t.Errorf("markers show %d skipped, advance said %d", marked, adv.Behind[GroupAnalytics])
	}
	var con Consumed
	if code := post(t, srv.URL, "/api/play/consume", consumeRequest{Group: GroupAnalytics, Max: 1}, &con); code != http.StatusOK {
		t.Fatalf("consume: %d", code)
	}
	if con.Skipped != adv.Behind[GroupAnalytics] || len(con.Resets) == 0 || con.Count == 0 {
		t.Errorf("consume after retention: %+v, want %d skipped", con, adv.Behind[GroupAnalytics])
	}
	for _, r := range con.Resets {
		c, _ := p.Store().CommittedOffset(GroupAnalytics, PlaygroundTopic, r.Partition)
		l, _ := p.Store().Log(PlaygroundTopic, r.Partition)
		if r.Offset != l.StartOffset() || c.Offset != r.Offset+1 {
			t.Errorf("partition %d: reset to %d (start %d), committed %d after reading one", r.Partition, r.Offset, l.StartOffset(), c.Offset)
		}
	}
}

func TestPlaygroundRewind(t *testing.T) {
	p, srv := newTestPlayground(t)
	at := playgroundStart.Add(40 * time.Minute).UnixMilli()
	var got map[int32]int64
	if code := post(t, srv.URL, "/api/play/rewind", rewindRequest{Group: GroupBilling, Rewind: Rewind{By: "time", Time: at}}, &got); code != http.StatusOK {
		t.Fatalf("rewind: %d", code)
	}
	if len(got) != PlaygroundPartitions {
		t.Fatalf("rewind moved %d partitions", len(got))
	}
	for part, off := range got {
		l, _ := p.Store().Log(PlaygroundTopic, part)
		want, err := l.OffsetForTime(at)
		if err != nil {
			want = l.EndOffset()
		}
		c, _ := p.Store().CommittedOffset(GroupBilling, PlaygroundTopic, part)
		if off != want || c.Offset != want {
			t.Errorf("partition %d: rewound to %d, committed %d; first offset at the time is %d", part, off, c.Offset, want)
		}
	}
	one := int32(3)
	got = nil
	if code := post(t, srv.URL, "/api/play/rewind", rewindRequest{Group: GroupBilling, Rewind: Rewind{By: "offset", Offset: 1, Partition: &one}}, &got); code != http.StatusOK || len(got) != 1 || got[3] != 1 {
		t.Errorf("rewind partition 3 to offset 1: %d %v", code, got)
	}
	if code := post(t, srv.URL, "/api/play/rewind", rewindRequest{Group: GroupBilling, Rewind: Rewind{By: "sideways"}}, nil); code != http.StatusBadRequest {
		t.Errorf("rewind sideways: %d", code)
	}
}

func TestSimClock(t *testing.T) {
	c := NewSimClock(playgroundStart)
	ch := c.After(time.Minute)
	c.Advance(30 * time.Second)
	select {
	case <-ch:
		t.Fatal("After fired before its time")
	default:
	}
	c.Advance(-time.Hour)
	if !c.Now().Equal(playgroundStart.Add(30 * time.Second)) {
		t.Fatalf("a negative advance moved the clock to %v", c.Now())
	}
	c.Advance(30 * time.Second)
	select {
	case now := <-ch:
		if !now.Equal(playgroundStart.Add(time.Minute)) {
			t.Errorf("After delivered %v", now)
		}
	default:
		t.Fatal("After did not fire when its time came")
	}
}

func totalSegments(st State) int {
	n := 0
	for _, t := range st.Topics {
		for _, p := range t.Partitions {
			n += len(p.Segments)
		}
	}
	return n
}

func itoa(n int32) string   { return itoa64(int64(n)) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
