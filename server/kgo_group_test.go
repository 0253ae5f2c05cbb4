package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKgoGroupRebalanceAndResume: two kgo members of a classic group share
// a topic across a rebalance and together read every record; offsets are
// committed, the server restarts, and a new member resumes after the
// commits.
func TestKgoGroupRebalanceAndResume(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, Options{NumPartitions: 4})
	if !advertisesKey(ts, 11, 0) {
		t.Fatal("the group coordinator does not advertise JoinGroup v0")
	}
	cl := ts.client(kgo.AllowAutoTopicCreation())
	want := produceRecords(t, cl, "g", 400, "first")
	cl.Close()

	ctx := testCtx(t)
	var assignedMu sync.Mutex
	assigned := make(map[*kgo.Client]int)
	member := func() *kgo.Client {
		return ts.client(kgo.ConsumerGroup("grp"), kgo.ConsumeTopics("g"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.HeartbeatInterval(200*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
				assignedMu.Lock()
				assigned[cl] += len(m["g"])
				assignedMu.Unlock()
			}))
	}
	type pos struct {
		p   int32
		off int64
	}
	var mu sync.Mutex
	seen := make(map[pos]*kgo.Record)
	readBy := make(map[*kgo.Client]int) // records of the second batch each member read
	poll := func(m *kgo.Client, d time.Duration) int {
		pctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		fs := m.PollFetches(pctx)
		n := 0
		mu.Lock()
		defer mu.Unlock()
		for _, r := range fs.Records() {
			seen[pos{r.Partition, r.Offset}] = r
			if string(r.Headers[0].Value) == "mid" {
				readBy[m]++
			}
			n++
		}
		return n
	}
	a := member()
	for poll(a, time.Second) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the first member read nothing")
		}
	}
	if err := a.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// A second member joins: the group rebalances and the two split the
	// partitions; records produced after that are read by both.
	b := member()
	for ctx.Err() == nil {
		poll(a, 100*time.Millisecond) // a must keep polling to rejoin
		poll(b, 100*time.Millisecond)
		assignedMu.Lock()
		done := assigned[b] > 0
		assignedMu.Unlock()
		if done {
			break
		}
	}
	cl = ts.client()
	want = append(want, produceRecords(t, cl, "g", 400, "mid")...)
	var wg sync.WaitGroup
	for _, m := range []*kgo.Client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				poll(m, 300*time.Millisecond)
				mu.Lock()
				done := len(seen) == len(want)
				mu.Unlock()
				if done {
					return
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the group read %d of %d records", len(seen), len(want))
	}
	if readBy[a] == 0 || readBy[b] == 0 {
		t.Fatalf("after the rebalance the members read %d and %d new records: the partitions were not split", readBy[a], readBy[b])
	}
	for _, m := range []*kgo.Client{a, b} {
		if err := m.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	got := make([]*kgo.Record, 0, len(seen))
	for _, r := range seen {
		got = append(got, r)
	}
	sameRecords(t, want, got)
	a.Close()
	b.Close()

	// Restart; a new member resumes where the group committed.
	ts.stop()
	ts = startServer(t, dir, Options{NumPartitions: 4})
	cl = ts.client()
	more := produceRecords(t, cl, "g", 40, "second")
	c := member()
	var after []*kgo.Record
	for len(after) < len(more) && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		after = append(after, c.PollFetches(pctx).Records()...)
		cancel()
	}
	for _, r := range after {
		if string(r.Headers[0].Value) != "second" {
			t.Fatalf("after the restart the group read %q at %d/%d again", r.Value, r.Partition, r.Offset)
		}
	}
	sameRecords(t, more, after)
}
