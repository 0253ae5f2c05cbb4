package ui

import (
	"errors"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestClusterReplication: with Options.Cluster, each partition carries
// its replication and the state says whose view it is; a partition the
// view does not cover carries none; a view that fails is said on the
// page, which still shows the store; without Options.Cluster nothing of
// it appears.
func TestClusterReplication(t *testing.T) {
	ts := newTestStore(t)
	if err := ts.st.CreateTopic("orders", 3, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	view := Cluster{About: "node 2's view", Topics: map[string][]Replication{
		"orders": {{Leader: 1, Epoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}, {Leader: -1, Epoch: -1, Replicas: []int32{2, 3, 1}}},
	}}
	var fail error
	srv := httptest.NewServer(New(ts.st, Options{Clock: ts.clock, FS: ts.fs, Logger: quiet,
		Cluster: func() (Cluster, error) { return view, fail }}))
	defer srv.Close()

	var st State
	if code := get(t, srv.URL, "/api/state", &st); code != 200 {
		t.Fatalf("state: %d", code)
	}
	if st.Cluster != view.About || len(st.Topics) != 1 || len(st.Topics[0].Partitions) != 3 {
		t.Fatalf("state: %+v", st)
	}
	ps := st.Topics[0].Partitions
	if r := ps[0].Replication; r == nil || r.Leader != 1 || r.Epoch != 4 || !slices.Equal(r.ISR, []int32{1, 2}) || !slices.Equal(r.Replicas, []int32{1, 2, 3}) {
		t.Errorf("orders-0: %+v", r)
	}
	if r := ps[1].Replication; r == nil || r.Leader != -1 || !slices.Equal(r.Replicas, []int32{2, 3, 1}) {
		t.Errorf("orders-1: %+v", r)
	}
	if r := ps[2].Replication; r != nil {
		t.Errorf("orders-2, not in the view: %+v", r)
	}

	fail = errors.New("record damaged at byte 7")
	st = State{}
	if code := get(t, srv.URL, "/api/state", &st); code != 200 || !strings.Contains(st.Cluster, "byte 7") || len(st.Topics) != 1 {
		t.Errorf("a failing view: %d, %+v", code, st)
	}
	for _, p := range st.Topics[0].Partitions {
		if p.Replication != nil {
			t.Errorf("a failing view shows replication on orders-%d", p.Partition)
		}
	}

	st = State{}
	if get(t, ts.srv.URL, "/api/state", &st); st.Cluster != "" || st.Topics[0].Partitions[0].Replication != nil {
		t.Errorf("without Options.Cluster: %+v", st)
	}
}

// TestBrowserCluster: the page says whose view of the replication it
// shows and draws each covered partition's leader, epoch, replicas and
// ISR; a partition the view does not cover draws none.
func TestBrowserCluster(t *testing.T) {
	ctx := browser(t)
	_, view, fs := browserStore(t)
	cl := Cluster{About: "Cluster node 2: leaders as last known", Topics: map[string][]Replication{
		"orders": {
			{Leader: 1, Epoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}},
			{Leader: -1, Epoch: -1, Replicas: []int32{2, 3, 1}},
			{Leader: 3, Epoch: 2, Replicas: []int32{3, 1, 2}, ISR: []int32{3, 1, 2}},
		},
	}}
	srv := httptest.NewServer(New(view, Options{FS: fs, Logger: quiet, Cluster: func() (Cluster, error) { return cl, nil }}))
	defer srv.Close()

	run(t, ctx, "load", chromedp.Navigate(srv.URL+"/"))
	waitFor(t, ctx, "partitions", `document.querySelectorAll('.partition').length === 4`)
	var about string
	eval(t, ctx, `document.getElementById('cluster').hidden ? '' : document.getElementById('cluster').textContent`, &about)
	if about != cl.About {
		t.Errorf("the page says %q, want %q", about, cl.About)
	}
	type shownReplication struct{ Topic, Leader, Replicas, ISR, Text string }
	var shown []shownReplication
	eval(t, ctx, `[...document.querySelectorAll('.partition')].map(p => { const r = p.querySelector('[data-role=replication]');
	  return {Topic: p.dataset.topic + '-' + p.dataset.partition, Leader: r ? r.dataset.leader : '', Replicas: r ? r.dataset.replicas : '',
	    ISR: r ? r.dataset.isr : '', Text: r ? r.textContent : ''}; })`, &shown)
	want := map[string][3]string{"orders-0": {"1", "1,2,3", "1,2"}, "orders-1": {"-1", "2,3,1", "-"}, "orders-2": {"3", "3,1,2", "3,1,2"}, "audit-0": {}}
	if len(shown) != len(want) {
		t.Fatalf("the page shows %d partitions: %+v", len(shown), shown)
	}
	for _, s := range shown {
		if w := want[s.Topic]; [3]string{s.Leader, s.Replicas, s.ISR} != w {
			t.Errorf("%s: the page shows leader %q replicas %q ISR %q, want %q", s.Topic, s.Leader, s.Replicas, s.ISR, w)
		}
	}
	if s := shown[slices.IndexFunc(shown, func(s shownReplication) bool { return s.Topic == "orders-1" })]; !strings.Contains(s.Text, "no leader known") {
		t.Errorf("orders-1 without a leader reads %q", s.Text)
	}
}

// TestRetentionPlanOnReplica: in a cluster node's replicated partition
// (its directory holds raft's index checkpoint) the plan stops at the last
// anchored batch, which the replica's cleaning floor never passes (the
// newest anchored segment stays), where a walk saw the page mark a
// segment the node's cleaner then kept; a partition with raft's state
// but no readable checkpoint plans nothing, as its cleaner waits for the
// replica; one without raft's files is planned as on a single node.
func TestRetentionPlanOnReplica(t *testing.T) {
	ts := newTestStore(t)
	if err := ts.st.CreateTopic("orders", 3, smallTopic(30*time.Minute, -1)); err != nil {
		t.Fatal(err)
	}
	ts.produceN(t, "orders", 60)
	var before State
	get(t, ts.srv.URL, "/api/state", &before)
	single := before.Topics[0].Partitions[2]
	p0 := before.Topics[0].Partitions[0]
	if p0.Retention.Segments < 2 {
		t.Fatalf("orders-0 plans %d segments gone; the test wants at least two", p0.Retention.Segments)
	}
	anchor := p0.Segments[1].Base // the newest anchored segment: the second
	vfstest.WriteFile(t, ts.fs, filepath.Join(testDir, "orders-0", layout.RaftIndexFile),
		layout.FormatRaftIndex([]layout.IndexLine{{Index: 1, Offset: p0.Segments[0].Base, Term: 0}, {Index: 7, Offset: anchor, Term: 2}}))
	vfstest.WriteFile(t, ts.fs, filepath.Join(testDir, "orders-1", layout.RaftStateFile), []byte("not read"))

	var st State
	get(t, ts.srv.URL, "/api/state", &st)
	ps := st.Topics[0].Partitions
	if r := ps[0].Retention; r.NewStart != anchor || r.Segments != 1 {
		t.Errorf("orders-0, last anchor at %d: plan %+v, want the first segment only, new start %d", anchor, r, anchor)
	}
	for i, s := range ps[0].Segments {
		if (s.Delete != "") != (i == 0) {
			t.Errorf("orders-0 segment %d (base %d): delete %q", i, s.Base, s.Delete)
		}
	}
	if r := ps[1].Retention; r.Segments != 0 || r.NewStart != ps[1].Start {
		t.Errorf("orders-1, raft's state without a checkpoint: plan %+v, want nothing", r)
	}
	if r := ps[2].Retention; r != single.Retention {
		t.Errorf("orders-2, no raft files: plan %+v, was %+v", r, single.Retention)
	}
}
