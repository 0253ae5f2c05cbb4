package layout

import (
	"errors"
	iofs "io/fs"
	"path/filepath"
	"strings"

	"github.com/seglog/seglog/vfs"
)

// Names of other files a Kafka partition directory holds, which a log
// directory may therefore contain.
const (
	// PartitionMetadataFile holds the partition's topic ID (KIP-516).
	PartitionMetadataFile = "partition.metadata"
	// LeaderEpochFile is the leader-epoch cache checkpoint.
	LeaderEpochFile = "leader-epoch-checkpoint"
)

// IsLogFile reports whether name belongs in a partition (log) directory:
// a segment file, a producer snapshot, a checkpoint, the clean-shutdown
// marker, the lock, Kafka's partition metadata and leader-epoch files, a
// quarantine file (IsQuarantine), or one of those being replaced (.tmp) or
// deleted.
func IsLogFile(name string) bool {
	if _, _, ok := ParseFileName(name); ok || IsQuarantine(name) {
		return true
	}
	switch strings.TrimSuffix(name, CheckpointTmpSuffix) {
	case RecoveryPointFile, LogStartOffsetFile, CleanerOffsetFile, CleanShutdownFile, LockFile,
		PartitionMetadataFile, LeaderEpochFile:
		return true
	}
	return false
}

// PartitionOnly reports whether name is a file only a partition directory
// holds: a segment's file (a .log, an index, a producer snapshot, or one of
// them being deleted, cleaned or swapped), partition.metadata or
// leader-epoch-checkpoint. The checkpoints, the clean-shutdown marker and
// the lock are a log's too, but a Kafka log.dir holds files of the same
// names, so they alone do not make a directory a log.
func PartitionOnly(name string) bool {
	if _, _, ok := ParseFileName(name); ok {
		return true
	}
	return name == PartitionMetadataFile || name == LeaderEpochFile
}

// segmentLike are the suffixes Kafka's loader acts on by name alone: it
// parses a base offset out of a name ending in one of the first five, and
// deletes or renames one ending in one of the last three.
var segmentLike = []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix, SnapshotSuffix, DeletedSuffix, CleanedSuffix, SwapSuffix}

// Misnamed reports whether name ends like a segment file but is not one
// (ParseFileName refuses it): "123.log", "server.log", "x.index.swap".
// Kafka's loader would fail to parse its offset, or delete or rename it,
// so unlike a stray file it is not harmless beside a log.
func Misnamed(name string) bool {
	if _, _, ok := ParseFileName(name); ok {
		return false
	}
	for _, suf := range segmentLike {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// DirKind is what a directory is, as far as logs are concerned: the one
// answer seglog.Open, the read-only view, package fsck and the seglog
// commands (consume, produce, clean, dump) give (Contents.Kind).
type DirKind uint8

const (
	// DirEmpty holds nothing, or only a lock file: a new log may be
	// created in it.
	DirEmpty DirKind = iota
	// DirLog is a log's directory: it holds a partition's files (with any
	// files that are not a log's beside them, which are ignored, as
	// Kafka's loader ignores them), or only files a log has (checkpoints,
	// the marker, the lock).
	DirLog
	// DirNotALog is anything else: a directory holding directories (a
	// Kafka log.dir, or a log with a directory inside, which Open refuses
	// rather than guess), files named like a segment's that are not one
	// (Misnamed), or only files that are not a log's. Nothing adopts it.
	DirNotALog
)

// String names the kind.
func (k DirKind) String() string {
	switch k {
	case DirEmpty:
		return "empty"
	case DirLog:
		return "log"
	}
	return "not a log"
}

// Contents is a directory's listing sorted by what a log makes of each
// entry.
type Contents struct {
	// Partition are the files only a partition directory holds
	// (PartitionOnly).
	Partition []string
	// Shared are the other log files (IsLogFile): checkpoints, their
	// .tmp files, the clean-shutdown marker, the lock.
	Shared []string
	// Strays are the files that are not a log's (notes.txt, .DS_Store,
	// meta.properties), and not Misnamed: Kafka's loader ignores them.
	Strays []string
	// Misnamed are the files named like a segment's that are not one
	// (Misnamed).
	Misnamed []string
	// Subdirs are the directories, hidden ones included.
	Subdirs []string
}

// Kind classifies the directory (see DirKind).
func (c Contents) Kind() DirKind {
	switch {
	case len(c.Subdirs) > 0 || len(c.Misnamed) > 0:
		return DirNotALog
	case len(c.Partition) > 0:
		return DirLog
	case len(c.Strays) > 0:
		return DirNotALog
	case len(c.Shared) == 0 || (len(c.Shared) == 1 && c.Shared[0] == LockFile):
		return DirEmpty
	}
	return DirLog
}

// ReadContents lists dir and classifies its entries (Classify). A missing
// dir returns an error matching fs.ErrNotExist.
func ReadContents(fs vfs.FS, dir string) (Contents, error) {
	names, err := fs.List(dir)
	if err != nil {
		return Contents{}, err
	}
	return Classify(fs, dir, names)
}

// Classify sorts names, a listing of dir, into Contents. Log files are
// classified by name alone, so a log of thousands of segments costs no
// stat call; only the other names are looked at, to tell directories from
// files (an entry that vanished since the listing, or a dangling link, is
// left out).
func Classify(fs vfs.FS, dir string, names []string) (Contents, error) {
	var c Contents
	for _, n := range names {
		switch {
		case PartitionOnly(n):
			c.Partition = append(c.Partition, n)
			continue
		case IsLogFile(n):
			c.Shared = append(c.Shared, n)
			continue
		}
		fi, err := fs.Stat(filepath.Join(dir, n))
		switch {
		case errors.Is(err, iofs.ErrNotExist):
		case err != nil:
			return c, err
		case fi.IsDir():
			c.Subdirs = append(c.Subdirs, n)
		case Misnamed(n):
			c.Misnamed = append(c.Misnamed, n)
		default:
			c.Strays = append(c.Strays, n)
		}
	}
	return c, nil
}
