package server

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// LogObserver follows what a Cluster's replication writes to the
// partitions this node replicates, leader or follower, so that what the
// server derives from a log (the idempotent producers' state) follows every
// replica's log: a node that becomes a partition's leader then has the
// state of what earlier leaders wrote, without reading the log again.
// Calls for one partition come one at a time, in the order of the changes;
// they should return quickly (the replication waits for them).
type LogObserver interface {
	// Appended reports batches stored at the end of a partition's log,
	// durable and as stored (stamped with their offsets), before the
	// write that stored them is acknowledged to anyone. The batches are
	// the caller's again when it returns.
	Appended(topic string, partition int32, batches [][]byte)
	// Truncating reports that the records at and after offset are about
	// to be removed (uncommitted entries a new leader replaced), or,
	// for offset 0, that the partition's content is about to change in a
	// way appends do not describe (a snapshot copy restarting it, a write
	// that failed midway): what was derived from it is read again.
	Truncating(topic string, partition int32, offset int64)
	// TopicDeleted reports that the cluster deleted topic and this node's
	// store no longer holds it: the producer state kept for it goes, and
	// groups' commits for it, in the offsets partitions this node leads,
	// are tombstoned, as Kafka's coordinator does when a topic goes.
	// Left, they would come back with a topic created again under the
	// same name, and its consumers would start past its records. It must
	// not block on the cluster: the tombstones are written after it
	// returns.
	TopicDeleted(topic string)
}

// observer is the server's LogObserver: it keeps the producer state of
// every partition the node replicates.
type observer struct{ s *Server }

// Appended records the idempotent batches in the partition's producer
// state: at once if it is loaded, after the load if one is under way.
// An unloaded state starts loading (in the background: the replication
// must not wait for a read of the log), so that a follower has the state
// before it leads. A roll writes a snapshot, as on one node.
func (o observer) Appended(topic string, partition int32, batches [][]byte) {
	idempotent := false
	for _, b := range batches {
		if b := record.Batch(b); len(b) >= record.HeaderSize && b.ProducerID() >= 0 && !b.IsControl() {
			idempotent = true
			break
		}
	}
	if !idempotent {
		// Nothing for the state (a roll they caused is seen at the next
		// idempotent batch, as on one node): the replication's common
		// path pays no lookup.
		return
	}
	l, err := o.s.partitionLog(topic, partition)
	if err != nil {
		return
	}
	pp := o.s.pids.partition(topic, partition, l)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.state == unloaded {
		pp.beginLoad()
		go pp.runLoad()
	}
	for _, b := range batches {
		b := record.Batch(b)
		if len(b) < record.HeaderSize || b.ProducerID() < 0 || b.IsControl() {
			continue
		}
		ob := observedBatch{pid: b.ProducerID(), epoch: b.ProducerEpoch(), firstSeq: b.BaseSequence(), lastSeq: b.LastSequence(),
			firstOff: b.BaseOffset(), lastOff: b.LastOffset(), maxTS: b.MaxTimestamp()}
		if pp.state == loading {
			pp.observed = append(pp.observed, ob)
			continue
		}
		pp.record(ob.pid, ob.epoch, ob.firstSeq, ob.lastSeq, ob.firstOff, ob.lastOff, ob.maxTS)
	}
	if pp.state == loaded {
		o.s.snapshotOnRoll(l, pp)
	}
}

// Truncating removes the partition's snapshots past offset (they describe
// batches about to go; removed first, so that no crash leaves one behind)
// and the removed batches from the state. A producer left with none of its
// batches is no longer known from the state (its earlier batches were
// not kept), so the state is read from the log again; so is a state whose
// load was under way.
func (o observer) Truncating(topic string, partition int32, offset int64) {
	l, err := o.s.partitionLog(topic, partition)
	if err != nil {
		return
	}
	if err := removeSnapshotsAfter(o.s.st.FS(), l.Dir(), offset); err != nil {
		o.s.logger.Warn("server: removing producer snapshots past a truncation", "dir", l.Dir(), "offset", offset, "err", err)
	}
	pp := o.s.pids.partition(topic, partition, l)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	switch pp.state {
	case loading:
		pp.cut = true
	case loaded:
		if !pp.dropFrom(offset) {
			pp.state = unloaded
			clear(pp.m)
		}
	}
}

// dropFrom removes the batches at or after offset from the state (pp.mu
// held). It reports false when a producer lost every batch the state kept
// of it: what it wrote before those is not known any more.
func (pp *partProducers) dropFrom(offset int64) bool {
	for _, e := range pp.m {
		n := len(e.batches)
		for n > 0 && e.batches[n-1].firstOff >= offset {
			n--
		}
		if n == len(e.batches) {
			continue
		}
		if n == 0 {
			return false
		}
		e.batches = e.batches[:n]
	}
	return true
}

// removeSnapshotsAfter removes a partition directory's producer snapshots
// named past offset.
func removeSnapshotsAfter(fsys vfs.FS, dir string, offset int64) error {
	offs, err := snapshots(fsys, dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, off := range offs {
		if off > offset {
			if err := fsys.Remove(filepath.Join(dir, layout.FileName(off, layout.SnapshotSuffix))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// TopicDeleted drops the topic's producer state and has a cluster
// coordinator tombstone its commits (clusterGroups.topicDeleted).
func (o observer) TopicDeleted(topic string) {
	o.s.pids.forgetTopic(topic)
	if g := o.s.clusterGroups.Load(); g != nil {
		g.topicDeleted(topic)
	}
}
