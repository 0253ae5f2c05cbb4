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

// persist queues the group's membership (Empty once it has none left)
// for the offsets topic (c.mu held); then, if not nil, runs with c.mu
// held once the record is durable (the topic syncs every append, and a
// cluster's write is committed by a majority) or has failed. persisted
// is set as the record is queued: a failed write leaves it set, which
// costs at most one Empty record more, never a member left in the log.
func (g *group) persist(then func(error)) {
	if len(g.members) == 0 && !g.persisted {
		return
	}
	g.persisted = len(g.members) > 0
	g.c.queueWrite(g.id, g.groupMetadataRecord(), then)
}

// queueWrite writes a membership record of group id outside c.mu (held
// by the caller), after the group's earlier ones, so that a slow write
// (a cluster's waits for a majority, up to offsetsCommitTimeout) stalls
// only the requests that wait for it, never the other groups' requests
// on this node. then, if not nil, runs with c.mu held when the write is
// done; it must check that what it answers is still current (the group
// may have moved on, been dropped, or the coordinator closed). The
// returned channel is closed after then has run. Once closed, the
// coordinator queues nothing: the channel is closed at once, then never
// runs.
func (c *coordinator) queueWrite(id string, r record.Record, then func(error)) <-chan struct{} {
	done := make(chan struct{})
	if c.closed {
		close(done)
		return done
	}
	prev := c.writes[id]
	c.writes[id] = done
	c.writing.Add(1)
	go func() {
		defer c.writing.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		err := c.gs.writeMembership(id, r)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.writes[id] == done {
			delete(c.writes, id)
		}
		if then != nil {
			then(err)
		}
	}()
	return done
}

// forgetGroup queues the tombstone of a deleted group's GroupMetadata
// record (c.mu held), so that a restart does not list it Empty again;
// the channel is closed once it is written, with its error in *err.
func (c *coordinator) forgetGroup(id string, err *error) <-chan struct{} {
	return c.queueWrite(id, record.Record{Key: groupMetadataKey(id), Timestamp: c.cfg.clock.Now().UnixMilli()},
		func(e error) { *err = e })
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
