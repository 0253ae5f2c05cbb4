package server

import (
	"time"

	"github.com/seglog/seglog/store"
)

// A deleted topic's commits, in a cluster: each node tombstones those in
// the offsets partitions it leads when its store drops the topic, as
// Kafka's coordinator does (onPartitionsDeleted). Left, they would come
// back with a topic created again under the name, and its consumers
// would start past its records. Each commit is tombstoned only while it
// is as it was when the topic went: a commit made since, to the new
// topic, stays.
//
// A partition this node does not lead then is its leader's to tombstone;
// but a leader that dies before its tombstones are written leaves them to
// nobody (a walk saw it in 2 of 4 SIGKILLs 50 ms after the delete). So
// each node also reads the deleted topic's commits from its own replica
// of those partitions, up to where the replica ended when the topic went,
// and tombstones them if it comes to lead the partition within noteFor.

// noteFor is how long a node keeps the commits it read from a replica it
// did not lead: a leadership that moves later finds them tombstoned by
// the leader of the time, or the commits are some other failure's.
const noteFor = 10 * time.Minute

// goneScan is a deleted topic's commits to read from this node's replica
// of offsets partitions, each below the offset its log ended at when the
// topic went.
type goneScan struct {
	topic  string
	bounds map[int32]int64
}

// goneNote is the deleted topics' commits read from one replica, by
// group, kept until the partition is loaded here or until.
type goneNote struct {
	until   time.Time
	commits map[string]map[tp]store.Committed
}

// topicDeleted notes the commits for topic in the tables this node has
// loaded, as they are now, and where its replicas of the other offsets
// partitions end, and kicks run, which reads those (scanGone) and writes
// the tombstones (tombstoneGone). It reads no records: the node's metadata
// goroutine calls it.
func (g *clusterGroups) topicDeleted(topic string) {
	// The count as known, without asking the Cluster: the caller holds
	// the node's metadata lock. Zero: there is no offsets topic.
	n := g.n.Load()
	bounds := map[int32]int64{}
	g.mu.Lock()
	for p := range n {
		t := g.tables[p]
		if t == nil {
			bounds[p] = -1 // its end is read below, outside mu
			continue
		}
		for group, m := range t.m {
			for k, c := range m {
				if k.topic == topic {
					g.noteGone(group, k, c)
				}
			}
		}
	}
	g.mu.Unlock()
	for p := range bounds {
		// Only a partition this node replicates: opening another's log
		// would create its first segment.
		if _, err := g.cl.State(store.OffsetsTopic, p); err != nil {
			delete(bounds, p)
			continue
		}
		if l, err := g.st.Log(store.OffsetsTopic, p); err == nil {
			bounds[p] = l.EndOffset()
		} else {
			delete(bounds, p)
		}
	}
	if len(bounds) > 0 {
		g.mu.Lock()
		g.scans = append(g.scans, goneScan{topic, bounds})
		g.mu.Unlock()
	}
	g.poke()
}

// noteGone adds a commit to tombstone. Called with mu.
func (g *clusterGroups) noteGone(group string, k tp, c store.Committed) {
	if g.gone == nil {
		g.gone = make(map[string]map[tp]store.Committed)
	}
	if g.gone[group] == nil {
		g.gone[group] = make(map[tp]store.Committed)
	}
	g.gone[group][k] = c
}

// scanGone reads the commits topicDeleted left to read, from this node's
// replicas, into notes, and forgets the notes past their time.
func (g *clusterGroups) scanGone() {
	now := g.clock.Now()
	g.mu.Lock()
	scans := g.scans
	g.scans = nil
	for p, n := range g.notes {
		if now.After(n.until) {
			delete(g.notes, p)
		}
	}
	g.mu.Unlock()
	for _, sc := range scans {
		for p, bound := range sc.bounds {
			found, err := g.readGone(p, sc.topic, bound)
			if err != nil {
				g.logger.Warn("server: reading a deleted topic's commits from an offsets partition", "topic", sc.topic, "partition", p, "err", err)
				continue
			}
			if len(found) == 0 {
				continue
			}
			g.mu.Lock()
			if g.notes == nil {
				g.notes = make(map[int32]*goneNote)
			}
			n := g.notes[p]
			if n == nil {
				n = &goneNote{commits: make(map[string]map[tp]store.Committed)}
				g.notes[p] = n
			}
			n.until = now.Add(noteFor)
			for group, m := range found {
				if n.commits[group] == nil {
					n.commits[group] = make(map[tp]store.Committed)
				}
				for k, c := range m {
					n.commits[group][k] = c
				}
			}
			g.mu.Unlock()
			// Loaded since the topic went (by a check under way then):
			// no later load hands the notes over.
			g.loadedNotes(p)
		}
	}
}

// readGone returns topic's commits in this node's replica of offsets
// partition p below offset bound, as they stand there, by group.
func (g *clusterGroups) readGone(p int32, topic string, bound int64) (map[string]map[tp]store.Committed, error) {
	l, err := g.st.Log(store.OffsetsTopic, p)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[tp]store.Committed)
	for r, err := range l.Records(l.StartOffset()) {
		if err != nil {
			return nil, err
		}
		if r.Offset >= bound {
			break
		}
		if isMembership(r.Key) {
			continue
		}
		group, name, part, c, isCommit, err := store.DecodeCommit(r.Key, r.Value)
		if err != nil || !isCommit || name != topic {
			continue
		}
		k := tp{name, part}
		if c == nil {
			delete(out[group], k)
			continue
		}
		if out[group] == nil {
			out[group] = make(map[tp]store.Committed)
		}
		out[group][k] = *c
	}
	return out, nil
}

// loadedNotes hands the notes of offsets partition p, just loaded here,
// to tombstoneGone.
func (g *clusterGroups) loadedNotes(p int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.notes[p]
	if n == nil || g.tables[p] == nil {
		return
	}
	delete(g.notes, p)
	for group, m := range n.commits {
		for k, c := range m {
			g.noteGone(group, k, c)
		}
	}
}

// tombstoneGone writes the tombstones noted, a batch per group, each for
// a commit still as it was noted. A write that fails is not tried again
// (write logs it; a failure that lasts would log at every kick): the
// commits stay, as docs/cluster-server.md, "Left", says.
func (g *clusterGroups) tombstoneGone() {
	g.mu.Lock()
	gone := g.gone
	g.gone = nil
	g.mu.Unlock()
	for group, noted := range gone {
		if g.ctx.Err() != nil {
			return
		}
		picked := 0
		err := g.tombstone(group, func(k tp, c store.Committed) bool {
			was, ok := noted[k]
			if ok && was == c {
				picked++
				return true
			}
			return false
		})
		if err == nil && picked > 0 {
			g.logger.Info("server: tombstoned a deleted topic's commits", "group", group, "commits", picked)
		}
	}
}
