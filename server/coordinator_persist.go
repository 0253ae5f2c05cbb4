package server

import (
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Membership is kept where Kafka keeps it: each stable generation is a
// GroupMetadata record (key version 2, value version 3) in the group's
// partition of __consumer_offsets, next to its offset commits (which the
// store writes and reads; it skips these records). A restarted server
// loads the last generation of each group, so members that keep running
// across the restart go on heartbeating and committing in their
// generation, as they do when a Kafka coordinator moves.

// groupMetadataKey is the key of a group's GroupMetadata records.
func groupMetadataKey(id string) []byte {
	key := kmsg.NewGroupMetadataKey()
	key.Version = 2
	key.Group = id
	return key.AppendTo(nil)
}

// groupMetadataRecord is the group's membership as Kafka's record. A group
// its last member left is written as Kafka writes it, Empty: its protocol
// type and generation with no protocol, leader or members, so that it is
// still listed as a "consumer" group after a restart (sarama's
// ListConsumerGroups keeps only those). A group with no protocol type has
// nothing worth keeping: a tombstone.
func (g *group) groupMetadataRecord() record.Record {
	r := record.Record{Key: groupMetadataKey(g.id), Timestamp: g.c.cfg.clock.Now().UnixMilli()}
	if len(g.members) == 0 && g.protocolType == "" {
		return r
	}
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType, v.Generation = g.protocolType, g.generation
	v.CurrentStateTimestamp = r.Timestamp
	if len(g.members) == 0 {
		r.Value = v.AppendTo(nil)
		return r
	}
	v.Protocol, v.Leader = kmsg.StringPtr(g.protocol), kmsg.StringPtr(g.leader)
	for _, id := range g.order {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout.Milliseconds())
		vm.SessionTimeoutMillis = int32(m.sessionTimeout.Milliseconds())
		vm.Subscription, vm.Assignment = m.metadata(g.protocol), m.assignment
		v.Members = append(v.Members, vm)
	}
	r.Value = v.AppendTo(nil)
	return r
}

// persist writes the group's membership (Empty once it has none left) to
// the offsets topic, durably: the topic syncs every append, and a
// cluster's write is committed by a majority.
func (g *group) persist() error {
	if len(g.members) == 0 && !g.persisted {
		return nil
	}
	if err := g.c.gs.writeMembership(g.id, g.groupMetadataRecord()); err != nil {
		return err
	}
	g.persisted = len(g.members) > 0
	return nil
}

// forgetGroup writes the tombstone of a deleted group's GroupMetadata
// record, so that a restart does not list it Empty again.
func (c *coordinator) forgetGroup(id string) error {
	return c.gs.writeMembership(id, record.Record{Key: groupMetadataKey(id), Timestamp: c.cfg.clock.Now().UnixMilli()})
}

// loadGroups rebuilds a single node's groups whose last generation had
// members from the offsets topic, and remembers the protocol type of
// those it left Empty: the last record of each group wins, a tombstone
// removes it (readMembership).
func (c *coordinator) loadGroups() {
	n, err := c.st.Partitions(store.OffsetsTopic)
	if err != nil {
		return
	}
	last := make(map[string]*kmsg.GroupMetadataValue)
	for p := range int32(n) {
		l, err := c.st.Log(store.OffsetsTopic, p)
		if err != nil {
			continue
		}
		for r, err := range l.Records(l.StartOffset()) {
			if err != nil {
				break // the store reported this partition's damage when it opened
			}
			if isMembership(r.Key) {
				readMembership(last, r.Key, r.Value)
			}
		}
	}
	c.restoreMemberships(last)
}

// restoreGroup brings a loaded generation back as a stable group whose
// members' sessions start now.
func (c *coordinator) restoreGroup(id string, v *kmsg.GroupMetadataValue) {
	g := c.newGroup(id)
	g.state, g.persisted = stateStable, true
	g.protocolType, g.protocol, g.generation = v.ProtocolType, *v.Protocol, v.Generation
	for _, vm := range v.Members {
		if _, dup := g.members[vm.MemberID]; dup {
			continue
		}
		m := &member{
			id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			sessionTimeout:   msDuration(vm.SessionTimeoutMillis),
			rebalanceTimeout: msDuration(vm.RebalanceTimeoutMillis),
			protocolType:     v.ProtocolType,
			protocols:        []kmsg.JoinGroupRequestProtocol{{Name: *v.Protocol, Metadata: vm.Subscription}},
			assignment:       vm.Assignment,
		}
		if m.sessionTimeout <= 0 {
			m.sessionTimeout = c.cfg.MinSessionTimeout
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.members[m.id] = m
		g.order = append(g.order, m.id)
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
		g.heartbeat(m)
	}
	g.leader = g.order[0]
	if v.Leader != nil && g.members[*v.Leader] != nil {
		g.leader = *v.Leader
	}
}
