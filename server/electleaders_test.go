package server

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// electResults flattens an ElectLeaders answer to topic-partition → code.
func electResults(t *testing.T, resp *kmsg.ElectLeadersResponse) map[tp]int16 {
	t.Helper()
	out := map[tp]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			k := tp{rt.Topic, rp.Partition}
			if _, dup := out[k]; dup {
				t.Fatalf("%s-%d answered twice", k.topic, k.partition)
			}
			if (rp.ErrorCode == 0) != (rp.ErrorMessage == nil) {
				t.Errorf("%s-%d: code %d with message %v", k.topic, k.partition, rp.ErrorCode, rp.ErrorMessage)
			}
			out[k] = rp.ErrorCode
		}
	}
	return out
}

func electRequest(version int16, kind int8, topics map[string][]int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.SetVersion(version)
	req.ElectionType = kind
	req.TimeoutMillis = 5000
	if topics != nil {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
		for _, name := range slices.Sorted(maps.Keys(topics)) {
			req.Topics = append(req.Topics, kmsg.ElectLeadersRequestTopic{Topic: name, Partitions: topics[name]})
		}
	}
	return req
}

// TestElectLeadersCluster: a PREFERRED election asks the Cluster for each
// partition named, once, and answers its outcome as Kafka's code; null
// topics name every partition; unknown topics and partitions are
// UNKNOWN_TOPIC_OR_PARTITION without asking; UNCLEAN needs none where a
// leader is known and cannot be made where none is.
func TestElectLeadersCluster(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "a", 3)
	createTestTopic(t, ts.st, "b", 1)
	fc.set(func(fc *fakeCluster) {
		fc.electErr = map[tp]error{
			{"a", 1}: ErrElectionNotNeeded,
			{"a", 2}: ErrPreferredLeaderNotAvailable,
		}
		fc.leaders[tp{"b", 0}] = -1
	})
	c := dialRaw(t, ts.addr)
	for _, v := range []int16{0, 1, 2} {
		fc.set(func(fc *fakeCluster) { fc.elects = nil })
		resp := c.do(electRequest(v, 0, map[string][]int32{"a": {0, 1, 2, 1, 9}, "nope": {0}})).(*kmsg.ElectLeadersResponse)
		got := electResults(t, resp)
		want := map[tp]int16{
			{"a", 0}: 0, {"a", 1}: kerr.ElectionNotNeeded.Code, {"a", 2}: kerr.PreferredLeaderNotAvailable.Code,
			{"a", 9}: kerr.UnknownTopicOrPartition.Code, {"nope", 0}: kerr.UnknownTopicOrPartition.Code,
		}
		if resp.ErrorCode != 0 || !maps.Equal(got, want) {
			t.Fatalf("v%d: error %d, results %v, want %v", v, resp.ErrorCode, got, want)
		}
		fc.mu.Lock()
		asked := slices.Clone(fc.elects)
		fc.mu.Unlock()
		slices.SortFunc(asked, func(x, y tp) int { return int(x.partition - y.partition) })
		if want := []tp{{"a", 0}, {"a", 1}, {"a", 2}}; !slices.Equal(asked, want) {
			t.Fatalf("v%d: the Cluster was asked for %v, want %v", v, asked, want)
		}
	}

	// Every partition.
	got := electResults(t, c.do(electRequest(2, 0, nil)).(*kmsg.ElectLeadersResponse))
	for _, k := range []tp{{"a", 0}, {"a", 1}, {"a", 2}, {"b", 0}} {
		if _, ok := got[k]; !ok {
			t.Errorf("an election of every partition did not answer %s-%d: %v", k.topic, k.partition, got)
		}
	}

	// UNCLEAN: a leader known (a-0), none (b-0).
	got = electResults(t, c.do(electRequest(1, 1, map[string][]int32{"a": {0}, "b": {0}})).(*kmsg.ElectLeadersResponse))
	if want := (map[tp]int16{{"a", 0}: kerr.ElectionNotNeeded.Code, {"b", 0}: kerr.EligibleLeadersNotAvailable.Code}); !maps.Equal(got, want) {
		t.Fatalf("unclean: %v, want %v", got, want)
	}
	if resp := c.do(electRequest(1, 5, map[string][]int32{"a": {0}})).(*kmsg.ElectLeadersResponse); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("election type 5: error %d", resp.ErrorCode)
	}
}

// TestElectLeadersSingleNode: one node leads every partition it has.
func TestElectLeadersSingleNode(t *testing.T) {
	ts := startServer(t, "", Options{})
	createTestTopic(t, ts.st, "a", 2)
	c := dialRaw(t, ts.addr)
	got := electResults(t, c.do(electRequest(2, 0, map[string][]int32{"a": {0, 1, 2}, "nope": {0}})).(*kmsg.ElectLeadersResponse))
	want := map[tp]int16{
		{"a", 0}: kerr.ElectionNotNeeded.Code, {"a", 1}: kerr.ElectionNotNeeded.Code,
		{"a", 2}: kerr.UnknownTopicOrPartition.Code, {"nope", 0}: kerr.UnknownTopicOrPartition.Code,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	got = electResults(t, c.do(electRequest(0, 0, nil)).(*kmsg.ElectLeadersResponse))
	if got[tp{"a", 0}] != kerr.ElectionNotNeeded.Code || got[tp{"a", 1}] != kerr.ElectionNotNeeded.Code {
		t.Fatalf("every partition: %v", got)
	}
	if _, ok := got[tp{store.OffsetsTopic, 0}]; !ok {
		t.Fatalf("every partition leaves out the offsets topic: %v", got)
	}
}

// TestElectLeadersACL: ElectLeaders needs ALTER on the cluster; kadm's
// ElectLeaders reads either answer.
func TestElectLeadersACL(t *testing.T) {
	ts := aclServer(t, t.TempDir())
	createTestTopic(t, ts.st, "e", 1)
	ctx := testCtx(t)
	res, err := kadm.NewClient(ts.as("alice")).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"e": {0: {}}})
	if err != nil || !errors.Is(res["e"][0].Err, kerr.ElectionNotNeeded) {
		t.Fatalf("alice's election: %v %+v", err, res)
	}
	if _, err := kadm.NewClient(ts.as("bob")).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"e": {0: {}}}); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob's election: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
}
