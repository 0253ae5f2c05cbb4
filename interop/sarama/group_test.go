package sarama

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// groupReader is a sarama ConsumerGroupHandler that records every record it
// is given, checking that each partition's records come in offset order
// from where the group's commit said, marks the first limit records and
// then commits and stops the member.
type groupReader struct {
	limit  int
	cancel context.CancelFunc

	mu     sync.Mutex
	next   map[int32]int64 // the offset each partition's next record must have; unset: any
	got    map[int32][]rec
	marked int
	err    error
}

func (g *groupReader) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (g *groupReader) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (g *groupReader) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		g.mu.Lock()
		if g.marked == g.limit {
			g.mu.Unlock()
			continue // read past the limit: not taken, not marked
		}
		if want, ok := g.next[m.Partition]; ok && m.Offset != want && g.err == nil {
			g.err = fmt.Errorf("partition %d: record at offset %d, want %d (a record lost or repeated)", m.Partition, m.Offset, want)
		}
		g.next[m.Partition] = m.Offset + 1
		g.got[m.Partition] = append(g.got[m.Partition], fromConsumer(m))
		sess.MarkMessage(m, "")
		g.marked++
		done := g.marked == g.limit
		g.mu.Unlock()
		if done {
			sess.Commit()
			g.cancel()
		}
	}
	return nil
}

// consumeGroup runs one member of group on topic until it has taken limit
// records, committed them and left. start gives the offset each
// partition's first record must have (nil: the group has no commit yet).
func consumeGroup(t *testing.T, addr, group, topic string, limit int, start map[int32]int64) map[int32][]rec {
	t.Helper()
	cfg := newConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false // Commit is called when the limit is reached
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("NewConsumerGroup: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := &groupReader{limit: limit, cancel: cancel, next: map[int32]int64{}, got: map[int32][]rec{}}
	for p, o := range start {
		g.next[p] = o
	}
	go func() {
		for err := range cg.Errors() {
			t.Errorf("consumer group %s: %v", group, err)
		}
	}()
	for ctx.Err() == nil {
		if err := cg.Consume(ctx, []string{topic}, g); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Consume: %v", err)
		}
	}
	if err := cg.Close(); err != nil {
		t.Fatalf("closing the consumer group: %v", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		t.Fatal(g.err)
	}
	if g.marked != limit {
		t.Fatalf("group %s: %d records read before the timeout, want %d", group, g.marked, limit)
	}
	return g.got
}

var describeRow = regexp.MustCompile(`(?m)^\S+\s+(\S+)\s+(\d+)\s+(-?\d+)\s`)

// committed reads group's committed offsets on topic with `seglog groups
// describe` (read-only, beside the server or after it).
func committed(t *testing.T, dir, group, topic string) map[int32]int64 {
	t.Helper()
	out := seglog(t, "groups", "describe", dir, group)
	got := map[int32]int64{}
	for _, m := range describeRow.FindAllStringSubmatch(out, -1) {
		if m[1] != topic {
			continue
		}
		p, _ := strconv.ParseInt(m[2], 10, 32)
		o, _ := strconv.ParseInt(m[3], 10, 64)
		got[int32(p)] = o
	}
	if len(got) == 0 {
		t.Fatalf("seglog groups describe %s %s shows no offset on %s:\n%s", dir, group, topic, out)
	}
	return got
}

// TestGroupAcrossRestart: a sarama group member reads part of a
// 3-partition topic and commits; the server is stopped cleanly and started
// on the same directory; a new member of the group resumes at the commit
// (read back with seglog groups describe) and reads the rest: every record
// once, none lost or repeated, byte for byte.
func TestGroupAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	const topic, group, n, first = "sarama-group", "sarama-g", 300, 130
	srv := startServer(t, dir)
	createTopic(t, srv.addr, topic, 3)
	want := map[int32][]rec{}
	for p := range int32(3) {
		want[p] = records(fmt.Sprintf("%s-%d", topic, p), n/3)
		produce(t, newConfig(), srv.addr, topic, p, want[p])
	}

	got := consumeGroup(t, srv.addr, group, topic, first, nil)
	commits := committed(t, dir, group, topic)
	for p, recs := range got {
		if commits[p] != int64(len(recs)) {
			t.Fatalf("partition %d: %d records read, committed offset %d", p, len(recs), commits[p])
		}
	}
	srv.stop()
	if after := committed(t, dir, group, topic); fmt.Sprint(after) != fmt.Sprint(commits) {
		t.Fatalf("committed offsets after a clean stop %v, before %v", after, commits)
	}

	srv = startServer(t, dir)
	start := map[int32]int64{}
	for p := range int32(3) {
		start[p] = commits[p]
	}
	rest := consumeGroup(t, srv.addr, group, topic, n-first, start)
	for p := range int32(3) {
		sameRecords(t, fmt.Sprintf("partition %d read by the group before and after the restart", p), append(got[p], rest[p]...), want[p])
	}
	srv.stop()
	for p, o := range committed(t, dir, group, topic) {
		if o != int64(len(want[p])) {
			t.Errorf("partition %d: final commit %d, want %d", p, o, len(want[p]))
		}
	}
	fsckClean(t, dir)
}

// createTopic creates topic with partitions through sarama's
// ClusterAdmin.CreateTopic (CreateTopics, served since the first server).
func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	admin, err := sarama.NewClusterAdmin([]string{addr}, newConfig())
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
}
