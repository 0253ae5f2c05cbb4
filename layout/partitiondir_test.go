package layout

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestParsePartitionDir pins Kafka's LocalLog.parseTopicPartitionName, the
// one topic-N rule: the partition after the last '-', the renamed
// directories' shapes, and what its loader refuses.
func TestParsePartitionDir(t *testing.T) {
	for _, c := range []struct {
		name   string
		ok     bool
		topic  string
		part   int32
		suffix string
	}{
		{"orders-0", true, "orders", 0, ""},
		{"t-x-3", true, "t-x", 3, ""},
		{"__consumer_offsets-49", true, "__consumer_offsets", 49, ""},
		{"a--1", true, "a-", 1, ""},
		{"t-007", true, "t", 7, ""}, // Integer.parseInt takes leading zeros
		{"t-+5", true, "t", 5, ""},  // and a '+'
		{"t-2147483647", true, "t", 2147483647, ""},
		{"t-2147483648", false, "", 0, ""},
		{"t-", false, "", 0, ""},
		{"-3", false, "", 0, ""},
		{"log", false, "", 0, ""},
		{"t-x", false, "", 0, ""},
		{"t-1.5", false, "", 0, ""},
		{"", false, "", 0, ""},
		{"orders-2.7a9f-future", true, "orders", 2, FutureDirSuffix},
		{"old-0.5b1e4c3d-delete", true, "old", 0, DeleteDirSuffix},
		{"t-x-3.abc-stray", true, "t-x", 3, StrayDirSuffix},
		{"a-b.c.d-delete", false, "", 0, ""}, // "a-b.c": partition "b.c"
		{"t-0.a b-delete", false, "", 0, ""},
		{"t-0.-delete", false, "", 0, ""},
		{"t-0-delete", false, "", 0, ""},
		{"mydata-delete", false, "", 0, ""},
		{"t.0-delete", false, "", 0, ""},
		{"-0.x-delete", false, "", 0, ""},
	} {
		d, ok := ParsePartitionDir(c.name)
		if ok != c.ok || d.Topic != c.topic || d.Partition != c.part || d.Suffix != c.suffix {
			t.Errorf("ParsePartitionDir(%q) = %+v, %v; want %q %d %q, %v", c.name, d, ok, c.topic, c.part, c.suffix, c.ok)
		}
	}
}

// TestCheckpointName: the entry a log's own checkpoints hold.
func TestCheckpointName(t *testing.T) {
	for dir, want := range map[string]string{
		"/data/events-3/": "events 3", "/data/events": "events 0", "/data/t-0.x-delete": "t-0.x-delete 0",
		"/data/a b": "log 0", "/": "/ 0",
	} {
		topic, part := CheckpointName(dir)
		if got := topic + " " + strconv.Itoa(int(part)); got != want {
			t.Errorf("CheckpointName(%q) = %q, want %q", dir, got, want)
		}
	}
}

// kafkaRenamed is Kafka's DeleteDirPattern (and the future and stray
// ones) without the suffix; Java's \S also excludes \v, Go's does not.
var kafkaRenamed = regexp.MustCompile(`^([^ \t\n\v\f\r]+)-([^ \t\n\v\f\r]+)\.([^ \t\n\v\f\r]+)$`)

// FuzzParsePartitionDir checks ParsePartitionDir against a transcription
// of Kafka's parseTopicPartitionName (its patterns as regular expressions),
// and that a live partition's name round-trips through PartitionDirName.
func FuzzParsePartitionDir(f *testing.F) {
	for _, s := range []string{"orders-0", "t-x-3", "t-007", "a-b.c.d-delete", "orders-2.7a9f-future", "t-0.a b-stray", "-0.x-delete", "t--1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		d, ok := ParsePartitionDir(name)
		wantOK, topic, part, suffix := kafkaParse(name)
		if ok != wantOK || ok && (d.Topic != topic || d.Partition != part || d.Suffix != suffix) {
			t.Fatalf("ParsePartitionDir(%q) = %+v, %v; Kafka: %q %d %q, %v", name, d, ok, topic, part, suffix, wantOK)
		}
		if ok && d.Suffix == "" {
			again, ok := ParsePartitionDir(PartitionDirName(d.Topic, d.Partition))
			if !ok || again != d {
				t.Fatalf("%q: %+v does not round-trip: %+v, %v", name, d, again, ok)
			}
		}
	})
}

// kafkaParse is parseTopicPartitionName as Kafka writes it.
func kafkaParse(name string) (ok bool, topic string, part int32, suffix string) {
	if name == "" || !strings.Contains(name, "-") {
		return false, "", 0, ""
	}
	for _, s := range []string{DeleteDirSuffix, FutureDirSuffix, StrayDirSuffix} {
		if strings.HasSuffix(name, s) {
			if !kafkaRenamed.MatchString(strings.TrimSuffix(name, s)) {
				return false, "", 0, ""
			}
			suffix = s
			name = name[:strings.LastIndex(name, ".")]
			break
		}
	}
	i := strings.LastIndex(name, "-")
	if i < 0 || name[:i] == "" || name[i+1:] == "" {
		return false, "", 0, ""
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return false, "", 0, ""
	}
	return true, name[:i], int32(p), suffix
}
