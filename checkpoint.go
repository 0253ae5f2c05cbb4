package seglog

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/seglog/seglog/internal/loadplan"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// Checkpoint and marker file names, as Kafka names them (package layout).
// Kafka keeps the offset checkpoints once per log directory with one line
// per partition; a seglog Log owns exactly one partition directory, so it
// keeps them inside that directory with a single entry (docs/format.md),
// and reads a Kafka log.dir's lines for its own partition.
const (
	RecoveryPointFile   = layout.RecoveryPointFile
	LogStartOffsetFile  = layout.LogStartOffsetFile
	CleanShutdownFile   = layout.CleanShutdownFile
	LockFile            = layout.LockFile
	checkpointTmpSuffix = layout.CheckpointTmpSuffix
)

// ErrBadCheckpoint reports a checkpoint file that does not parse
// (layout.ErrBadCheckpoint, whose package reads and writes checkpoints).
var ErrBadCheckpoint = layout.ErrBadCheckpoint

// readOffsetCheckpoint returns the offset recorded for this log's partition
// in a checkpoint file, or ok=false when the file is missing or has no entry
// for it.
func readOffsetCheckpoint(fs vfs.FS, dir, name string) (off int64, ok bool, err error) {
	entries, err := layout.ReadCheckpoint(fs, filepath.Join(dir, name))
	if err != nil {
		if isNotExist(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	topic, part := layout.CheckpointName(dir)
	if i := layout.Lookup(entries, topic, part, true); i >= 0 {
		return entries[i].Offset, true, nil
	}
	return 0, false, nil
}

func writeOffsetCheckpoint(fs vfs.FS, dir, name string, off int64) error {
	topic, part := layout.CheckpointName(dir)
	return layout.WriteCheckpoint(fs, filepath.Join(dir, name), []layout.CheckpointEntry{{Topic: topic, Partition: part, Offset: off}})
}

// dirState is what a directory's checkpoints and marker say about the last
// shutdown.
type dirState struct {
	loadplan.State
	// logStartFile is the checkpoint file logStart was read from, ""
	// when a Checkpointer keeps it.
	logStartFile string
}

// readDirState reads the recovery point, the log start offset and the
// clean-shutdown marker. A partition directory of a log.dir (a store's or
// a broker's, layout.PartitionLogDir) keeps them in the log.dir, one line
// per partition and one marker for all: those are read, and any files of
// the directory's own (left by an older seglog that opened it alone) are
// not, so that every reader agrees with the store that writes the
// log.dir's. Only a read-only Log gets here for such a directory: a
// writable Open refuses it (refuseInLogDir). names is the directory's
// listing.
func readDirState(fs vfs.FS, dir string, names []string) (dirState, error) {
	var st dirState
	logDir, topic, part, inLogDir, err := layout.PartitionLogDir(fs, dir)
	if err != nil {
		return st, err
	}
	if inLogDir {
		if st.RecoveryPoint, _, err = layout.PartitionOffset(fs, filepath.Join(logDir, RecoveryPointFile), topic, part); err != nil {
			return st, err
		}
		path := filepath.Join(logDir, LogStartOffsetFile)
		if st.LogStart, st.HaveLogStart, err = layout.PartitionOffset(fs, path, topic, part); err != nil {
			return st, err
		}
		if st.HaveLogStart {
			st.logStartFile = path
		}
		if _, err := fs.Stat(filepath.Join(logDir, CleanShutdownFile)); err == nil {
			st.Clean = true
		} else if !isNotExist(err) {
			return st, err
		}
		return st, nil
	}
	st.OwnMarker = slices.Contains(names, CleanShutdownFile)
	st.Clean = st.OwnMarker
	if st.RecoveryPoint, _, err = readOffsetCheckpoint(fs, dir, RecoveryPointFile); err != nil {
		return st, err
	}
	if st.LogStart, st.HaveLogStart, err = readOffsetCheckpoint(fs, dir, LogStartOffsetFile); err != nil {
		return st, err
	}
	if st.HaveLogStart {
		st.logStartFile = filepath.Join(dir, LogStartOffsetFile)
	}
	return st, nil
}

// ErrLogStartBeyondEnd: the log-start-offset checkpoint names an offset
// past the end of the log's segments. It is an inconsistency, never a
// reason to delete segments (Kafka's loader deletes them all): Open, read-only
// or not, fails with a *LogStartError and deletes nothing. No crash can
// produce it (DeleteBefore makes the records below the new start durable
// before it writes the checkpoint); segments removed or emptied behind the
// log's back, or a checkpoint edited or copied from elsewhere, can. Run
// seglog fsck to see the segments, and correct the checkpoint (or restore
// the missing segments) once you know which is wrong.
var ErrLogStartBeyondEnd = errors.New("seglog: the log start offset checkpoint is beyond the end of the log")

// LogStartError reports a log-start-offset checkpoint beyond the end of the
// log (errors.Is(err, ErrLogStartBeyondEnd)): File is the checkpoint file
// ("" when the Log belongs to a store, which keeps the checkpoint in its
// log.dir's file), LogStart the offset it holds for this log, End the offset
// after the last record the segments hold.
type LogStartError struct {
	Dir      string
	File     string
	LogStart int64
	End      int64
}

// Error says which checkpoint names which start, and where the segments end.
func (e *LogStartError) Error() string {
	src := e.File
	if src == "" {
		src = "the store's " + LogStartOffsetFile + " (in its log.dir)"
	}
	return fmt.Sprintf("%v: %s says the log in %s starts at offset %d, but its segments end at offset %d; nothing was deleted (run seglog fsck %s)",
		ErrLogStartBeyondEnd, src, e.Dir, e.LogStart, e.End, e.Dir)
}

// Unwrap makes errors.Is(err, ErrLogStartBeyondEnd) hold.
func (e *LogStartError) Unwrap() error { return ErrLogStartBeyondEnd }

// logStartBeyond returns the error for a log-start checkpoint beyond end,
// nil if there is none.
func (st dirState) logStartBeyond(dir string, end int64) error {
	if !st.HaveLogStart || st.LogStart <= end {
		return nil
	}
	return &LogStartError{Dir: dir, File: st.logStartFile, LogStart: st.LogStart, End: end}
}
