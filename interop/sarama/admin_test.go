package sarama

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/IBM/sarama"
)

// topicDescription is what `seglog topics describe DIR TOPIC` prints.
type topicDescription struct {
	partitions int
	configs    map[string]string
	sources    map[string]string // each config's source, when the CLI prints it
	start      map[int32]int64   // per partition, the log start offset
}

var (
	describeHead   = regexp.MustCompile(`(?m)^Topic: (\S+)\tPartitionCount: (\d+)\tConfigs: (.*)$`)
	describeConfig = regexp.MustCompile(`(?m)^([a-z][a-z0-9.]*)\s+(\S+)\s+([A-Z_]+)$`)
	describePart   = regexp.MustCompile(`(?m)^(\d+)\s+(\d+)\s+(\d+)\s`)
)

// kafkaSources names sarama's config sources as Kafka (and seglog topics
// describe) spell them.
var kafkaSources = map[sarama.ConfigSource]string{
	sarama.SourceUnknown: "UNKNOWN", sarama.SourceTopic: "DYNAMIC_TOPIC_CONFIG",
	sarama.SourceDynamicBroker: "DYNAMIC_BROKER_CONFIG", sarama.SourceDynamicDefaultBroker: "DYNAMIC_DEFAULT_BROKER_CONFIG",
	sarama.SourceStaticBroker: "STATIC_BROKER_CONFIG", sarama.SourceDefault: "DEFAULT_CONFIG",
}

// describeTopic reads a topic's partition count, configs and start offsets
// with `seglog topics describe`, read-only beside the running server.
func describeTopic(t *testing.T, dir, topic string) topicDescription {
	t.Helper()
	out := seglog(t, "topics", "describe", dir, topic)
	h := describeHead.FindStringSubmatch(out)
	if h == nil || h[1] != topic {
		t.Fatalf("seglog topics describe %s %s:\n%s", dir, topic, out)
	}
	d := topicDescription{configs: map[string]string{}, sources: map[string]string{}, start: map[int32]int64{}}
	d.partitions, _ = strconv.Atoi(h[2])
	// Every config with its source in a CONFIG VALUE SOURCE table, the
	// Configs: field holding those set on the topic; or, from a seglog
	// that prints no table, every config in the Configs: field.
	if rows := describeConfig.FindAllStringSubmatch(out, -1); len(rows) > 0 {
		for _, m := range rows {
			d.configs[m[1]], d.sources[m[1]] = m[2], m[3]
		}
	} else if h[3] != "" {
		for kv := range strings.SplitSeq(h[3], ",") {
			k, v, _ := strings.Cut(kv, "=")
			d.configs[k] = v
		}
	}
	for _, m := range describePart.FindAllStringSubmatch(out, -1) {
		p, _ := strconv.ParseInt(m[1], 10, 32)
		s, _ := strconv.ParseInt(m[2], 10, 64)
		d.start[int32(p)] = s
	}
	return d
}

// TestClusterAdmin calls each ClusterAdmin method of issue 27 once, each
// within sarama's default timeouts (Admin.Timeout 3s, Net 30s), and reads
// back what it reports or changed with the seglog CLI. The calls are
// subtests so that one the server cannot serve fails alone and the others
// still run.
func TestClusterAdmin(t *testing.T) {
	dir := t.TempDir()
	const topic, group = "sarama-admin", "sarama-admin-g"
	srv := startServer(t, dir)
	createTopic(t, srv.addr, topic, 2)
	want := records(topic, 10)
	produce(t, newConfig(), srv.addr, topic, 0, want)
	consumeGroup(t, srv.addr, group, topic, len(want), nil)

	admin, err := sarama.NewClusterAdmin([]string{srv.addr}, newConfig())
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer admin.Close()

	t.Run("ListTopics", func(t *testing.T) {
		topics, err := admin.ListTopics()
		if err != nil {
			t.Fatalf("ListTopics: %v", err)
		}
		d, ok := topics[topic]
		if !ok {
			t.Fatalf("ListTopics lists no %s: %v", topic, topics)
		}
		if cli := describeTopic(t, dir, topic); int(d.NumPartitions) != cli.partitions || d.ReplicationFactor != 1 {
			t.Fatalf("ListTopics: %s has %d partitions, replication factor %d; seglog topics describe: %d partitions", topic, d.NumPartitions, d.ReplicationFactor, cli.partitions)
		}
	})

	t.Run("DescribeTopics", func(t *testing.T) {
		md, err := admin.DescribeTopics([]string{topic})
		if err != nil {
			t.Fatalf("DescribeTopics: %v", err)
		}
		if len(md) != 1 || md[0].Name != topic || md[0].Err != sarama.ErrNoError {
			t.Fatalf("DescribeTopics: %+v", md)
		}
		if cli := describeTopic(t, dir, topic); len(md[0].Partitions) != cli.partitions {
			t.Fatalf("DescribeTopics: %d partitions; seglog topics describe: %d", len(md[0].Partitions), cli.partitions)
		}
	})

	t.Run("DescribeConfig", func(t *testing.T) {
		//lint:ignore SA1019 issue 27 names DescribeConfig: the one-resource call tools still make
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
		if err != nil {
			t.Fatalf("DescribeConfig: %v", err)
		}
		got := map[string]sarama.ConfigEntry{}
		for _, e := range entries {
			got[e.Name] = e
		}
		// Every config seglog topics describe prints is described with the
		// same value and source; none is set on the topic.
		cli := describeTopic(t, dir, topic)
		if len(cli.configs) == 0 {
			t.Fatalf("seglog topics describe %s lists no config", topic)
		}
		for k, v := range cli.configs {
			e, ok := got[k]
			if !ok {
				t.Errorf("DescribeConfig has no %s (seglog topics describe: %s)", k, v)
				continue
			}
			if e.Value != v {
				t.Errorf("DescribeConfig: %s=%s; seglog topics describe: %s", k, e.Value, v)
			}
			if src, ok := cli.sources[k]; ok && kafkaSources[e.Source] != src {
				t.Errorf("DescribeConfig: %s from %s; seglog topics describe: %s", k, kafkaSources[e.Source], src)
			}
			if e.Source == sarama.SourceTopic {
				t.Errorf("DescribeConfig: %s is a topic override; nothing set it", k)
			}
		}
		if got["retention.ms"].Value != "604800000" {
			t.Errorf("DescribeConfig: retention.ms=%q, want Kafka's default 604800000", got["retention.ms"].Value)
		}
	})

	t.Run("AlterConfig", func(t *testing.T) {
		hour := "3600000"
		if err := admin.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &hour}, false); err != nil {
			t.Fatalf("AlterConfig: %v", err)
		}
		cli := describeTopic(t, dir, topic)
		if cli.configs["retention.ms"] != hour {
			t.Fatalf("after AlterConfig retention.ms=%s, seglog topics describe: retention.ms=%s", hour, cli.configs["retention.ms"])
		}
		if src, ok := cli.sources["retention.ms"]; ok && src != "DYNAMIC_TOPIC_CONFIG" {
			t.Fatalf("after AlterConfig, seglog topics describe: retention.ms from %s, want DYNAMIC_TOPIC_CONFIG", src)
		}
	})

	t.Run("CreatePartitions", func(t *testing.T) {
		if err := admin.CreatePartitions(topic, 4, nil, false); err != nil {
			t.Fatalf("CreatePartitions: %v", err)
		}
		if cli := describeTopic(t, dir, topic); cli.partitions != 4 {
			t.Fatalf("after CreatePartitions to 4, seglog topics describe: %d partitions", cli.partitions)
		}
	})

	t.Run("DeleteRecords", func(t *testing.T) {
		if err := admin.DeleteRecords(topic, map[int32]int64{0: 5}); err != nil {
			t.Fatalf("DeleteRecords: %v", err)
		}
		if cli := describeTopic(t, dir, topic); cli.start[0] != 5 {
			t.Fatalf("after DeleteRecords before 5, seglog topics describe: partition 0 starts at %d", cli.start[0])
		}
		got, offsets := consumeCLI(t, dir, topic, 0)
		if len(offsets) == 0 || offsets[0] != 5 {
			t.Fatalf("after DeleteRecords before 5, seglog consume reads offsets %v", offsets)
		}
		sameRecords(t, "seglog consume after DeleteRecords", got, want[5:])
	})

	t.Run("ListConsumerGroups", func(t *testing.T) {
		groups, err := admin.ListConsumerGroups()
		if err != nil {
			t.Fatalf("ListConsumerGroups: %v", err)
		}
		if groups[group] != "consumer" {
			t.Fatalf("ListConsumerGroups: %v, want %s of protocol type consumer", groups, group)
		}
	})

	t.Run("DescribeConsumerGroups", func(t *testing.T) {
		ds, err := admin.DescribeConsumerGroups([]string{group})
		if err != nil {
			t.Fatalf("DescribeConsumerGroups: %v", err)
		}
		// The member has left: the group is empty, its commits kept.
		if len(ds) != 1 || ds[0].GroupId != group || ds[0].Err != sarama.ErrNoError || ds[0].State != "Empty" || ds[0].ProtocolType != "consumer" || len(ds[0].Members) != 0 {
			t.Fatalf("DescribeConsumerGroups: %s", describeGroups(ds))
		}
	})

	t.Run("ListConsumerGroupOffsets", func(t *testing.T) {
		res, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
		if err != nil {
			t.Fatalf("ListConsumerGroupOffsets: %v", err)
		}
		cli := committed(t, dir, group, topic)
		for _, p := range []int32{0, 1} {
			b := res.GetBlock(topic, p)
			if b == nil || b.Err != sarama.ErrNoError {
				t.Fatalf("ListConsumerGroupOffsets: partition %d: %+v", p, b)
			}
			want, ok := cli[p]
			if !ok {
				want = -1 // no commit
			}
			if b.Offset != want {
				t.Errorf("ListConsumerGroupOffsets: partition %d at %d; seglog groups describe: %d", p, b.Offset, want)
			}
		}
		if cli[0] != int64(len(want)) {
			t.Errorf("seglog groups describe: partition 0 committed at %d, want %d", cli[0], len(want))
		}
	})

	t.Run("DeleteConsumerGroup", func(t *testing.T) {
		if err := admin.DeleteConsumerGroup(group); err != nil {
			t.Fatalf("DeleteConsumerGroup: %v", err)
		}
		if out := seglog(t, "groups", "list", dir); slices.Contains(strings.Fields(out), group) {
			t.Fatalf("after DeleteConsumerGroup, seglog groups list still lists %s:\n%s", group, out)
		}
	})

	if err := admin.Close(); err != nil {
		t.Errorf("closing the admin: %v", err)
	}
	srv.stop()
	fsckClean(t, dir)
}

func describeGroups(ds []*sarama.GroupDescription) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "{group %q error %v state %q protocol type %q protocol %q members %d} ", d.GroupId, d.Err, d.State, d.ProtocolType, d.Protocol, len(d.Members))
	}
	return b.String()
}
