package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// ErrNotAStore is matched by Open's error for a directory that holds
// something other than a store: a partition directory (a single log), a
// directory Kafka would not start on, or a directory with files but
// nothing of a store. The error is a *NotAStoreError. Nothing is written
// to it.
var ErrNotAStore = errors.New("store: not a store directory")

// NotAStoreError is Open's refusal of Dir, a directory that is not a
// store (ErrNotAStore), the pattern seglog.NotALogError and
// raftlog.NotAStoreError follow too. Reason says what Dir is instead, or
// the error that showed it (fs.ErrNotExist for an absent directory a
// reader needed, which errors.Is sees).
type NotAStoreError struct {
	Dir    string
	Reason error
}

// Error reads "store: not a store directory: " and the reason, which
// names Dir.
func (e *NotAStoreError) Error() string { return ErrNotAStore.Error() + ": " + e.Reason.Error() }

// Is makes the error match ErrNotAStore.
func (e *NotAStoreError) Is(target error) bool { return target == ErrNotAStore }

// Unwrap returns the reason.
func (e *NotAStoreError) Unwrap() error { return e.Reason }

// notAStore returns a *NotAStoreError for dir, its reason formatted.
func notAStore(dir, format string, args ...any) error {
	return &NotAStoreError{Dir: dir, Reason: fmt.Errorf(format, args...)}
}

// checkStoreDir refuses, before Open writes anything (the lock, the
// offsets topic's fifty directories, checkpoints), a directory that is
// not a store or an empty place for one. Kafka refuses a log.dir with a
// subdirectory that is not a partition's; a store opened on a partition
// directory, or on a directory of someone's files, would fill it with
// its own. A directory that does not exist, or holds nothing of a store,
// is fine unless existing is set (a reader, or a caller that works on a
// store rather than makes one): Open would create the store.
func checkStoreDir(fsys vfs.FS, dir string, existing bool) error {
	if b := filepath.Base(dir); b == layout.ClusterNodeDir || b == layout.ClusterMetadataDir {
		// Its meta.properties would pass it for a log.dir.
		return notAStore(dir, "%s is a cluster node's own records, kept inside its DIR: give the node's DIR, %s", dir, filepath.Dir(dir))
	}
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if existing {
			return notAStore(dir, "%s: %w", dir, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	storeLike := false
	var other string
	for _, n := range names {
		if _, _, ok := layout.ParseFileName(n); ok {
			return notAStore(dir, "%s holds segment files (%s): it is a partition directory, a single log; a store is the directory above its partitions", dir, n)
		}
		st, err := fsys.Stat(filepath.Join(dir, n))
		if err != nil {
			continue // gone since the listing
		}
		switch {
		case st.IsDir():
			if _, _, ok := parsePartitionDir(n); ok || isKafkaLeftoverDir(n) {
				storeLike = true
				continue
			}
			if strings.HasPrefix(n, ".") || n == "lost+found" {
				continue // hidden, or the filesystem's own: not a sign of the wrong directory
			}
			return notAStore(dir, "%s: %q is not a topic-partition directory (topic-N), and Kafka would not start on such a log.dir either", dir, n)
		case isStoreFile(n):
			storeLike = true
		case other == "":
			other = n
		}
	}
	if !storeLike && other != "" {
		return notAStore(dir, "%s holds %s and nothing of a store: give an empty or new directory", dir, other)
	}
	if !storeLike && existing {
		return notAStore(dir, "%s holds no store (no topic, checkpoint or partition directory); create one with seglog topics create, or give the store's directory", dir)
	}
	return nil
}

// isKafkaLeftoverDir reports a partition directory Kafka renamed for
// deletion (topic-N.<uuid>-delete), a future replica being moved
// (-future) or a stray one (-stray): a broker's log.dir may hold them.
func isKafkaLeftoverDir(name string) bool {
	d, ok := layout.ParsePartitionDir(name)
	return ok && d.Suffix != ""
}

// isStoreFile reports a file a store or a Kafka broker keeps in its
// log.dir.
func isStoreFile(name string) bool { return layout.IsLogDirFile(name) }

// checkNotClusterNode refuses dir if a cluster node keeps it
// (ErrClusterNode), before anything is written: a store opened there
// without Options.ReplicatedOffsets would append to the replicas outside
// raft (tombstones in the offsets topic at Open among them). The node's
// own directory marks it, and so does the metadata raft log, which stays
// when a user deletes the former (a walk served such a DIR as a single
// node, and the cluster later overwrote the writes it acknowledged).
func checkNotClusterNode(fsys vfs.FS, dir string) error {
	for _, mark := range []string{layout.ClusterNodeDir, layout.ClusterMetadataDir} {
		_, err := fsys.Stat(filepath.Join(dir, mark))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		}
		return fmt.Errorf("%w: %s is a cluster node's (it has %s): its partitions are replicas the node writes through raft; "+
			"written here, what is stored would be overwritten by the cluster when the node rejoins or make this replica disagree with the others. "+
			"Start the node with its cluster command line (seglog serve DIR --node-id N ... --voters ...) and write through any node with a Kafka client; "+
			"the read commands (topics list and describe, groups list and describe, consume, dump, fsck) work on it",
			ErrClusterNode, dir, mark)
	}
	return nil
}
