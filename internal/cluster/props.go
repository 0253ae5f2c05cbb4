package cluster

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// ErrDamaged reports a file of the node's own (meta.properties, the
// topic record) that does not parse; the message names the file and
// line. A damaged meta.properties also matches
// layout.ErrBadMetaProperties (its reader is layout's, shared with the
// single node's server).
var ErrDamaged = errors.New("cluster: damaged node file")

// maxNodeFile bounds what is read of the topic record: a line per topic.
const maxNodeFile = 16 << 20

// props is DIR's meta.properties as Kafka's KRaft keeps it: node.id,
// cluster.id and directory.id. A cluster node writes it once the metadata names the
// cluster, with both keys, so the single node's reader (package server)
// reads it too. Before that, the same format with node.id alone is kept
// in DIR/.cluster_node/meta.properties.
type props struct {
	path        string
	exists      bool
	nodeID      int32
	clusterID   string
	directoryID string
}

func readProps(fsys vfs.FS, dir string) (props, error) {
	p := props{path: filepath.Join(dir, layout.MetaPropertiesFile)}
	m, err := layout.ReadMetaProperties(fsys, p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if errors.Is(err, layout.ErrBadMetaProperties) {
		return p, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	if err != nil {
		return p, err
	}
	p.exists, p.nodeID, p.clusterID, p.directoryID = true, m.NodeID, m.ClusterID, m.DirectoryID
	return p, nil
}

// readNodeProps reads DIR's meta.properties and the node's own copy, and
// refuses (ErrNodeID, naming the file) a DIR either names another node
// in: meta.properties if there is one, else the node's own file; then
// one that lost the node's own directory (checkNodeDir).
func readNodeProps(fsys vfs.FS, dir string, id int32) (p, early props, err error) {
	if p, err = readProps(fsys, dir); err != nil {
		return p, early, err
	}
	if early, err = readProps(fsys, filepath.Join(dir, nodeDirName)); err != nil {
		return p, early, err
	}
	named := p
	if !p.exists {
		named = early
	}
	if named.exists && named.nodeID != id {
		return p, early, fmt.Errorf("%w: %s names node.id=%d, and this node was started as node %d", ErrNodeID, named.path, named.nodeID, id)
	}
	if err := checkNodeDir(fsys, dir, p); err != nil {
		return p, early, err
	}
	return p, early, nil
}

// CheckDir is Start's first check of dir, reading only: ErrNodeID if dir
// belongs to a node other than id, ErrNodeStateLost if it was a cluster
// node's and lost the node's own directory. seglog serve asks it before
// it opens the store, which recovers (writes) what it opens.
func CheckDir(fsys vfs.FS, dir string, id int32) error {
	_, _, err := readNodeProps(fsys, dir, id)
	return err
}

// checkNodeDir refuses (ErrNodeStateLost) a DIR that was a cluster
// node's and lost DIR/.cluster_node, the node's own directory. Two signs
// say a DIR was a node's, and Start makes DIR/.cluster_node before
// either: a directory.id in DIR/meta.properties p (a single node's server
// writes node.id and cluster.id alone, and keeps a file it finds as it
// is), and DIR/.cluster_metadata, the metadata raft log, which no Kafka
// broker or single node keeps. Either without DIR/.cluster_node is a DIR
// whose node directory was deleted (to "resync" the node, as a user
// walking docs/cluster.md did) or moved; both are checked because a user
// may lose meta.properties too (a walk deleted both, and the node, no
// longer knowing its id, was refused only at registration, after writing
// a new node directory). Started anyway, the node would take the topics
// it replicated for the cluster for its store's own (their record is
// gone) and serve while replicating none of them. A single node's store
// joining a cluster for the first time, and a node's DIR from a build
// before directory ids, have neither and start as before.
func checkNodeDir(fsys vfs.FS, dir string, p props) error {
	nodeDir := filepath.Join(dir, nodeDirName)
	if _, err := fsys.Stat(nodeDir); !errors.Is(err, fs.ErrNotExist) {
		return err // there (nil), or not to be told: the error says why
	}
	metaDir := filepath.Join(dir, layout.ClusterMetadataDir)
	_, err := fsys.Stat(metaDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	metaLost := err != nil
	if p.directoryID == "" && metaLost {
		return nil
	}
	var sign, what, restore string
	switch {
	case p.directoryID == "":
		sign = fmt.Sprintf("%s holds the metadata log a cluster node keeps, but %s is missing", metaDir, nodeDir)
		restore = nodeDirName + " (and " + layout.MetaPropertiesFile + ", if it went with it)"
	case metaLost:
		what = fmt.Sprintf("neither %s nor %s (the metadata log) is there", nodeDir, metaDir)
		restore = nodeDirName + " and " + layout.ClusterMetadataDir
	default:
		what = fmt.Sprintf("%s is missing (%s, the metadata log, is there)", nodeDir, metaDir)
		restore = nodeDirName
	}
	if sign == "" {
		sign = fmt.Sprintf("%s carries directory.id=%s, which a cluster node writes there, but %s", p.path, p.directoryID, what)
	}
	msg := fmt.Sprintf("%s. "+
		"This DIR was a cluster node's and lost the node's state: %s held its record of which of the store's topics it replicates for the cluster, and without it the node would serve while replicating none of them. "+
		"Nothing was written. Put %s back as it was, and start the node again with the same command (a node that is behind or crashed catches up by itself: deleting its state does not resync it). "+
		"If it is gone for good, leave this node stopped (partitions with other replicas run on them): a node cannot rejoin without its state until membership changes are built (docs/cluster.md, \"A node that lost its DIR\"); "+
		"the read commands (seglog topics list, consume, dump) still read the records here",
		sign, nodeDirName, restore)
	if metaLost {
		// Kafka 3.7 and later write a directory.id too, and a store
		// opens a broker's log.dir: without the metadata log as well,
		// the DIR may be one, joining a cluster for the first time.
		msg += fmt.Sprintf(". If this DIR is a Kafka broker's log.dir instead (Kafka 3.7 and later write a directory.id too), joining a cluster for the first time, delete the directory.id line from %s", p.path)
	}
	return fmt.Errorf("%w: %s", ErrNodeStateLost, msg)
}

func (p props) write(fsys vfs.FS) error {
	return layout.WriteMetaProperties(fsys, p.path, layout.MetaProperties{NodeID: p.nodeID, ClusterID: p.clusterID, DirectoryID: p.directoryID})
}

// nodeDirName is the hidden directory in DIR holding the node's own
// records (hidden so the store leaves it alone, as meta.DirName). Its
// presence is what makes a store refuse to be written as a single
// node's (store.ErrClusterNode).
const nodeDirName = layout.ClusterNodeDir

// topicRecord remembers which metadata topic (by id) each store topic
// this node created stands for, in DIR/.cluster_node/topics: one line
// "name hex-id index" per topic. The store keeps no topic id, and without
// the record a node that was down while a topic was deleted and created
// again under its name could not tell the old data from the new topic;
// nor could it tell a topic of its own store (made before it joined) from
// one it created, and it deletes only those it created.
//
// index is the metadata index at which this node saw the topic when it
// created it. A restarted node's metadata starts from its snapshot and
// replays the log from there: until it is past that index again, a topic
// missing from it has not been replayed yet, not deleted, and its data
// must stay (the sync loop once deleted every topic of a restarted node
// this way). A line without an index (the record's first form) counts
// as never passed: such a topic is never deleted by the sync loop.
type topicRecord struct {
	fs   vfs.FS
	path string
	ids  map[string][16]byte
	seen map[string]uint64
}

// unknownIndex is the index of a record line that has none.
const unknownIndex = math.MaxUint64

func loadTopicRecord(fsys vfs.FS, dir string) (*topicRecord, error) {
	r := &topicRecord{fs: fsys, path: filepath.Join(dir, nodeDirName, "topics"), ids: map[string][16]byte{}, seen: map[string]uint64{}}
	data, err := vfs.ReadFileLimit(fsys, r.path, maxNodeFile)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	off := 0
	for i, line := range strings.Split(string(data), "\n") {
		at := off
		off += len(line) + 1
		if line == "" {
			continue
		}
		f := strings.Split(line, " ")
		var id [16]byte
		seen := uint64(unknownIndex)
		var b []byte
		herr := errors.New("fields")
		if len(f) == 2 || len(f) == 3 {
			b, herr = hex.DecodeString(f[1])
		}
		if len(f) == 3 && herr == nil {
			seen, herr = strconv.ParseUint(f[2], 10, 64)
		}
		if herr != nil || f[0] == "" || len(b) != len(id) {
			return nil, fmt.Errorf("%w: %s line %d (byte %d): want \"topic hex-id index\"", ErrDamaged, r.path, i+1, at)
		}
		copy(id[:], b)
		r.ids[f[0]] = id
		r.seen[f[0]] = seen
	}
	return r, nil
}

func (r *topicRecord) save() error {
	if err := r.fs.MkdirAll(filepath.Dir(r.path)); err != nil {
		return err
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(r.ids)) {
		id := r.ids[name]
		if seen, ok := r.seen[name]; ok && seen != unknownIndex {
			fmt.Fprintf(&b, "%s %s %d\n", name, hex.EncodeToString(id[:]), seen)
		} else {
			fmt.Fprintf(&b, "%s %s\n", name, hex.EncodeToString(id[:]))
		}
	}
	return vfs.WriteFileAtomic(r.fs, r.path, []byte(b.String()))
}
