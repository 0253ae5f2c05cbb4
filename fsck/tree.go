package fsck

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// maxTreeDepth bounds how deep PartitionDirs descends: a Kafka log.dirs
// directory holds partition folders directly, so a few levels suffice.
const maxTreeDepth = 4

// ErrNoPartition is returned (as a *NoPartitionError) when a directory to
// check holds no partition directory, at its top or below.
var ErrNoPartition = errors.New("fsck: no partition directory found")

// NoPartitionError says where no partition was found and what the search
// left out.
type NoPartitionError struct {
	// Root is the directory searched.
	Root string
	// Skipped are the hidden directories and symbolic links below Root
	// that were not searched, as paths joined to Root.
	Skipped []string
	// Strays are files at Root that are not a log's.
	Strays []string
}

// Error says nothing was found, and what was not looked at.
func (e *NoPartitionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: no partition directory found (no segment files in it or in its subdirectories, %d levels deep)", e.Root, maxTreeDepth)
	if len(e.Strays) > 0 {
		fmt.Fprintf(&b, "; it holds files that are not a log's (%s)", sampleNames(e.Strays))
	}
	if len(e.Skipped) > 0 {
		fmt.Fprintf(&b, "; hidden directories and symbolic links are not searched (%s): name one to check it", sampleNames(e.Skipped))
	}
	return b.String()
}

// Is makes the error match ErrNoPartition.
func (e *NoPartitionError) Is(target error) bool { return target == ErrNoPartition }

func sampleNames(names []string) string {
	const show = 5
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
}

// PartitionDirs returns the partition directories at or below root, in
// order, each as filepath.Join(root, ...): root itself when it is a log's
// directory (layout.Contents: it holds segment files, or only files a log
// has), then the partition directories found in its subdirectories (a
// Kafka log.dir holds one per topic-partition).
//
// It never descends into a hidden directory (.ssh, .git: no log lives
// there, and reading private files is not fsck's business) nor follows a
// symbolic link below root (it may lead anywhere, or back up into the
// tree); root itself is taken as given. When nothing is found it returns
// a *NoPartitionError (ErrNoPartition) naming what it skipped.
func PartitionDirs(fsys vfs.FS, root string) ([]string, error) {
	fi, err := fsys.Stat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s", ErrNotDir, root)
	}
	w := walker{fs: fsys}
	inLogDir := false
	if _, _, ok := layout.KafkaPartition(root); ok {
		if pc, err := layout.ReadContents(fsys, filepath.Join(root, "..")); err == nil {
			inLogDir = logDirLike(pc)
		}
	}
	if err := w.walk(root, 0, inLogDir); err != nil {
		return nil, err
	}
	if len(w.out) == 0 {
		return nil, &NoPartitionError{Root: root, Skipped: w.skipped, Strays: w.rootStrays}
	}
	return w.out, nil
}

type walker struct {
	fs         vfs.FS
	out        []string
	skipped    []string
	rootStrays []string
}

// isPartition is fsck's reading of layout's classification: a directory
// holding a partition's files is checked even when Open would refuse it
// for a directory inside (the check reports that), and one holding only a
// log's checkpoints (its segments gone) is checked so that what is missing
// is reported.
func isPartition(c layout.Contents) bool {
	if len(c.Partition) > 0 || c.Kind() == layout.DirLog {
		return true
	}
	for _, n := range c.Strays {
		if _, _, bad := layout.ParseSegmentFile(n); bad {
			return true // 123.log: a segment badly named, reported as such
		}
	}
	return false
}

// logDirLike reports whether a directory holds a file a Kafka log.dir or
// a seglog store keeps (a checkpoint, the lock, meta.properties): its
// empty "topic-N" subdirectories are partitions that have no segment yet
// (a store creates a new topic's partition directories empty).
func logDirLike(c layout.Contents) bool {
	return len(c.Shared) > 0 || slices.Contains(c.Strays, layout.MetaPropertiesFile)
}

// walk searches dir; inLogDir says its parent is a log.dir (logDirLike).
func (w *walker) walk(dir string, depth int, inLogDir bool) error {
	c, err := layout.ReadContents(w.fs, dir)
	if err != nil {
		return err
	}
	_, _, named := layout.KafkaPartition(dir)
	if isPartition(c) || (c.Kind() == layout.DirEmpty && named && inLogDir) {
		w.out = append(w.out, dir)
	} else if depth == 0 {
		w.rootStrays = c.Strays
	}
	if depth >= maxTreeDepth {
		return nil
	}
	for _, s := range c.Subdirs {
		p := filepath.Join(dir, s)
		if strings.HasPrefix(s, ".") && !(s == layout.ClusterMetadataDir && logDirLike(c)) {
			// A cluster node's metadata log is searched: fsck of a
			// node's DIR covers all of the node's state.
			w.skipped = append(w.skipped, p)
			continue
		}
		fi, err := vfs.Lstat(w.fs, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			w.skipped = append(w.skipped, p)
			continue
		}
		if err := w.walk(p, depth+1, logDirLike(c)); err != nil {
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
			if f, ok, _ := layout.ParseSegmentFile(n); ok && f.Temp == "" && f.Kind == layout.LogSuffix {
				if fi, err := fsys.Stat(filepath.Join(d, n)); err == nil {
					total += fi.Size()
				}
			}
		}
	}
	return total
}
