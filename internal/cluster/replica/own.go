package replica

import (
	"sync"

	pb "go.etcd.io/raft/v3/raftpb"
)

// ownEntry names an entry this node proposed by its index and the Data
// raft holds for it (the first byte's address and the length), so Append
// recognizes the very bytes, not an entry that took its place since.
type ownEntry struct {
	index uint64
	data  *byte
	n     int
}

// ownList is the entries of the last Proposed call (multiraft's
// OwnProposals), which the next Append consumes.
type ownList struct {
	mu   sync.Mutex
	ents []ownEntry
}

// Proposed notes the producer batches among entries as this node's own
// proposals: raft's copies of batches the server checked whole
// (server.checkReplicatedBatch: CRC, framing, every record) or the group
// coordinator built, just before. Append's own check (checkEntry) then
// reads their header but computes no CRC over them: that was the second
// of three passes over every byte on the leader (the server's, this one,
// seglog's AppendEpochBatches, which checks every batch of a call before
// storing any, so a bad batch is still refused whole). A follower, which
// receives the batches from the network, checks everything. Each call
// replaces the last one's entries.
func (s *Store) Proposed(entries []*pb.Entry) {
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	clear(s.own.ents)
	s.own.ents = s.own.ents[:0]
	for _, e := range entries {
		if d := e.GetData(); isProducer(e) {
			s.own.ents = append(s.own.ents, ownEntry{index: e.GetIndex(), data: &d[0], n: len(d)})
		}
	}
}

// takeOwn returns whether each of entries is one of the last Proposed
// call's, and forgets them: nil if none is.
func (s *Store) takeOwn(entries []*pb.Entry) []bool {
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	if len(s.own.ents) == 0 {
		return nil
	}
	var own []bool
	k := 0
	for i, e := range entries {
		for k < len(s.own.ents) && s.own.ents[k].index < e.GetIndex() {
			k++
		}
		if k == len(s.own.ents) {
			break
		}
		o := s.own.ents[k]
		if d := e.GetData(); o.index == e.GetIndex() && len(d) == o.n && len(d) > 0 && &d[0] == o.data {
			if own == nil {
				own = make([]bool, len(entries))
			}
			own[i] = true
		}
	}
	clear(s.own.ents) // the batches are not pinned past their Append
	s.own.ents = s.own.ents[:0]
	return own
}
