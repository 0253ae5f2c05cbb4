package layout

import (
	"errors"
	iofs "io/fs"
	"path/filepath"

	"github.com/seglog/seglog/vfs"
)

// Compacted reports whether the log in dir has ever been compacted, by
// the project's rule: it has a cleaner-offset checkpoint. That is its own
// cleaner-offset-checkpoint file (a seglog Log keeps one in its directory
// from its first compaction round on), or, for a partition of a store or
// a Kafka log.dir ("topic-N"), a line for it in the log.dir's file.
// Compaction leaves offset gaps between and inside segments; a log that
// was never compacted has none, so a gap there is missing data.
//
// A checkpoint that cannot be read or parsed is returned as an error with
// compacted false: whether compaction made a gap cannot be told then, and
// each caller says what that means for it (a reader reports the gap, fsck
// reports the checkpoint instead of the gap).
func Compacted(fs vfs.FS, dir string) (bool, error) {
	if _, err := fs.Stat(filepath.Join(dir, CleanerOffsetFile)); err == nil {
		return true, nil
	} else if !errors.Is(err, iofs.ErrNotExist) {
		return false, err
	}
	topic, part, ok := KafkaPartition(dir)
	if b := filepath.Base(filepath.Clean(dir)); !ok && (b == "." || b == "..") {
		// "." names the partition by the working directory's name.
		if abs, err := filepath.Abs(dir); err == nil {
			topic, part, ok = KafkaPartition(abs)
		}
	}
	if !ok {
		return false, nil
	}
	_, found, err := PartitionOffset(fs, filepath.Join(dir, "..", CleanerOffsetFile), topic, part)
	if err != nil {
		return false, err
	}
	return found, nil
}
