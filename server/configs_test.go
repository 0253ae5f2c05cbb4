package server

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// configsServer serves a store whose broker default (seglog serve
// --config) sets retention.bytes, with topic t created with retention.ms
// set on it.
func configsServer(t *testing.T, dir string) (*testServer, *rawConn) {
	t.Helper()
	def := store.DefaultTopicConfig()
	if err := def.SetAll([]string{"retention.bytes=1000000"}); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, dir, Options{TopicConfig: &def})
	return ts, dialRaw(t, ts.addr)
}

func createTopic(t *testing.T, c *rawConn, name string, cfg map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
	for k, v := range cfg {
		rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	req.Topics = append(req.Topics, rt)
	if got := c.do(req).(*kmsg.CreateTopicsResponse).Topics[0]; got.ErrorCode != 0 {
		t.Fatalf("create %s: %+v", name, got)
	}
}

func describeReq(version int16, synonyms bool, res ...kmsg.DescribeConfigsRequestResource) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(version)
	req.IncludeSynonyms = synonyms
	req.IncludeDocumentation = true
	req.Resources = res
	return req
}

func resource(typ kmsg.ConfigResourceType, name string, names ...string) kmsg.DescribeConfigsRequestResource {
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, names
	return r
}

// topicConfigsOf describes one topic at the latest version, by name.
func topicConfigsOf(t *testing.T, c *rawConn, topic string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	resp := c.do(describeReq(4, true, resource(kmsg.ConfigResourceTypeTopic, topic))).(*kmsg.DescribeConfigsResponse)
	if r := resp.Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("describe %s: error %d: %v", topic, r.ErrorCode, r.ErrorMessage)
	}
	out := make(map[string]kmsg.DescribeConfigsResponseResourceConfig)
	for _, cfg := range resp.Resources[0].Configs {
		out[cfg.Name] = cfg
	}
	return out
}

func TestDescribeConfigsEveryVersion(t *testing.T) {
	ts, c := configsServer(t, "")
	createTopic(t, c, "t", map[string]string{"retention.ms": "1000"})
	node := strconv.Itoa(int(ts.srv.NodeID()))
	for v := int16(0); v <= 4; v++ {
		resp := c.do(describeReq(v, v >= 1,
			resource(kmsg.ConfigResourceTypeTopic, "t"),
			resource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "no.such.config"),
			resource(kmsg.ConfigResourceTypeTopic, "nope"),
			resource(kmsg.ConfigResourceTypeBroker, node, "log.retention.bytes", "num.partitions"),
			resource(kmsg.ConfigResourceTypeBroker, "7"),
			resource(kmsg.ConfigResourceTypeBroker, ""),
			resource(kmsg.ConfigResourceTypeBrokerLogger, node),
		)).(*kmsg.DescribeConfigsResponse)
		if len(resp.Resources) != 7 {
			t.Fatalf("v%d: %d resources answered", v, len(resp.Resources))
		}
		all, filtered, unknown, broker, other, dflt, logger := resp.Resources[0], resp.Resources[1], resp.Resources[2], resp.Resources[3], resp.Resources[4], resp.Resources[5], resp.Resources[6]
		if all.ErrorCode != 0 || len(all.Configs) != len(store.Keys()) {
			t.Fatalf("v%d: topic t: error %d, %d configs, want %d", v, all.ErrorCode, len(all.Configs), len(store.Keys()))
		}
		byName := make(map[string]kmsg.DescribeConfigsResponseResourceConfig)
		for _, cfg := range all.Configs {
			byName[cfg.Name] = cfg
		}
		for _, tc := range []struct {
			name, value string
			source      kmsg.ConfigSource
			typ         kmsg.ConfigType
		}{
			{"retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigTypeLong},
			{"retention.bytes", "1000000", kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigTypeLong},
			{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeList},
			{"min.cleanable.dirty.ratio", "0.5", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigTypeDouble},
		} {
			got := byName[tc.name]
			if got.Value == nil || *got.Value != tc.value || got.ReadOnly || got.IsSensitive {
				t.Errorf("v%d: %s: %+v, want value %s", v, tc.name, got, tc.value)
			}
			switch {
			case v == 0 && got.IsDefault != (tc.source == kmsg.ConfigSourceDefaultConfig):
				t.Errorf("v0: %s: is_default %v", tc.name, got.IsDefault)
			case v >= 1 && got.Source != tc.source:
				t.Errorf("v%d: %s: source %v, want %v", v, tc.name, got.Source, tc.source)
			case v >= 3 && got.ConfigType != tc.typ:
				t.Errorf("v%d: %s: type %v, want %v", v, tc.name, got.ConfigType, tc.typ)
			}
		}
		if v >= 1 {
			var syns []string
			for _, s := range byName["retention.ms"].ConfigSynonyms {
				syns = append(syns, s.Name+"="+*s.Value+"/"+s.Source.String())
			}
			// Kafka's default synonym for retention.ms is log.retention.hours
			// (log.retention.ms and .minutes have no default).
			want := []string{"retention.ms=1000/DYNAMIC_TOPIC_CONFIG", "log.retention.hours=168/DEFAULT_CONFIG"}
			if !slices.Equal(syns, want) {
				t.Errorf("v%d: retention.ms synonyms %v, want %v", v, syns, want)
			}
			syns = nil
			for _, s := range byName["retention.bytes"].ConfigSynonyms {
				syns = append(syns, s.Name+"="+*s.Value+"/"+s.Source.String())
			}
			want = []string{"log.retention.bytes=1000000/STATIC_BROKER_CONFIG", "log.retention.bytes=-1/DEFAULT_CONFIG"}
			if !slices.Equal(syns, want) {
				t.Errorf("v%d: retention.bytes synonyms %v, want %v", v, syns, want)
			}
		}
		if filtered.ErrorCode != 0 || len(filtered.Configs) != 1 || filtered.Configs[0].Name != "retention.ms" {
			t.Errorf("v%d: filtered: %+v", v, filtered)
		}
		if unknown.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(unknown.Configs) != 0 {
			t.Errorf("v%d: unknown topic: %+v", v, unknown)
		}
		if broker.ErrorCode != 0 || len(broker.Configs) != 2 {
			t.Fatalf("v%d: broker: %+v", v, broker)
		}
		for _, cfg := range broker.Configs {
			want := map[string]string{"log.retention.bytes": "1000000", "num.partitions": "1"}[cfg.Name]
			if *cfg.Value != want || !cfg.ReadOnly {
				t.Errorf("v%d: broker %s=%s read-only %v, want %s", v, cfg.Name, *cfg.Value, cfg.ReadOnly, want)
			}
			wantSrc := map[string]kmsg.ConfigSource{"log.retention.bytes": kmsg.ConfigSourceStaticBrokerConfig, "num.partitions": kmsg.ConfigSourceDefaultConfig}[cfg.Name]
			if v >= 1 && cfg.Source != wantSrc {
				t.Errorf("v%d: broker %s: source %v, want %v", v, cfg.Name, cfg.Source, wantSrc)
			}
		}
		if other.ErrorCode != kerr.InvalidRequest.Code || other.ErrorMessage == nil {
			t.Errorf("v%d: another broker's id: %+v", v, other)
		}
		if dflt.ErrorCode != 0 || len(dflt.Configs) != 0 {
			t.Errorf("v%d: the default broker resource: %+v", v, dflt)
		}
		if logger.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("v%d: BROKER_LOGGER: %+v", v, logger)
		}
	}
	// A client that negotiates its version (kgo: the highest both speak).
	cl := ts.client()
	req := describeReq(4, false, resource(kmsg.ConfigResourceTypeTopic, "t", "retention.ms"))
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 || *resp.Resources[0].Configs[0].Value != "1000" {
		t.Fatalf("kgo: %+v %v", resp, err)
	}
}

func incReq(version int16, validateOnly bool, typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(version)
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = typ, name, ops
	req.Resources = append(req.Resources, r)
	return req
}

func op(o kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: o, Value: value}
}

func alterReq(version int16, validateOnly bool, typ kmsg.ConfigResourceType, name string, kvs ...string) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.SetVersion(version)
	req.ValidateOnly = validateOnly
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i < len(kvs); i += 2 {
		r.Configs = append(r.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: kvs[i], Value: kmsg.StringPtr(kvs[i+1])})
	}
	req.Resources = append(req.Resources, r)
	return req
}

// nullValueAlter leaves the value of req's config i null.
func nullValueAlter(req *kmsg.AlterConfigsRequest, i int) *kmsg.AlterConfigsRequest {
	req.Resources[0].Configs[i].Value = nil
	return req
}

func incCode(t *testing.T, c *rawConn, req *kmsg.IncrementalAlterConfigsRequest) int16 {
	t.Helper()
	return c.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
}

func alterCode(t *testing.T, c *rawConn, req *kmsg.AlterConfigsRequest) int16 {
	t.Helper()
	return c.do(req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
}

func valueSource(cfgs map[string]kmsg.DescribeConfigsResponseResourceConfig, name string) string {
	c := cfgs[name]
	if c.Value == nil {
		return "<none>"
	}
	return *c.Value + "/" + c.Source.String()
}

func TestIncrementalAlterConfigs(t *testing.T) {
	_, c := configsServer(t, "")
	createTopic(t, c, "t", nil)
	set, del := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	appendOp, subtract := kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract
	topic := kmsg.ConfigResourceTypeTopic
	for v := int16(0); v <= 1; v++ {
		ms := strconv.Itoa(2000 + int(v))
		if code := incCode(t, c, incReq(v, false, topic, "t", op(set, "retention.ms", kmsg.StringPtr(ms)),
			op(appendOp, "cleanup.policy", kmsg.StringPtr("compact")), op(set, "retention.bytes", kmsg.StringPtr("5000")))); code != 0 {
			t.Fatalf("v%d: set and append: error %d", v, code)
		}
		cfgs := topicConfigsOf(t, c, "t")
		for name, want := range map[string]string{"retention.ms": ms + "/DYNAMIC_TOPIC_CONFIG",
			"cleanup.policy": "compact,delete/DYNAMIC_TOPIC_CONFIG", "retention.bytes": "5000/DYNAMIC_TOPIC_CONFIG"} {
			if got := valueSource(cfgs, name); got != want {
				t.Errorf("v%d: after set: %s = %s, want %s", v, name, got, want)
			}
		}
		if code := incCode(t, c, incReq(v, false, topic, "t", op(del, "retention.ms", nil),
			op(subtract, "cleanup.policy", kmsg.StringPtr("delete")), op(del, "retention.bytes", nil))); code != 0 {
			t.Fatalf("v%d: delete and subtract: error %d", v, code)
		}
		cfgs = topicConfigsOf(t, c, "t")
		for name, want := range map[string]string{"retention.ms": "604800000/DEFAULT_CONFIG",
			"cleanup.policy": "compact/DYNAMIC_TOPIC_CONFIG", "retention.bytes": "1000000/STATIC_BROKER_CONFIG"} {
			if got := valueSource(cfgs, name); got != want {
				t.Errorf("v%d: after delete: %s = %s, want %s", v, name, got, want)
			}
		}
		if code := incCode(t, c, incReq(v, false, topic, "t", op(del, "cleanup.policy", nil))); code != 0 {
			t.Fatalf("v%d: delete cleanup.policy: error %d", v, code)
		}
		for _, tc := range []struct {
			req  *kmsg.IncrementalAlterConfigsRequest
			want int16
		}{
			{incReq(v, false, topic, "t", op(appendOp, "retention.ms", kmsg.StringPtr("5"))), kerr.InvalidConfig.Code},
			{incReq(v, false, topic, "t", op(set, "no.such", kmsg.StringPtr("5"))), kerr.InvalidConfig.Code},
			{incReq(v, false, topic, "t", op(subtract, "cleanup.policy", kmsg.StringPtr("delete"))), kerr.InvalidConfig.Code},
			{incReq(v, false, topic, "t", op(set, "retention.ms", kmsg.StringPtr("1")), op(set, "retention.ms", kmsg.StringPtr("2"))), kerr.InvalidRequest.Code},
			{incReq(v, false, topic, "nope", op(set, "retention.ms", kmsg.StringPtr("5"))), kerr.UnknownTopicOrPartition.Code},
			{incReq(v, false, topic, store.OffsetsTopic, op(set, "retention.ms", kmsg.StringPtr("5"))), kerr.PolicyViolation.Code},
			{incReq(v, false, kmsg.ConfigResourceTypeBroker, "0", op(set, "log.retention.ms", kmsg.StringPtr("5"))), kerr.InvalidRequest.Code},
			{incReq(v, false, kmsg.ConfigResourceTypeBrokerLogger, "0", op(set, "kafka", kmsg.StringPtr("DEBUG"))), kerr.InvalidRequest.Code},
			{incReq(v, false, topic, "bad/name", op(set, "retention.ms", kmsg.StringPtr("5"))), kerr.InvalidTopicException.Code},
		} {
			if code := incCode(t, c, tc.req); code != tc.want {
				t.Errorf("v%d: %+v: error %d, want %d", v, tc.req.Resources[0], code, tc.want)
			}
		}
	}
}

// TestAlterConfigsDuplicateResources: a topic named twice in one
// request is refused in both places, and another resource of the same
// request is still altered.
func TestAlterConfigsDuplicateResources(t *testing.T) {
	_, c := configsServer(t, "")
	createTopic(t, c, "t", nil)
	createTopic(t, c, "u", nil)
	req := incReq(1, false, kmsg.ConfigResourceTypeTopic, "t", op(kmsg.IncrementalAlterConfigOpSet, "retention.ms", kmsg.StringPtr("5")))
	req.Resources = append(req.Resources, req.Resources[0], req.Resources[0])
	req.Resources[2].ResourceName = "u"
	resp := c.do(req).(*kmsg.IncrementalAlterConfigsResponse)
	if got := []int16{resp.Resources[0].ErrorCode, resp.Resources[1].ErrorCode, resp.Resources[2].ErrorCode}; !slices.Equal(got, []int16{kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, 0}) {
		t.Fatalf("error codes %v", got)
	}
	if got := valueSource(topicConfigsOf(t, c, "t"), "retention.ms"); got != "604800000/DEFAULT_CONFIG" {
		t.Errorf("t: retention.ms %s", got)
	}
	if got := valueSource(topicConfigsOf(t, c, "u"), "retention.ms"); got != "5/DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("u: retention.ms %s", got)
	}
}

func TestAlterConfigs(t *testing.T) {
	_, c := configsServer(t, "")
	createTopic(t, c, "t", map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"})
	topic := kmsg.ConfigResourceTypeTopic
	for v := int16(0); v <= 2; v++ {
		seg := strconv.Itoa(2000000 + int(v))
		if code := alterCode(t, c, alterReq(v, false, topic, "t", "segment.bytes", seg, "retention.bytes", "77")); code != 0 {
			t.Fatalf("v%d: alter: error %d", v, code)
		}
		cfgs := topicConfigsOf(t, c, "t")
		// The whole set is replaced: what is not listed is the default.
		for name, want := range map[string]string{"segment.bytes": seg + "/DYNAMIC_TOPIC_CONFIG", "retention.bytes": "77/DYNAMIC_TOPIC_CONFIG",
			"retention.ms": "604800000/DEFAULT_CONFIG", "cleanup.policy": "delete/DEFAULT_CONFIG"} {
			if got := valueSource(cfgs, name); got != want {
				t.Errorf("v%d: %s = %s, want %s", v, name, got, want)
			}
		}
		if code := alterCode(t, c, alterReq(v, false, topic, "t")); code != 0 {
			t.Fatalf("v%d: alter to nothing: error %d", v, code)
		}
		if got := valueSource(topicConfigsOf(t, c, "t"), "retention.bytes"); got != "1000000/STATIC_BROKER_CONFIG" {
			t.Errorf("v%d: after an empty alter: retention.bytes %s", v, got)
		}
		for _, tc := range []struct {
			req  *kmsg.AlterConfigsRequest
			want int16
		}{
			{alterReq(v, false, topic, "t", "retention.ms", "soon"), kerr.InvalidConfig.Code},
			{alterReq(v, false, topic, "t", "segment.ms", "1000"), kerr.InvalidConfig.Code},
			{alterReq(v, false, topic, "nope", "retention.ms", "1"), kerr.UnknownTopicOrPartition.Code},
			{alterReq(v, false, kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "1"), kerr.InvalidRequest.Code},
		} {
			if code := alterCode(t, c, tc.req); code != tc.want {
				t.Errorf("v%d: %+v: error %d, want %d", v, tc.req.Resources[0], code, tc.want)
			}
		}
	}
}

// TestAlterConfigsChangeNothing: validate-only alters and invalid ones
// leave the topic's config file byte for byte as it was, and the topic's
// described configs too; a validate-only alter still reports what the
// real one would.
func TestAlterConfigsChangeNothing(t *testing.T) {
	ts, c := configsServer(t, "")
	createTopic(t, c, "t", map[string]string{"retention.ms": "1000"})
	path := filepath.Join(ts.dir, "t"+layout.TopicConfigSuffix)
	before, err := vfs.ReadFileLimit(vfs.Default, path, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	described := topicConfigsOf(t, c, "t")
	topic := kmsg.ConfigResourceTypeTopic
	set := kmsg.IncrementalAlterConfigOpSet
	for i, tc := range []struct {
		inc   *kmsg.IncrementalAlterConfigsRequest
		alter *kmsg.AlterConfigsRequest
		want  int16
	}{
		{inc: incReq(1, true, topic, "t", op(set, "retention.ms", kmsg.StringPtr("5")), op(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil)), want: kerr.InvalidRequest.Code},
		{inc: incReq(1, true, topic, "t", op(set, "retention.ms", kmsg.StringPtr("5")), op(set, "cleanup.policy", kmsg.StringPtr("compact")))},
		{inc: incReq(0, true, topic, "t", op(kmsg.IncrementalAlterConfigOpDelete, "retention.ms", nil))},
		{alter: alterReq(2, true, topic, "t", "segment.bytes", "2000000")},
		{alter: alterReq(0, true, topic, "t")},
		// The first op is valid, the second not: neither is stored.
		{inc: incReq(1, false, topic, "t", op(set, "retention.bytes", kmsg.StringPtr("5")), op(set, "retention.ms", kmsg.StringPtr("-2"))), want: kerr.InvalidConfig.Code},
		{inc: incReq(1, false, topic, "t", op(set, "min.compaction.lag.ms", kmsg.StringPtr("10")), op(set, "max.compaction.lag.ms", kmsg.StringPtr("5"))), want: kerr.InvalidConfig.Code},
		{inc: incReq(1, false, topic, "t", op(set, "flush.messages", kmsg.StringPtr("7"))), want: kerr.InvalidConfig.Code},
		{inc: incReq(1, false, topic, "t", op(set, "cleanup.policy", nil)), want: kerr.InvalidRequest.Code},
		{inc: incReq(0, false, topic, "t", op(set, "retention.bytes", kmsg.StringPtr("5")), op(kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", nil)), want: kerr.InvalidRequest.Code},
		{alter: nullValueAlter(alterReq(2, false, topic, "t", "retention.bytes", "5", "retention.ms", "6"), 1), want: kerr.InvalidRequest.Code},
		{alter: alterReq(1, false, topic, "t", "retention.ms", "5", "min.cleanable.dirty.ratio", "2"), want: kerr.InvalidConfig.Code},
		{alter: alterReq(1, false, topic, "t", "retention.ms", "5", "retention.ms", "6"), want: kerr.InvalidRequest.Code},
	} {
		var code int16
		if tc.inc != nil {
			code = incCode(t, c, tc.inc)
		} else {
			code = alterCode(t, c, tc.alter)
		}
		if code != tc.want {
			t.Errorf("case %d: error %d, want %d", i, code, tc.want)
		}
		after, err := vfs.ReadFileLimit(vfs.Default, path, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(after, before) {
			t.Fatalf("case %d changed the topic file:\n%s\nwas\n%s", i, after, before)
		}
		now := topicConfigsOf(t, c, "t")
		for name, cfg := range described {
			if valueSource(now, name) != valueSource(described, name) {
				t.Errorf("case %d changed %s: %s, was %s", i, name, valueSource(now, name), valueSource(described, cfg.Name))
			}
		}
	}
}

// TestAlterConfigsAppliedAndDurable: a lowered retention.ms is acted on
// by the store's next retention round, and the altered config survives a
// restart with its sources.
func TestAlterConfigsAppliedAndDurable(t *testing.T) {
	dir := t.TempDir()
	ts, c := configsServer(t, dir)
	createTopic(t, c, "r", map[string]string{"segment.bytes": "2048", "max.message.bytes": "1024"})
	cl := ts.client(kgo.DefaultProduceTopic("r"), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	old := time.Now().Add(-time.Hour)
	for i := range 30 {
		r := &kgo.Record{Value: bytes.Repeat([]byte{'a' + byte(i%26)}, 300), Timestamp: old}
		if err := cl.ProduceSync(testCtx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := ts.st.CleanOnce(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := ts.st.DescribeTopic("r")
	if err != nil || info.Partitions[0].StartOffset != 0 || info.Partitions[0].Segments < 3 {
		t.Fatalf("before the alter: %+v %v", info, err)
	}
	set := kmsg.IncrementalAlterConfigOpSet
	if code := incCode(t, c, incReq(1, false, kmsg.ConfigResourceTypeTopic, "r", op(set, "retention.ms", kmsg.StringPtr("60000")))); code != 0 {
		t.Fatalf("alter: error %d", code)
	}
	if err := ts.st.CleanOnce(ctx); err != nil {
		t.Fatal(err)
	}
	info, err = ts.st.DescribeTopic("r")
	if err != nil || info.Partitions[0].StartOffset == 0 || info.Partitions[0].Segments != 1 {
		t.Fatalf("a lowered retention.ms was not applied: %+v %v", info, err)
	}
	before := topicConfigsOf(t, c, "r")
	ts.stop()

	ts, c = configsServer(t, dir)
	after := topicConfigsOf(t, c, "r")
	for _, name := range store.Keys() {
		if valueSource(after, name) != valueSource(before, name) {
			t.Errorf("after a restart, %s = %s, was %s", name, valueSource(after, name), valueSource(before, name))
		}
	}
	if got := valueSource(after, "retention.ms"); got != "60000/DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("after a restart, retention.ms = %s", got)
	}
	_ = ts
}

// TestTopicConfigTypes: every topic config the store keeps has the type
// and broker synonym Kafka gives it, from the store's table (server/ had
// its own map of them before issue 28).
func TestTopicConfigTypes(t *testing.T) {
	want := map[string]struct {
		typ    kmsg.ConfigType
		broker string
	}{
		"cleanup.policy":            {kmsg.ConfigTypeList, "log.cleanup.policy"},
		"retention.ms":              {kmsg.ConfigTypeLong, "log.retention.ms"},
		"retention.bytes":           {kmsg.ConfigTypeLong, "log.retention.bytes"},
		"segment.bytes":             {kmsg.ConfigTypeInt, "log.segment.bytes"},
		"flush.messages":            {kmsg.ConfigTypeLong, "log.flush.interval.messages"},
		"flush.ms":                  {kmsg.ConfigTypeLong, "log.flush.interval.ms"},
		"compression.type":          {kmsg.ConfigTypeString, "compression.type"},
		"max.message.bytes":         {kmsg.ConfigTypeInt, "message.max.bytes"},
		"segment.index.bytes":       {kmsg.ConfigTypeInt, "log.index.size.max.bytes"},
		"delete.retention.ms":       {kmsg.ConfigTypeLong, "log.cleaner.delete.retention.ms"},
		"min.cleanable.dirty.ratio": {kmsg.ConfigTypeDouble, "log.cleaner.min.cleanable.ratio"},
		"min.compaction.lag.ms":     {kmsg.ConfigTypeLong, "log.cleaner.min.compaction.lag.ms"},
		"max.compaction.lag.ms":     {kmsg.ConfigTypeLong, "log.cleaner.max.compaction.lag.ms"},
		"min.insync.replicas":       {kmsg.ConfigTypeInt, "min.insync.replicas"},
	}
	keys := store.Keys()
	if len(keys) != len(want) {
		t.Errorf("the store keeps %d topic configs, want %d: %v", len(keys), len(want), keys)
	}
	for _, k := range keys {
		m := metaOf(k)
		if w, ok := want[k]; !ok || m.typ != w.typ || m.BrokerConfig != w.broker {
			t.Errorf("%s: type %v, broker synonym %q; want %+v", k, m.typ, m.BrokerConfig, w)
		}
	}
}

// TestDescribeDefaultReplicationFactor: default.replication.factor is the
// factor topics created without one get: 1 on a single node, the
// cluster's (Options.DefaultReplicationFactor) in one, which a walk saw
// reported as 1 beside topics of three replicas.
func TestDescribeDefaultReplicationFactor(t *testing.T) {
	for _, tc := range []struct {
		rf   int
		want string
		src  kmsg.ConfigSource
	}{{0, "1", kmsg.ConfigSourceDefaultConfig}, {3, "3", kmsg.ConfigSourceStaticBrokerConfig}} {
		ts := startServer(t, "", Options{DefaultReplicationFactor: tc.rf})
		c := dialRaw(t, ts.addr)
		node := strconv.Itoa(int(ts.srv.NodeID()))
		resp := c.do(describeReq(4, true, resource(kmsg.ConfigResourceTypeBroker, node, "default.replication.factor"))).(*kmsg.DescribeConfigsResponse)
		r := resp.Resources[0]
		if r.ErrorCode != 0 || len(r.Configs) != 1 {
			t.Fatalf("rf %d: %+v", tc.rf, r)
		}
		if cfg := r.Configs[0]; *cfg.Value != tc.want || cfg.Source != tc.src {
			t.Errorf("Options.DefaultReplicationFactor %d: default.replication.factor=%s (source %v), want %s (%v)", tc.rf, *cfg.Value, cfg.Source, tc.want, tc.src)
		}
	}
}

// TestDescribeLeaderRebalance: auto.leader.rebalance.enable and
// leader.imbalance.check.interval.seconds say what serve's
// --auto-leader-rebalance and --leader-imbalance-check-interval set
// (Options.LeaderImbalanceCheckInterval), Kafka's defaults (true, 300)
// without them; switched off, the interval keeps its default, as Kafka's.
func TestDescribeLeaderRebalance(t *testing.T) {
	for _, tc := range []struct {
		every         time.Duration
		enable, secs  string
		enSrc, secSrc kmsg.ConfigSource
	}{
		{0, "true", "300", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigSourceDefaultConfig},
		{10 * time.Second, "true", "10", kmsg.ConfigSourceDefaultConfig, kmsg.ConfigSourceStaticBrokerConfig},
		{-1, "false", "300", kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDefaultConfig},
	} {
		ts := startServer(t, "", Options{LeaderImbalanceCheckInterval: tc.every})
		c := dialRaw(t, ts.addr)
		node := strconv.Itoa(int(ts.srv.NodeID()))
		resp := c.do(describeReq(4, true, resource(kmsg.ConfigResourceTypeBroker, node, "auto.leader.rebalance.enable", "leader.imbalance.check.interval.seconds"))).(*kmsg.DescribeConfigsResponse)
		r := resp.Resources[0]
		if r.ErrorCode != 0 || len(r.Configs) != 2 {
			t.Fatalf("interval %v: %+v", tc.every, r)
		}
		got := map[string]string{}
		for _, cfg := range r.Configs {
			got[cfg.Name] = fmt.Sprintf("%s (%v)", *cfg.Value, cfg.Source)
		}
		want := map[string]string{
			"auto.leader.rebalance.enable":            fmt.Sprintf("%s (%v)", tc.enable, tc.enSrc),
			"leader.imbalance.check.interval.seconds": fmt.Sprintf("%s (%v)", tc.secs, tc.secSrc),
		}
		if !maps.Equal(got, want) {
			t.Errorf("interval %v: %v, want %v", tc.every, got, want)
		}
	}
}
