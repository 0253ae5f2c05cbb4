package layout

import (
	"bytes"
	"errors"
	iofs "io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/seglog/seglog/vfs"
)

// Files a Kafka log.dir (a broker's data directory, or a seglog store,
// package store) keeps beside its partition directories.
const (
	// TopicConfigSuffix names a store's topic config file in its log.dir:
	// "<topic>.seglog-topic".
	TopicConfigSuffix = ".seglog-topic"
	// MetaPropertiesFile is a broker's (and seglog serve's) node and
	// cluster ids.
	MetaPropertiesFile = "meta.properties"
	// ReplicationOffsetFile is a broker's high-watermark checkpoint.
	ReplicationOffsetFile = "replication-offset-checkpoint"
	// ClusterNodeDir is the hidden directory a cluster node (seglog
	// serve --voters) keeps in its log.dir for its own records, made at
	// its first start before any replica is written. It marks the
	// log.dir as a cluster node's: its partitions are replicas, written
	// only through the cluster's raft groups.
	ClusterNodeDir = ".cluster_node"
	// ClusterMetadataDir is the hidden directory in a cluster node's
	// log.dir holding the cluster's metadata raft log (a partition
	// directory "raft-0" inside it) and its snapshots. Hidden, so that a
	// store does not take it for a topic; fsck searches it all the same
	// in a log.dir, being the node's state too.
	ClusterMetadataDir = ".cluster_metadata"
	// RaftLogPartition is the partition directory inside a raft log
	// store's directory (package raftlog), named as Kafka names
	// partition 0 of a topic "raft".
	RaftLogPartition = "raft-0"
	// RaftStableFile is a raft log store's term and vote beside its
	// partition, as KRaft's quorum-state file is.
	RaftStableFile = "quorum-state"
)

// IsLogDirFile reports a file that a broker or a store keeps in its
// log.dir: the offset checkpoints (one line per partition) and their
// temporary files, the clean-shutdown marker, the lock, meta.properties,
// a KRaft bootstrap checkpoint and a store's topic config files. A
// standalone log keeps some of the same names inside its own directory.
func IsLogDirFile(name string) bool {
	if strings.HasSuffix(name, TopicConfigSuffix) {
		return true
	}
	switch strings.TrimSuffix(name, CheckpointTmpSuffix) {
	case RecoveryPointFile, LogStartOffsetFile, CleanerOffsetFile,
		CleanShutdownFile, LockFile, MetaPropertiesFile, ReplicationOffsetFile, "bootstrap.checkpoint":
		return true
	}
	return false
}

// logDirMarks are the files whose presence in a directory's parent makes
// the parent a log.dir: what a broker writes at startup (meta.properties)
// and what a store or a broker keeps with one line per partition. The
// lock and the marker are not among them: a standalone log has them too.
var logDirMarks = []string{MetaPropertiesFile, RecoveryPointFile, LogStartOffsetFile, CleanerOffsetFile, ReplicationOffsetFile}

// IsLogDir reports whether dir is a log.dir (a store or a broker's data
// directory): it holds a store's topic config file or one of the files a
// broker or a store keeps there (meta.properties, the offset
// checkpoints), and no segment file of its own (a standalone log keeps
// checkpoints of the same names). Only names are looked at.
func IsLogDir(fs vfs.FS, dir string) (bool, error) {
	names, err := fs.List(dir)
	if err != nil {
		return false, err
	}
	marked := false
	for _, n := range names {
		if _, _, ok := ParseFileName(n); ok {
			return false, nil
		}
		if strings.HasSuffix(n, TopicConfigSuffix) || slices.Contains(logDirMarks, n) {
			marked = true
		}
	}
	return marked, nil
}

// PartitionLogDir reports whether dir is a partition directory of a
// log.dir: its name is Kafka's "topic-N" and its parent holds the topic's
// store config file or one of the files a broker or a store keeps in its
// log.dir (meta.properties, the offset checkpoints). Such a directory's
// recovery point, log start and clean-shutdown marker are the log.dir's,
// and it is written only by whoever holds the log.dir's lock. It returns
// the log.dir, the topic and the partition. Only the parent's entries are
// looked at (a few Stat calls): nothing is read or written.
func PartitionLogDir(fs vfs.FS, dir string) (logDir, topic string, partition int32, ok bool, err error) {
	if b := filepath.Base(filepath.Clean(dir)); b == "." || b == ".." {
		// "." names the partition by the working directory's name, and
		// its log.dir is the working directory's parent.
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	topic, partition, ok = KafkaPartition(dir)
	if !ok {
		return "", "", 0, false, nil
	}
	parent := filepath.Dir(filepath.Clean(dir))
	for _, n := range append([]string{topic + TopicConfigSuffix}, logDirMarks...) {
		_, err := fs.Stat(filepath.Join(parent, n))
		if err == nil {
			return parent, topic, partition, true, nil
		}
		if !errors.Is(err, iofs.ErrNotExist) {
			return "", "", 0, false, err
		}
	}
	return "", "", 0, false, nil
}

// Holder is who holds a log.dir's lock. Its holder writes it into the
// lock file (LockFile; vfs.Lock.SetOwner) once the lock is taken, and
// whoever the lock turns away reads it (vfs.HeldError.Owner), so that a
// refusal names the process to stop, or to go through: a server's
// Listener takes the same work as a Kafka client.
type Holder struct {
	// Command is the program and its command, "seglog serve".
	Command string
	// PID is the holder's process id.
	PID int
	// Listener is the host:port of the Kafka listener serving the
	// log.dir's partitions, when the holder is a server.
	Listener string
	// Brief says the holder keeps the lock for one short operation (a
	// consumer's commit): whoever it turns away may try again shortly
	// rather than give up.
	Brief bool
}

// Format renders h as the lock file holds it: "key=value" lines.
func (h Holder) Format() []byte {
	clean := strings.NewReplacer("\n", " ", "\r", " ").Replace // one line per key
	var b bytes.Buffer
	b.WriteString("command=" + clean(h.Command) + "\n")
	b.WriteString("pid=" + strconv.Itoa(h.PID) + "\n")
	if h.Listener != "" {
		b.WriteString("listener=" + clean(h.Listener) + "\n")
	}
	if h.Brief {
		b.WriteString("brief=true\n")
	}
	return b.Bytes()
}

// ParseHolder reads a lock file's contents (Format). ok is false when
// they say nothing of a holder: an empty file (released, or a holder that
// writes nothing, such as a Kafka broker), or someone else's format.
func ParseHolder(data []byte) (h Holder, ok bool) {
	for line := range strings.SplitSeq(string(data), "\n") {
		k, v, found := strings.Cut(line, "=")
		if !found {
			continue
		}
		switch k {
		case "command":
			h.Command = v
		case "pid":
			h.PID, _ = strconv.Atoi(v)
		case "listener":
			h.Listener = v
		case "brief":
			h.Brief = v == "true"
		}
	}
	return h, h.Command != "" || h.PID > 0
}

// String names the holder for an error message:
// "`seglog serve` (pid 4242, listening on 127.0.0.1:9092)".
func (h Holder) String() string {
	if h.Command == "" && h.PID <= 0 {
		return "another process (its lock file does not say which)"
	}
	cmd := h.Command
	if cmd == "" {
		cmd = "a process"
	} else {
		cmd = "`" + cmd + "`"
	}
	var details []string
	if h.PID > 0 {
		details = append(details, "pid "+strconv.Itoa(h.PID))
	}
	if h.Listener != "" {
		details = append(details, "listening on "+h.Listener)
	}
	if h.Brief {
		details = append(details, "for a moment")
	}
	if len(details) == 0 {
		return cmd
	}
	return cmd + " (" + strings.Join(details, ", ") + ")"
}
