package cluster

import (
	"fmt"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/store"
)

// TestDeletedTopicCommitsTombstoned: a group's commits for a topic the
// cluster deletes are tombstoned by the group's coordinator, on every
// replica of its offsets partition, as Kafka's are: a topic created
// again under the name starts with no commits (a walk found the old ones
// back, and its consumer started past the new topic's records). A commit
// to the new topic stays.
func TestDeletedTopicCommitsTombstoned(t *testing.T) {
	s := newServedCluster(t, 3)
	ctrl := s.controller()
	ctx := ctxTimeout(t)
	const topic, group = "gone", "grp"
	if err := ctrl.node.CreateTopic(ctx, topic, 2, -1, nil); err != nil {
		t.Fatal(err)
	}
	cl := s.client(t)
	commit := func(offs map[int32]int64) {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for p, o := range offs {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: p, Offset: o})
		}
		req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
		testutil.WaitFor(t, fmt.Sprintf("the commit of %v", offs), func() bool {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return false
			}
			for _, rp := range resp.Topics[0].Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					t.Logf("commit: %v (retried)", err)
					return false
				}
			}
			return true
		})
	}
	commit(map[int32]int64{0: 5, 1: 3})
	if got, want := committed(ctx, cl, group, topic, 2), map[int32]int64{0: 5, 1: 3}; !maps.Equal(got, want) {
		t.Fatalf("committed %v, want %v", got, want)
	}
	if err := ctrl.node.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.node.CreateTopic(ctx, topic, 2, -1, nil); err != nil {
		t.Fatal(err)
	}
	none := map[int32]int64{0: -1, 1: -1}
	testutil.WaitFor(t, "the new topic to have no commits", func() bool {
		return maps.Equal(committed(ctx, cl, group, topic, 2), none)
	})
	// Every replica of the group's offsets partition ends with the
	// tombstones.
	n, _ := ctrl.st.Partitions(store.OffsetsTopic)
	p := store.OffsetsPartitionFor(group, n)
	for _, tn := range s.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d to hold the tombstones", tn.id), func() bool {
			l, err := tn.st.Log(store.OffsetsTopic, p)
			if err != nil {
				return false
			}
			last := map[int32]*store.Committed{}
			for r, err := range l.Records(0) {
				if err != nil {
					return false
				}
				if g, tp, part, c, ok, err := store.DecodeCommit(r.Key, r.Value); err == nil && ok && g == group && tp == topic {
					last[part] = c
				}
			}
			return len(last) == 2 && last[0] == nil && last[1] == nil
		})
	}
	// The new topic's commits are its own.
	commit(map[int32]int64{0: 1})
	if got, want := committed(ctx, cl, group, topic, 2), map[int32]int64{0: 1, 1: -1}; !maps.Equal(got, want) {
		t.Fatalf("the new topic: committed %v, want %v", got, want)
	}
}
