package fsck

import (
	"fmt"
	"path/filepath"

	"github.com/seglog/seglog/vfs"
)

// maxTreeDepth bounds how deep PartitionDirs descends: a Kafka log.dirs
// directory holds partition folders directly, so a few levels suffice.
const maxTreeDepth = 4

// PartitionDirs returns the partition directories at or below root, in
// order, each as filepath.Join(root, ...): root itself when it holds
// segment files or checkpoints or has no subdirectory, then the partition
// directories found in its subdirectories (a Kafka log.dir holds one per
// topic-partition).
func PartitionDirs(fsys vfs.FS, root string) ([]string, error) {
	fi, err := fsys.Stat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s", ErrNotDir, root)
	}
	var out []string
	err = walkPartitions(fsys, root, 0, &out)
	return out, err
}

func walkPartitions(fsys vfs.FS, dir string, depth int, out *[]string) error {
	names, err := fsys.List(dir)
	if err != nil {
		return err
	}
	var subdirs []string
	partition := false
	for _, n := range names {
		if _, ok, bad := parseSegFile(n); ok || bad {
			partition = true
			continue
		}
		if n == leaderEpochFile || n == partitionMetaFile {
			partition = true
		}
		if fi, err := fsys.Stat(filepath.Join(dir, n)); err == nil && fi.IsDir() {
			subdirs = append(subdirs, n)
		}
	}
	if partition || len(subdirs) == 0 {
		*out = append(*out, dir)
	}
	if depth >= maxTreeDepth {
		return nil
	}
	for _, s := range subdirs {
		if err := walkPartitions(fsys, filepath.Join(dir, s), depth+1, out); err != nil {
			return err
		}
	}
	return nil
}

// LogBytes returns the total size of the .log files in dirs, for progress
// reporting.
func LogBytes(fsys vfs.FS, dirs []string) int64 {
	var total int64
	for _, d := range dirs {
		names, err := fsys.List(d)
		if err != nil {
			continue
		}
		for _, n := range names {
			if f, ok, _ := parseSegFile(n); ok && f.temp == "" && f.kind == sufLog {
				if fi, err := fsys.Stat(filepath.Join(d, n)); err == nil {
					total += fi.Size()
				}
			}
		}
	}
	return total
}
