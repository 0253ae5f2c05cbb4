package fsck

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// allSynced is the recovery point of a log whose every batch is known to
// be synced (a clean-shutdown marker, or a checkpoint that cannot be read).
const allSynced = math.MaxInt64

// recoveryPoint finds the log's recovery point as the Log's Open finds
// it:
//
//   - a clean-shutdown marker in the directory: every batch was synced;
//   - else the directory's own recovery-point-offset-checkpoint, when it
//     has an entry for this log (the one naming the partition, or its
//     single entry);
//   - else, for a Kafka partition directory ("topic-N"), the line for this
//     partition in the parent log.dir's checkpoint, with the log.dir's
//     clean-shutdown marker meaning every batch was synced;
//   - else 0: nothing is known to be synced (Kafka's rule).
//
// Where Open would fail (a checkpoint that cannot be read or parsed), the
// recovery point is unknown, and unknown counts as everything synced: the
// rule repair follows is "never cut what may have been synced".
func (c *checker) recoveryPoint() (rp int64, source string) {
	if c.present[layout.CleanShutdownFile] {
		return allSynced, "(a clean-shutdown marker: every batch was synced)"
	}
	unknown := func(name string) (int64, string) {
		return allSynced, "(" + name + " cannot be read: every batch counts as synced)"
	}
	topic, part, tpOK := topicPartition(c.dir)
	if c.present[layout.RecoveryPointFile] {
		off, ok, err := c.checkpointEntry(c.path(layout.RecoveryPointFile), topic, part, true, true)
		if err != nil {
			return unknown(layout.RecoveryPointFile)
		}
		if ok {
			return off, fmt.Sprintf("%d (%s)", off, layout.RecoveryPointFile)
		}
	}
	if tpOK {
		parent := filepath.Join(c.dir, "..", layout.RecoveryPointFile)
		if _, err := c.fs.Stat(parent); err == nil {
			off, ok, err := c.checkpointEntry(parent, topic, part, true, false)
			if err != nil {
				return unknown("../" + layout.RecoveryPointFile)
			}
			if ok {
				if _, err := c.fs.Stat(filepath.Join(c.dir, "..", layout.CleanShutdownFile)); err == nil {
					return allSynced, "(the log.dir's clean-shutdown marker: every batch was synced)"
				}
				return off, fmt.Sprintf("%d (../%s)", off, layout.RecoveryPointFile)
			}
		}
	}
	return 0, "0 (no recovery-point checkpoint)"
}

// checkpointEntry returns the offset of this log's entry in the offset
// checkpoint at path: the line naming topic and partition (when tpOK), or,
// in the log's own directory (inDir), a single entry whatever its name.
func (c *checker) checkpointEntry(path, topic string, part int64, tpOK, inDir bool) (int64, bool, error) {
	data, err := vfs.ReadFileLimit(c.fs, path, maxCheckpointFile)
	if err != nil {
		return 0, false, err
	}
	es, err := layout.ParseCheckpoint(path, data)
	if err != nil {
		return 0, false, err
	}
	if !tpOK {
		topic = "" // no line names a directory that is not Kafka's topic-N
	}
	if i := layout.Lookup(es, topic, int32(part), inDir); i >= 0 {
		return es[i].Offset, true, nil
	}
	return 0, false, nil
}

// belowRecoveryPoint reports whether damage d lies in data the log had
// synced: the offset it would start at is below the recovery point, where
// the Log's load plan calls it corruption rather than a torn tail.
func (c *checker) belowRecoveryPoint(d damageRef) bool { return !c.plan.Torn(d.nextBefore) }

// checkpointedLogStart is the log start offset as the Log's Open reads it:
// the directory's own log-start-offset-checkpoint entry, else for a Kafka
// partition directory its line in the log.dir's file; 0 when there is
// none or it cannot be read. Offsets below it were deleted (DeleteRecords,
// retention), so a gap there is not missing data.
func (c *checker) checkpointedLogStart() int64 {
	topic, part, tpOK := topicPartition(c.dir)
	if c.present[layout.LogStartOffsetFile] {
		if off, ok, err := c.checkpointEntry(c.path(layout.LogStartOffsetFile), topic, part, true, true); err == nil && ok {
			return max(off, 0)
		}
		return 0
	}
	if tpOK {
		if off, ok, err := c.checkpointEntry(filepath.Join(c.dir, "..", layout.LogStartOffsetFile), topic, part, true, false); err == nil && ok {
			return max(off, 0)
		}
	}
	return 0
}

// hasCleanerCheckpoint is layout.Compacted, the project's one rule for "this
// log has been compacted" (its gaps are legitimate). A checkpoint that
// cannot be read counts as compacted: fsck claims missing data only where
// it is sure.
func (c *checker) hasCleanerCheckpoint() bool {
	compacted, err := layout.Compacted(c.fs, c.dir)
	return compacted || err != nil
}
