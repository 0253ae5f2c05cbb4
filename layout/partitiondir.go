package layout

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Suffixes Kafka ends a renamed partition directory with, after a dot and
// a unique id: "topic-N.<uuid>-delete" (LocalLog.logDeleteDirName), a
// future replica being moved between log.dirs, a stray partition (KRaft).
const (
	DeleteDirSuffix = "-delete"
	FutureDirSuffix = "-future"
	StrayDirSuffix  = "-stray"
)

// PartitionDir is a partition directory's name, parsed.
type PartitionDir struct {
	Topic     string
	Partition int32
	// Suffix is "" for a live partition, else DeleteDirSuffix,
	// FutureDirSuffix or StrayDirSuffix.
	Suffix string
}

// ParsePartitionDir parses the name of a partition directory (a base name,
// not a path) as Kafka's LocalLog.parseTopicPartitionName does, the one
// rule every package uses: a topic name may itself hold '-', so the
// partition is the decimal number after the last '-' (with an optional
// '+', leading zeros allowed, within int32; Java's Integer.parseInt also
// takes non-ASCII digits, which no topic name holds), and the topic, before
// it, is not empty. A name ending in DeleteDirSuffix, FutureDirSuffix or
// StrayDirSuffix must have Kafka's shape for it, "topic-N.<id><suffix>"
// with no white space, and parses as the "topic-N" before the last '.'.
// Anything else yields ok = false, where Kafka's loader refuses to start.
func ParsePartitionDir(name string) (d PartitionDir, ok bool) {
	for _, suf := range []string{DeleteDirSuffix, FutureDirSuffix, StrayDirSuffix} {
		if !strings.HasSuffix(name, suf) {
			continue
		}
		if !renamedShape(strings.TrimSuffix(name, suf)) {
			return PartitionDir{}, false
		}
		d.Suffix = suf
		name = name[:strings.LastIndexByte(name, '.')]
		break
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return PartitionDir{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return PartitionDir{}, false
	}
	d.Topic, d.Partition = name[:i], int32(p)
	return d, true
}

// renamedShape reports whether body (a renamed directory's name without
// its suffix) matches Kafka's `(\S+)-(\S+)\.(\S+)`: no white space, and a
// '-' not first followed, one byte or more later, by a '.' not last.
func renamedShape(body string) bool {
	if strings.ContainsAny(body, " \t\n\v\f\r") {
		return false
	}
	i := strings.IndexByte(body, '-')
	if i == 0 {
		i = strings.IndexByte(body[1:], '-') + 1
	}
	if i <= 0 || i+2 > len(body)-1 {
		return false
	}
	return strings.IndexByte(body[i+2:len(body)-1], '.') >= 0
}

// PartitionDirName is the name Kafka gives the directory of a topic's
// partition, "topic-N".
func PartitionDirName(topic string, partition int32) string {
	return topic + "-" + strconv.Itoa(int(partition))
}

// KafkaPartition parses the name of a live partition directory, "topic-N"
// (ParsePartitionDir with no suffix), from a path to it.
func KafkaPartition(dir string) (topic string, partition int32, ok bool) {
	d, ok := ParsePartitionDir(filepath.Base(filepath.Clean(dir)))
	if !ok || d.Suffix != "" {
		return "", 0, false
	}
	return d.Topic, d.Partition, true
}

// CheckpointName is the topic and partition of the single entry a log
// keeps in the checkpoints in its own directory: Kafka's "topic-N" when the
// directory is so named, else the directory's name and partition 0, or
// "log" for a name a checkpoint line cannot hold (empty, or with white
// space). The Log writes its entries with it and fsck --repair rewrites
// them with it.
func CheckpointName(dir string) (topic string, partition int32) {
	if topic, partition, ok := KafkaPartition(dir); ok {
		return topic, partition
	}
	name := filepath.Base(filepath.Clean(dir))
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return "log", 0
	}
	return name, 0
}
