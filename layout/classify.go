package layout

import "strings"

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
