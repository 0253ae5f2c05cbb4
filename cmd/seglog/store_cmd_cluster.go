package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seglog/seglog/internal/cluster"
	"github.com/seglog/seglog/ui"
	"github.com/seglog/seglog/vfs"
)

// replicaView is what the tools know of a cluster node's replicas: the
// record the node keeps in its DIR (cluster.ReplicasFile), read without
// a lock and without writing, whether or not the node runs.
type replicaView struct {
	// cluster is false for a single node's store: nothing is shown.
	cluster bool
	// rec is the node's last record; have is false before the node
	// wrote one.
	rec  cluster.ReplicaRecord
	have bool
}

// readReplicaView reads dir's replica record, if dir is a cluster node's.
func readReplicaView(dir string) (replicaView, error) {
	var v replicaView
	ok, err := cluster.IsClusterDir(vfs.Default, dir)
	if err != nil || !ok {
		return v, err
	}
	v.cluster = true
	v.rec, err = cluster.ReadReplicaRecord(vfs.Default, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return v, nil
	}
	v.have = err == nil
	return v, err
}

// header says whose view the tables show and how old it is.
func (v replicaView) header() string {
	if !v.have {
		return "Cluster node: no replica record yet (the node writes " + cluster.ReplicasFile + " once it has applied the metadata)"
	}
	ctrl := "none known"
	if v.rec.Controller >= 0 {
		ctrl = strconv.Itoa(int(v.rec.Controller))
	}
	return fmt.Sprintf("Cluster node %d: replicas from the metadata (index %d), leaders as this node last knew them at %s; controller %s",
		v.rec.Node, v.rec.MetaIndex, time.UnixMilli(v.rec.Written).UTC().Format(time.RFC3339), ctrl)
}

// printReplicas prints topic's partitions as the record has them, as
// kafka-topics.sh --describe lists leader, replicas and ISR.
func (v replicaView) printReplicas(out io.Writer, topic string) {
	if !v.have {
		return
	}
	parts, ok := v.rec.Topics[topic]
	if !ok {
		fmt.Fprintf(out, "Topic %s is not in the node's replica record (not in the metadata when it was written)\n", topic)
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR")
	for _, p := range parts {
		leader, epoch := "none", "-"
		if p.Leader >= 0 {
			leader, epoch = strconv.Itoa(int(p.Leader)), strconv.Itoa(int(p.Epoch))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", p.Partition, leader, epoch, joinIDs(p.Replicas), joinIDs(p.ISR))
	}
	tw.Flush()
}

func joinIDs(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// uiCluster is seglog ui's ui.Options.Cluster for a cluster node's dir:
// the node's record, read again for every state the page draws, so the
// page follows leader changes while the node runs.
func uiCluster(dir string) func() (ui.Cluster, error) {
	return func() (ui.Cluster, error) {
		v, err := readReplicaView(dir)
		if err != nil || !v.cluster {
			return ui.Cluster{}, err
		}
		c := ui.Cluster{About: v.header(), Topics: map[string][]ui.Replication{}}
		for name, parts := range v.rec.Topics {
			reps := make([]ui.Replication, len(parts))
			for i, p := range parts {
				reps[i] = ui.Replication{Leader: p.Leader, Epoch: p.Epoch, Replicas: p.Replicas, ISR: p.ISR}
			}
			c.Topics[name] = reps
		}
		return c, nil
	}
}
