package server

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A standalone consumer (generation -1, no member id) commits to a group
// nobody joined; the offsets are read back, -1 where nothing was
// committed, and survive a restart of the store and the coordinator.
func TestCoordinatorCommitFetchRestart(t *testing.T) {
	h := newHarness(t)
	if got := h.fetch("solo"); got != [4]int64{-1, -1, -1, -1} {
		t.Fatalf("before any commit: %v", got)
	}
	if errs := h.commit("solo", "", -1, map[int32]int64{0: 3, 2: 10}); errs[0] != 0 || errs[2] != 0 {
		t.Fatalf("standalone commit: %v", errs)
	}
	if got := h.fetch("solo"); got != [4]int64{3, -1, 10, -1} {
		t.Fatalf("after the commit: %v", got)
	}
	ids, gen := h.stableGroup("g", 2)
	if errs := h.commit("g", ids[1], gen, map[int32]int64{1: 7}); errs[1] != 0 {
		t.Fatalf("member's commit: %v", errs)
	}
	h.restart()
	if got := h.fetch("solo"); got != [4]int64{3, -1, 10, -1} {
		t.Errorf("solo after the restart: %v", got)
	}
	if got := h.fetch("g"); got != [4]int64{-1, 7, -1, -1} {
		t.Errorf("g after the restart: %v", got)
	}
	// Membership survives too: the members go on in their generation.
	if code := h.heartbeat("g", ids[0], gen); code != 0 {
		t.Errorf("heartbeat after the restart: %d", code)
	}
	if errs := h.commit("g", ids[0], gen, map[int32]int64{1: 8}); errs[1] != 0 {
		t.Errorf("commit of a member after the restart: %d", errs[1])
	}
	d := h.describe("g")
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 2 || d.Members[0].MemberID != ids[0] ||
		string(d.Members[1].MemberAssignment) != "assignment-of-"+ids[1] || string(d.Members[1].ProtocolMetadata) != "meta-"+ids[1] {
		t.Errorf("describe after the restart: %+v", d)
	}
	// Members that never come back expire; the empty group's membership
	// is tombstoned, so the next restart knows only its offsets.
	h.clock.Advance(testSession)
	if d := h.describe("g"); d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("describe after the sessions expired: %+v", d)
	}
	h.restart()
	if code := h.heartbeat("g", ids[0], gen); code != kerr.UnknownMemberID.Code {
		t.Errorf("heartbeat after the second restart: %d", code)
	}
	if errs := h.commit("g", ids[0], gen, map[int32]int64{1: 9}); errs[1] != kerr.GroupIDNotFound.Code {
		t.Errorf("commit of a gone member: %d", errs[1])
	}
	if got := h.fetch("g"); got != [4]int64{-1, 8, -1, -1} {
		t.Errorf("g after the second restart: %v", got)
	}
}

func TestCoordinatorCommitValidation(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	for _, tc := range []struct {
		name   string
		member string
		gen    int32
		want   int16
	}{
		{"standalone commit to a group with members", "", -1, kerr.UnknownMemberID.Code},
		{"unknown member", "nobody", gen, kerr.UnknownMemberID.Code},
		{"old generation", ids[0], gen - 1, kerr.IllegalGeneration.Code},
		{"future generation", ids[0], gen + 1, kerr.IllegalGeneration.Code},
		{"current member", ids[0], gen, 0},
	} {
		if errs := h.commit("g", tc.member, tc.gen, map[int32]int64{0: 1}); errs[0] != tc.want {
			t.Errorf("%s: error %d, want %d", tc.name, errs[0], tc.want)
		}
	}
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 8
	r.Group, r.MemberID, r.Generation = "nogroup", "m", 3
	t0 := kmsg.NewOffsetCommitRequestTopic()
	t0.Topic = "orders"
	t0.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
	r.Topics = []kmsg.OffsetCommitRequestTopic{t0}
	if code := h.do(r).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.IllegalGeneration.Code {
		t.Errorf("v8 commit with a generation to an unknown group: %d", code)
	}

	// Partition errors stay with their partition: the good ones of the
	// same topic are committed.
	r = kmsg.NewPtrOffsetCommitRequest()
	r.Version = 9
	r.Group = "solo"
	big := strings.Repeat("x", maxOffsetMetadata+1)
	orders := kmsg.NewOffsetCommitRequestTopic()
	orders.Topic = "orders"
	orders.Partitions = []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 5},
		{Partition: 1, Offset: 11}, // past the end (10): stored, as Kafka does
		{Partition: 2, Offset: 10, Metadata: &big},
		{Partition: 3, Offset: -2}, // kafkajs's "earliest": stored, as Kafka does
		{Partition: 9, Offset: 1},
	}
	nope := kmsg.NewOffsetCommitRequestTopic()
	nope.Topic = "nope"
	nope.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
	r.Topics = []kmsg.OffsetCommitRequestTopic{orders, nope}
	resp := h.do(r).(*kmsg.OffsetCommitResponse)
	want := []int16{0, 0, kerr.OffsetMetadataTooLarge.Code, 0, kerr.UnknownTopicOrPartition.Code}
	for i, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != want[i] {
			t.Errorf("partition %d: error %d, want %d", p.Partition, p.ErrorCode, want[i])
		}
	}
	if code := resp.Topics[1].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %d", code)
	}
	if got := h.fetch("solo"); got != [4]int64{5, 11, -1, -2} {
		t.Errorf("committed: %v", got)
	}
}

// OffsetFetch in each of its shapes: v1 (one group, topics named), v7 with
// null topics (everything the group committed), v8 with several groups.
func TestCoordinatorOffsetFetchVersions(t *testing.T) {
	h := newHarness(t)
	h.commit("a", "", -1, map[int32]int64{1: 4, 3: 9})
	h.commit("b", "", -1, map[int32]int64{0: 2})

	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 1
	r.Group = "a"
	r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{1, 2}}}
	resp := h.do(r).(*kmsg.OffsetFetchResponse)
	if ps := resp.Topics[0].Partitions; ps[0].Offset != 4 || ps[1].Offset != -1 || *ps[0].Metadata != "" {
		t.Errorf("v1: %+v", ps)
	}

	r = kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = "a"
	resp = h.do(r).(*kmsg.OffsetFetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.Topics[0].Partitions[1].Partition != 3 || resp.Topics[0].Partitions[1].Offset != 9 {
		t.Errorf("v7, all topics: %+v", resp.Topics)
	}

	r = kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "a"}, {Group: "b", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0}}}}, {Group: "none"}}
	resp = h.do(r).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 3 || len(resp.Groups[0].Topics[0].Partitions) != 2 || resp.Groups[1].Topics[0].Partitions[0].Offset != 2 || len(resp.Groups[2].Topics) != 0 {
		t.Errorf("v8: %+v", resp.Groups)
	}
}

// DeleteGroups refuses a group with members, deletes an empty one with its
// offsets, and does not know a group it never saw.
func TestCoordinatorDeleteGroups(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	h.commit("g", ids[0], gen, map[int32]int64{0: 5})
	h.commit("solo", "", -1, map[int32]int64{0: 6})
	del := func(groups ...string) []int16 {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version = 2
		r.Groups = groups
		var out []int16
		for _, g := range h.do(r).(*kmsg.DeleteGroupsResponse).Groups {
			out = append(out, g.ErrorCode)
		}
		return out
	}
	if got := del("g", "never", ""); got[0] != kerr.NonEmptyGroup.Code || got[1] != kerr.GroupIDNotFound.Code || got[2] != kerr.InvalidGroupID.Code {
		t.Fatalf("delete: %v", got)
	}
	if got := h.fetch("g"); got[0] != 5 {
		t.Fatalf("a refused delete lost the offsets: %v", got)
	}
	h.leave("g", ids[0])
	if got := del("g", "solo"); got[0] != 0 || got[1] != 0 {
		t.Fatalf("delete of empty groups: %v", got)
	}
	if got := h.fetch("g"); got[0] != -1 {
		t.Errorf("deleted group still has offsets: %v", got)
	}
	h.restart()
	if got := h.fetch("solo"); got[0] != -1 {
		t.Errorf("deleted group's offsets came back after a restart: %v", got)
	}
	if got := del("g"); got[0] != kerr.GroupIDNotFound.Code {
		t.Errorf("second delete: %v", got)
	}
}

// ListGroups shows groups with members and groups known only from their
// offsets, with the state and type filters; DescribeGroups an unknown
// group as Dead.
func TestCoordinatorListAndDescribe(t *testing.T) {
	h := newHarness(t)
	h.stableGroup("live", 1)
	h.commit("stored", "", -1, map[int32]int64{0: 1})
	list := func(states, types []string) map[string]kmsg.ListGroupsResponseGroup {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version = 5
		r.StatesFilter, r.TypesFilter = states, types
		out := make(map[string]kmsg.ListGroupsResponseGroup)
		for _, g := range h.do(r).(*kmsg.ListGroupsResponse).Groups {
			out[g.Group] = g
		}
		return out
	}
	all := list(nil, nil)
	if len(all) != 2 || all["live"].GroupState != "Stable" || all["live"].ProtocolType != "consumer" || all["stored"].GroupState != "Empty" || all["stored"].GroupType != "classic" {
		t.Errorf("list: %+v", all)
	}
	if got := list([]string{"empty"}, nil); len(got) != 1 || got["stored"].Group != "stored" {
		t.Errorf("Empty filter: %+v", got)
	}
	if got := list(nil, []string{"consumer"}); len(got) != 0 {
		t.Errorf("KIP-848 type filter: %+v", got)
	}
	if d := h.describe("unknown"); d.ErrorCode != 0 || d.State != "Dead" {
		t.Errorf("describe unknown: %+v", d)
	}
	if d := h.describe("stored"); d.State != "Empty" {
		t.Errorf("describe stored: %+v", d)
	}
}

// A group whose last member left is listed and described Empty with the
// protocol type it had ("consumer"), as Kafka shows it, while a group that
// only committed has none: sarama's ListConsumerGroups keeps only the
// former. Deleting the group forgets it.
func TestCoordinatorEmptiedGroupKeepsProtocolType(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("left", 1)
	h.commit("left", ids[0], gen, map[int32]int64{0: 1})
	h.leave("left", ids[0])
	h.commit("stored", "", -1, map[int32]int64{0: 1})
	r := kmsg.NewPtrListGroupsRequest()
	r.Version = 4
	got := make(map[string]kmsg.ListGroupsResponseGroup)
	for _, g := range h.do(r).(*kmsg.ListGroupsResponse).Groups {
		got[g.Group] = g
	}
	if g := got["left"]; g.GroupState != "Empty" || g.ProtocolType != "consumer" {
		t.Errorf("list, the group its member left: %+v", g)
	}
	if g := got["stored"]; g.GroupState != "Empty" || g.ProtocolType != "" {
		t.Errorf("list, the group that only committed: %+v", g)
	}
	if d := h.describe("left"); d.State != "Empty" || d.ProtocolType != "consumer" || len(d.Members) != 0 {
		t.Errorf("describe, the group its member left: %+v", d)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"left"}
	if code := h.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("delete: %d", code)
	}
	h.commit("left", "", -1, map[int32]int64{0: 1})
	if d := h.describe("left"); d.State != "Empty" || d.ProtocolType != "" {
		t.Errorf("describe, the group deleted and committed to again: %+v", d)
	}
}

// OffsetDelete removes chosen partitions' offsets, unless members
// subscribe to the topic.
func TestCoordinatorOffsetDelete(t *testing.T) {
	h := newHarness(t)
	h.commit("solo", "", -1, map[int32]int64{0: 1, 1: 2, 2: 3})
	del := func(group string) *kmsg.OffsetDeleteResponse {
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group
		r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 2}}}}
		return h.do(r).(*kmsg.OffsetDeleteResponse)
	}
	if r := del("solo"); r.ErrorCode != 0 || r.Topics[0].Partitions[1].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", r)
	}
	if got := h.fetch("solo"); got != [4]int64{-1, 2, -1, -1} {
		t.Errorf("after the delete: %v", got)
	}
	if r := del("never"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("unknown group: %d", r.ErrorCode)
	}

	// A consumer group subscribed to orders keeps its offsets.
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"orders"}
	id := h.memberID("sub")
	jr := joinReq("sub", id)
	jr.Protocols[0].Metadata = meta.AppendTo(nil)
	join := h.joinAsync(jr)
	h.waitJoining("sub", 1)
	h.clock.Advance(testDelay)
	gen := recv(t, join).Generation
	h.do(syncReq("sub", id, gen, nil))
	h.commit("sub", id, gen, map[int32]int64{0: 4})
	if r := del("sub"); r.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Errorf("subscribed: %+v", r)
	}
	if got := h.fetch("sub"); got[0] != 4 {
		t.Errorf("a refused offset delete removed the offset: %v", got)
	}
}
