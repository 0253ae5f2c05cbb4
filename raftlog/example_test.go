package raftlog_test

import (
	"io"
	"log"
	"path/filepath"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/raftlog"
)

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, nil }
func (nopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

// A Store is both raft's log store and its stable store. The partition
// it keeps is DIR/raft-0, readable with Kafka tools.
func ExampleOpen() {
	dir := "/var/lib/myapp/raft"
	store, err := raftlog.Open(dir, raftlog.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStore(filepath.Join(dir, "snapshots"), 2, nil)
	if err != nil {
		log.Fatal(err)
	}
	conf := raft.DefaultConfig()
	conf.LocalID = "node-1"
	// conf.RestoreCommittedLogs = true would replay committed entries at
	// startup from the commit index the Store keeps in its batches; see
	// docs/raft.md for why raft v1.8.0 can hang doing so.
	_, trans := raft.NewInmemTransport("node-1")
	r, err := raft.NewRaft(conf, nopFSM{}, store, store, snaps, trans)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Shutdown()
}
