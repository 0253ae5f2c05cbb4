package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/seglog/seglog/vfs"
)

// ReplicasFile is the file, under DIR/.cluster_node, where a node records
// every partition's replicas and, as it last saw them, leader, epoch and
// ISR, for the tools (seglog topics describe, seglog ui) to read without
// a lock, without writing, and whether or not the node runs.
const ReplicasFile = "partitions.json"

// recordInterval is the least time between two writes of the record: a
// leader change is there within it, and a busy cluster's notifications
// (one per high-watermark move) cost at most a few comparisons a second.
// recordRefresh is how often the record is compared even without a
// notification: an ISR change does not notify.
const (
	recordInterval = 200 * time.Millisecond
	recordRefresh  = time.Second
)

// ReplicaRecord is what ReplicasFile holds: the metadata's topics and
// assignments as the node last applied them, with the leaders it knew.
type ReplicaRecord struct {
	// Node is the id of the node that wrote it.
	Node int32 `json:"node"`
	// Controller is the controller it knew then, -1 if none.
	Controller int32 `json:"controller"`
	// Written is when it was written, in milliseconds since the epoch.
	Written int64 `json:"written"`
	// MetaIndex is the index of the metadata state it describes.
	MetaIndex uint64 `json:"metaIndex"`
	// Topics maps each topic to its partitions, in partition order.
	Topics map[string][]ReplicaInfo `json:"topics"`
}

// ReplicaInfo is one partition in the record. Leader and Epoch are -1,
// and ISR empty, when this node knew no leader: neither its replica's
// raft group nor, for a partition it does not replicate, the leaders'
// heartbeat reports (leaders.go) named one.
type ReplicaInfo struct {
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Leader    int32   `json:"leader"`
	Epoch     int32   `json:"epoch"`
	ISR       []int32 `json:"isr"`
}

// ReadReplicaRecord reads the record a cluster node keeps in dir,
// read-only. It answers an error matching fs.ErrNotExist when dir holds
// none (a single node's store, or a node that has not written it yet),
// and ErrDamaged, naming the file and byte, when it does not parse.
func ReadReplicaRecord(fsys vfs.FS, dir string) (ReplicaRecord, error) {
	var r ReplicaRecord
	return r, readNodeJSON(fsys, dir, ReplicasFile, &r)
}

// readNodeJSON reads one of the JSON records in DIR/.cluster_node into v:
// an error matching fs.ErrNotExist when there is none, ErrDamaged naming
// the file and byte when it does not parse.
func readNodeJSON(fsys vfs.FS, dir, file string, v any) error {
	name := filepath.Join(dir, nodeDirName, file)
	data, err := vfs.ReadFileLimit(fsys, name, maxNodeFile)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		at := dec.InputOffset()
		switch {
		case errors.As(err, &se):
			at = se.Offset
		case errors.As(err, &te):
			at = te.Offset
		}
		return fmt.Errorf("%w: %s byte %d: %v", ErrDamaged, name, at, err)
	}
	return nil
}

// IsClusterDir reports whether dir belongs to a cluster node: it has the
// node's own directory, which Start makes at the first start.
func IsClusterDir(fsys vfs.FS, dir string) (bool, error) {
	_, err := fsys.Stat(filepath.Join(dir, nodeDirName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// kickRecord asks the record loop to compare the record again.
func (n *Node) kickRecord() {
	select {
	case n.recordKick <- struct{}{}:
	default:
	}
}

// recordLoop keeps ReplicasFile current: on every notification (a leader
// or high watermark moved, the metadata changed) and every recordRefresh,
// it builds the record and writes it if anything but its time changed,
// then waits recordInterval. At Close it compares once more, without the
// wait, and stops, before the partitions do: the file keeps the leaders
// the running node last knew, those it handed its partitions to in a
// controlled shutdown (HandOver) included, not a state the wait left
// behind (a transfer under way) nor the partitions' closing.
func (n *Node) recordLoop() {
	defer n.wg.Done()
	tick := time.NewTicker(recordRefresh)
	defer tick.Stop()
	// After a restart the metadata is replayed from the start: a record
	// of an earlier state than the one on disk would show the tools
	// fewer topics than the node last knew. The record on disk stays
	// until the replay passes it (a damaged one is the node's own,
	// derived data: it is replaced).
	var floor uint64
	if prev, err := ReadReplicaRecord(n.cfg.FS, n.cfg.Dir); err == nil {
		floor = prev.MetaIndex
	}
	var last []byte
	update := func() {
		if err := n.updateRecord(floor, &last); err != nil {
			// The next notification or refresh tries again; the tools
			// show the older record meanwhile.
			n.log.Warn("cluster: writing the replica record", "err", err)
		}
	}
	for {
		select {
		case <-n.ctx.Done():
			update()
			return
		case <-n.recordKick:
		case <-tick.C:
		}
		update()
		select {
		case <-n.ctx.Done():
			// A handover's last leader changes come within
			// recordInterval of its first, and Close right after it.
			update()
			return
		case <-time.After(recordInterval):
		}
	}
}

// updateRecord writes the record if it describes the metadata at floor
// or later and differs from last (the topics written last). A node that
// has applied no metadata (index 0: a first start, or a restart with no
// quorum yet to learn the commit index from) writes none: the tools then
// say there is no record yet, where a record would show a cluster of no
// topics.
func (n *Node) updateRecord(floor uint64, last *[]byte) error {
	rec := n.replicaRecord()
	if rec.MetaIndex == 0 || rec.MetaIndex < floor {
		return nil
	}
	body, err := json.Marshal(rec.Topics)
	if err != nil || bytes.Equal(body, *last) {
		return err
	}
	if err := n.writeRecord(rec); err != nil {
		return err
	}
	*last = body
	return nil
}

// replicaRecord builds the record from what Partitions answers: the
// metadata's replicas, the partition manager's leaders.
func (n *Node) replicaRecord() ReplicaRecord {
	st := n.meta.State()
	rec := ReplicaRecord{Node: n.cfg.NodeID, Controller: n.meta.Controller(), MetaIndex: st.Index(), Topics: map[string][]ReplicaInfo{}}
	for _, name := range st.TopicNames() {
		parts, err := n.Partitions(name)
		if err != nil {
			continue // gone since st was taken: the next record has it right
		}
		ps := make([]ReplicaInfo, len(parts))
		for i, p := range parts {
			ps[i] = ReplicaInfo{Partition: p.Partition, Replicas: p.Replicas, Leader: p.Leader, Epoch: p.LeaderEpoch, ISR: p.ISR}
			if p.Leader < 0 {
				// As ReplicaInfo says: no leader, no epoch of one, no
				// ISR. (Metadata keeps the raft term it gives, which
				// clients compare with the epochs they know.)
				ps[i].Epoch, ps[i].ISR = -1, nil
			}
		}
		rec.Topics[name] = ps
	}
	return rec
}

func (n *Node) writeRecord(rec ReplicaRecord) error {
	rec.Written = time.Now().UnixMilli()
	return n.writeNodeJSON(ReplicasFile, rec)
}

// writeNodeJSON replaces one of the JSON records in DIR/.cluster_node
// with v, atomically.
func (n *Node) writeNodeJSON(file string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	dir := filepath.Join(n.cfg.Dir, nodeDirName)
	if err := n.cfg.FS.MkdirAll(dir); err != nil {
		return err
	}
	return vfs.WriteFileAtomic(n.cfg.FS, filepath.Join(dir, file), append(data, '\n'))
}
