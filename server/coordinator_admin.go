package server

import (
	"errors"
	"slices"
	"strings"

	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listGroups lists the groups with members or a rebalance in memory and
// the groups that only have committed offsets in the store: Empty, with
// the protocol type they had when their last member left (emptied), none
// for a group that only committed.
func (c *coordinator) listGroups(r *kmsg.ListGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrListGroupsResponse()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	}
	seen := make(map[string]bool)
	for id, g := range c.groups {
		seen[id] = true
		resp.Groups = append(resp.Groups, listed(id, g.protocolType, g.state))
	}
	c.mu.Unlock()
	for _, id := range c.gs.groups() {
		if !seen[id] {
			c.mu.Lock()
			pt := c.emptied[id]
			c.mu.Unlock()
			resp.Groups = append(resp.Groups, listed(id, pt, stateEmpty))
		}
	}
	resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
		return !matchesFilter(r.StatesFilter, g.GroupState) || !matchesFilter(r.TypesFilter, g.GroupType)
	})
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp
}

func listed(id, protocolType string, s groupState) kmsg.ListGroupsResponseGroup {
	g := kmsg.NewListGroupsResponseGroup()
	g.Group, g.ProtocolType, g.GroupState, g.GroupType = id, protocolType, s.String(), "classic"
	return g
}

// matchesFilter is ListGroups' filters: empty keeps everything, otherwise
// a case-insensitive match of one of the values.
func matchesFilter(filter []string, v string) bool {
	return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
}

// describeGroups describes each group; an unknown group is "Dead" with no
// error, as Kafka answers before DescribeGroups v6. Members' metadata and
// assignments are shown only when the group is stable, as in Kafka.
func (c *coordinator) describeGroups(r *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	stored := c.gs.groups()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range r.Groups {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group = id
		if r.IncludeAuthorizedOperations {
			// Everything a group allows; with ACLs on, authorizeGroups
			// narrows it to what the principal may do (acl_groups.go).
			d.AuthorizedOperations = groupOperationsOf(nil, id)
		}
		g := c.groups[id]
		code := c.refusedLocked(id)
		switch {
		case code != 0:
			d.ErrorCode = code
		case g != nil:
			d.State, d.ProtocolType = g.state.String(), g.protocolType
			if g.state == stateStable {
				d.Protocol = g.protocol
			}
			for _, mid := range g.order {
				m := g.members[mid]
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
				if g.state == stateStable {
					dm.ProtocolMetadata, dm.MemberAssignment = m.metadata(g.protocol), m.assignment
				}
				d.Members = append(d.Members, dm)
			}
		case slices.Contains(stored, id):
			d.State, d.ProtocolType = stateEmpty.String(), c.emptied[id]
		default:
			d.State = stateDead.String()
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// deleteGroups deletes empty groups with their committed offsets
// (tombstones in __consumer_offsets); a group with members gets
// NON_EMPTY_GROUP and keeps everything.
func (c *coordinator) deleteGroups(r *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	for _, id := range r.Groups {
		d := kmsg.NewDeleteGroupsResponseGroup()
		d.Group = id
		d.ErrorCode = c.deleteGroup(id)
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

func (c *coordinator) deleteGroup(id string) int16 {
	if id == "" {
		return kerr.InvalidGroupID.Code
	}
	c.mu.Lock()
	if code := c.refusedLocked(id); code != 0 {
		c.mu.Unlock()
		return code
	}
	g := c.groups[id]
	if g != nil && len(g.members) > 0 {
		c.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	_, emptied := c.emptied[id]
	delete(c.emptied, id)
	if g != nil {
		// Ids handed out but never used are dropped with the group.
		for _, p := range g.pending {
			p.t.Stop()
		}
		g.stopTimers()
		g.state = stateDead
		delete(c.groups, id)
	}
	known := g != nil || emptied
	var forgot <-chan struct{}
	var ferr error
	if known {
		// Queued after the group's own writes (an Empty record may be
		// under way). A crash between this tombstone and the offsets'
		// leaves a group that is still listed and that deleting again
		// removes.
		forgot = c.forgetGroup(id, &ferr)
	}
	c.mu.Unlock()
	if known {
		if <-forgot; ferr != nil {
			return storeErrorCode(ferr)
		}
	}
	err := c.gs.deleteGroup(id)
	switch {
	case errors.Is(err, store.ErrUnknownGroup):
		if known {
			return 0 // it had members once, never offsets
		}
		return kerr.GroupIDNotFound.Code
	default:
		return storeErrorCode(err)
	}
}

// offsetDelete is Kafka's OffsetDelete: it removes a group's committed
// offsets on some partitions, unless the group has members subscribed to
// the topic (GROUP_SUBSCRIBED_TO_TOPIC).
func (c *coordinator) offsetDelete(r *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	c.mu.Lock()
	refused := c.refusedLocked(r.Group)
	var subscribed func(string) bool
	if g := c.groups[r.Group]; g != nil && len(g.members) > 0 {
		subscribed = g.subscribedTo()
	}
	c.mu.Unlock()
	switch {
	case refused != 0:
		resp.ErrorCode = refused
		return resp
	case r.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	case subscribed == nil && !slices.Contains(c.gs.groups(), r.Group):
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		var code int16
		var parts []int32
		if subscribed != nil && subscribed(t.Topic) {
			code = kerr.GroupSubscribedToTopic.Code
		} else {
			for _, p := range t.Partitions {
				parts = append(parts, p.Partition)
			}
			code = storeErrorCode(c.gs.deleteOffsets(r.Group, t.Topic, parts...))
		}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// subscribedTo reports which topics the group's members subscribe to, read
// from their "consumer" protocol metadata; for any other protocol type, or
// metadata that does not parse, every topic counts as subscribed, as in
// Kafka.
func (g *group) subscribedTo() func(string) bool {
	all := func(string) bool { return true }
	if g.protocolType != "consumer" || g.protocol == "" {
		return all
	}
	topics := make(map[string]bool)
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadata(g.protocol)); err != nil {
			return all
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return func(t string) bool { return topics[t] }
}
