package fsck

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/seglog/seglog/vfs"
)

// allSynced is the recovery point of a log whose every batch is known to
// be synced (a clean-shutdown marker, or a checkpoint that cannot be read).
const allSynced = math.MaxInt64

// recoveryPoint finds where the log's recovery point is, as the Log's Open
// finds it: with a clean-shutdown marker (in the directory, or in the
// parent log.dir of a Kafka partition directory) every batch was synced;
// otherwise the offset in recovery-point-offset-checkpoint, seglog's own
// in the directory (its single entry, or the one naming this partition)
// and a Kafka log.dir's line for this partition in the parent; both being
// present, the higher is taken. Without either the recovery point is 0,
// as for Kafka. A checkpoint that exists but cannot be read or parsed
// leaves the recovery point unknown, and unknown is treated as
// everything synced: the rule repair follows is "never cut what may have
// been synced".
func (c *checker) recoveryPoint() (rp int64, source string) {
	if c.clean {
		return allSynced, "(a clean-shutdown marker: every batch was synced)"
	}
	rp, source = 0, "0 (no recovery-point checkpoint)"
	topic, part, tpOK := topicPartition(c.dir)
	try := func(name, path string, inDir bool) bool {
		if _, err := c.fs.Stat(path); err != nil {
			return true // absent
		}
		data, err := vfs.ReadFileLimit(c.fs, path, maxCheckpointFile)
		if err != nil {
			return false
		}
		lines, _, err := parseCheckpoint(data, 3)
		if err != nil {
			return false
		}
		for i, l := range lines {
			mine := tpOK && l.fields[0] == topic && l.fields[1] == strconv.FormatInt(part, 10)
			if mine || (inDir && len(lines) == 1 && i == 0) {
				off, _ := strconv.ParseInt(l.fields[2], 10, 64)
				if off >= rp {
					rp, source = off, fmt.Sprintf("%d (%s)", off, name)
				}
				break
			}
		}
		return true
	}
	if !try(recoveryPointFile, c.path(recoveryPointFile), true) {
		return allSynced, "(" + recoveryPointFile + " cannot be read: every batch counts as synced)"
	}
	if tpOK && !try("../"+recoveryPointFile, filepath.Join(c.dir, "..", recoveryPointFile), false) {
		return allSynced, "(../" + recoveryPointFile + " cannot be read: every batch counts as synced)"
	}
	return rp, source
}

// belowRecoveryPoint reports whether damage d lies in data the log had
// synced: the offset it would start at is below the recovery point.
func (c *checker) belowRecoveryPoint(d damageRef) bool { return d.nextBefore < c.rp }
