package raftlog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// ErrNotAStore: Open was given a directory that is a log partition itself
// (it holds segment files: a seglog or Kafka partition, or a Store's own
// raft-0), or an absent directory inside one. A Store keeps its partition
// in a subdirectory, and a partition's directory holds no directories, so
// creating a Store there would make that log unopenable. Open refuses it
// without writing anything; the error is a *NotAStoreError.
var ErrNotAStore = errors.New("raftlog: not a Store directory")

// NotAStoreError describes a directory Open refused: Dir, and the log
// partition it is or is inside. It matches ErrNotAStore, the pattern of
// seglog.NotALogError and store.NotAStoreError.
type NotAStoreError struct {
	// Dir is the directory given to Open.
	Dir string
	// Partition is the log directory that Dir is (Partition == Dir) or
	// that Dir would have been created inside.
	Partition string
}

// Error names the partition and what to give instead.
func (e *NotAStoreError) Error() string {
	if e.Partition == e.Dir {
		hint := "give an absent, empty or Store directory (a Store keeps its partition in DIR/" + PartitionDir + ")"
		if filepath.Base(filepath.Clean(e.Dir)) == PartitionDir {
			hint = "this looks like a Store's partition: give the directory above it, " + filepath.Dir(filepath.Clean(e.Dir))
		}
		return fmt.Sprintf("raftlog: %s is a log partition (it holds segment files), not a Store directory; %s", e.Dir, hint)
	}
	return fmt.Sprintf("raftlog: %s would be created inside the log partition %s, which then could not be opened (a partition's directory holds no directories); give a directory outside it", e.Dir, e.Partition)
}

// Is makes the error match ErrNotAStore.
func (e *NotAStoreError) Is(target error) bool { return target == ErrNotAStore }

// checkStoreDir refuses dir, before anything is written, when it is a log
// partition, or is absent and its nearest existing ancestor is one. Other
// files in an existing dir are left alone: a Store directory is like a
// Kafka log.dir, which may hold more than its partitions (raft's snapshot
// directory, say).
func checkStoreDir(fsys vfs.FS, dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		names, err := fsys.List(p)
		if err == nil {
			for _, n := range names {
				if _, _, ok := layout.ParseFileName(n); ok {
					return &NotAStoreError{Dir: dir, Partition: p}
				}
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err // not a directory, or unreadable
		}
		if up := filepath.Dir(p); up == p {
			return nil
		}
	}
}
