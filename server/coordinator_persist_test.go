package server

import (
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupRecords returns the group's GroupMetadata records in its offsets
// partition, decoded with kmsg as Kafka's tools would (nil: a tombstone).
func (h *harness) groupRecords(group string) []*kmsg.GroupMetadataValue {
	h.t.Helper()
	l, err := h.st.Log(store.OffsetsTopic, store.OffsetsPartitionFor(group, 3))
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*kmsg.GroupMetadataValue
	for r, err := range l.Records(0) {
		if err != nil {
			h.t.Fatal(err)
		}
		var key kmsg.GroupMetadataKey
		if len(r.Key) < 2 || r.Key[1] != 2 || key.ReadFrom(r.Key) != nil || key.Group != group {
			continue
		}
		if r.Value == nil {
			out = append(out, nil)
			continue
		}
		v := new(kmsg.GroupMetadataValue)
		if err := v.ReadFrom(r.Value); err != nil {
			h.t.Fatalf("group metadata value: %v", err)
		}
		out = append(out, v)
	}
	return out
}

// Each stable generation is one GroupMetadata record in Kafka's schema;
// the group emptying writes an Empty one (its protocol type, no protocol,
// leader or members), as Kafka does; deleting it writes the tombstone.
func TestCoordinatorGroupMetadataRecords(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	recs := h.groupRecords("g")
	if len(recs) != 1 || recs[0] == nil {
		t.Fatalf("records after the first generation: %v", recs)
	}
	v := recs[0]
	if v.Version != 3 || v.Generation != gen || v.ProtocolType != "consumer" || *v.Protocol != "range" || *v.Leader != ids[0] || len(v.Members) != 2 {
		t.Fatalf("value: %+v", v)
	}
	m := v.Members[1]
	if m.MemberID != ids[1] || m.ClientID != "cl" || m.ClientHost != "10.0.0.1" || m.SessionTimeoutMillis != 10000 || m.RebalanceTimeoutMillis != 20000 ||
		string(m.Subscription) != "meta-"+ids[1] || string(m.Assignment) != "assignment-of-"+ids[1] {
		t.Errorf("member: %+v", m)
	}
	h.leave("g", ids...)
	// The Empty record is written after LeaveGroup is answered (outside
	// the coordinator's lock), as Kafka's storeGroup is.
	testutil.WaitFor(t, "the Empty record after everybody left", func() bool {
		recs = h.groupRecords("g")
		return len(recs) >= 2
	})
	if len(recs) != 2 || recs[1] == nil {
		t.Fatalf("records after everybody left: %v", recs)
	}
	if v := recs[1]; v.ProtocolType != "consumer" || v.Protocol != nil || v.Leader != nil || len(v.Members) != 0 {
		t.Fatalf("the Empty record: %+v", v)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g"}
	if code := h.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if recs = h.groupRecords("g"); len(recs) != 3 || recs[2] != nil {
		t.Fatalf("records after the delete: %v", recs)
	}
}

// A group its members left is still listed Empty with protocol type
// "consumer" after a restart (sarama's ListConsumerGroups keeps only
// those), and a deleted one is not listed at all.
func TestCoordinatorEmptiedGroupSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"kept", "deleted", "never-committed"} {
		ids, gen := h.stableGroup(id, 1)
		if id != "never-committed" {
			h.commit(id, ids[0], gen, map[int32]int64{0: 1})
		}
		h.leave(id, ids[0])
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"deleted"}
	if code := h.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("delete: %d", code)
	}
	h.restart()
	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 4
	got := make(map[string]kmsg.ListGroupsResponseGroup)
	for _, g := range h.do(list).(*kmsg.ListGroupsResponse).Groups {
		got[g.Group] = g
	}
	if g, ok := got["kept"]; !ok || g.GroupState != "Empty" || g.ProtocolType != "consumer" {
		t.Errorf("after a restart, kept: %+v (listed %v)", g, ok)
	}
	if d := h.describe("kept"); d.State != "Empty" || d.ProtocolType != "consumer" {
		t.Errorf("after a restart, describe kept: %+v", d)
	}
	// A group with neither members nor offsets is not listed, before a
	// restart as after it.
	for _, id := range []string{"deleted", "never-committed"} {
		if g, ok := got[id]; ok {
			t.Errorf("after a restart, %s is listed: %+v", id, g)
		}
	}
	// The one left Empty with no offsets can still be deleted, once: its
	// Empty record is tombstoned.
	del.Groups = []string{"never-committed"}
	if code := h.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("delete never-committed: %d", code)
	}
	if recs := h.groupRecords("never-committed"); len(recs) == 0 || recs[len(recs)-1] != nil {
		t.Fatalf("never-committed's records after its delete: %v", recs)
	}
	if code := h.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete never-committed again: %d", code)
	}
}

// A GroupMetadata record that does not decode is skipped when the server
// starts: that group's members rejoin, nothing panics, and other groups
// load.
func TestCoordinatorDamagedGroupMetadata(t *testing.T) {
	h := newHarness(t)
	_, gen := h.stableGroup("good", 1)
	key := kmsg.NewGroupMetadataKey()
	key.Version, key.Group = 2, "bad"
	n, err := h.st.Partitions(store.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	l, err := h.st.Writer(store.OffsetsTopic, store.OffsetsPartitionFor("bad", n))
	if err != nil {
		t.Fatal(err)
	}
	for _, value := range [][]byte{{0, 3, 0xff, 0xff, 0xff}, {0, 3}, {0xff}} {
		if _, err := l.Append(record.Record{Key: key.AppendTo(nil), Value: value}); err != nil {
			t.Fatal(err)
		}
	}
	h.restart()
	if d := h.describe("bad"); d.State != "Dead" {
		t.Errorf("damaged group: %+v", d)
	}
	if d := h.describe("good"); d.State != "Stable" || len(d.Members) != 1 {
		t.Errorf("good group: %+v", d)
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if g := h.c.groups["good"]; g == nil || g.generation != gen {
		t.Errorf("good group's generation not loaded")
	}
}
