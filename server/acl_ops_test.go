package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/seglog/seglog/store"
)

// KIP-430: Metadata (v8-v10 for the cluster's) and DescribeCluster answer
// the operations the principal may do, as Kafka's bit field of the
// resource type's supported operations; "not provided" when not asked;
// every supported one to a super user and with SASL off.
func TestACLAuthorizedOperations(t *testing.T) {
	const (
		notProvided = -2147483648
		allTopic    = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
		allCluster  = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
	)
	ts := aclServer(t, "")
	if err := ts.st.CreateTopic("t", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(ts.as("alice"))
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Topics("t").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpWrite))
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Clusters().ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe))
	v10 := kversion.Stable()
	v10.SetMaxKeyVersion(3, 10)
	ctx := testCtx(t)

	ops := func(c *kgo.Client, include bool) (cluster, topic int32) {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
		req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = include, include
		resp, err := req.RequestWith(ctx, c)
		if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("metadata: %v %+v", err, resp)
		}
		return resp.AuthorizedOperations, resp.Topics[0].AuthorizedOperations
	}
	describe := func(c *kgo.Client, include bool) int32 {
		t.Helper()
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = include
		resp, err := req.RequestWith(ctx, c)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("describe cluster: %v %+v", err, resp)
		}
		return resp.ClusterAuthorizedOperations
	}

	bob := ts.as("bob", kgo.MaxVersions(v10))
	// WRITE implies DESCRIBE, as Kafka's authorizer has it.
	if c, tp := ops(bob, true); c != 1<<8 || tp != 1<<4|1<<8 {
		t.Errorf("bob: cluster %b topic %b, want %b %b", c, tp, 1<<8, 1<<4|1<<8)
	}
	if c, tp := ops(bob, false); c != notProvided || tp != notProvided {
		t.Errorf("not asked: cluster %d topic %d", c, tp)
	}
	if got := describe(ts.as("bob"), true); got != 1<<8 {
		t.Errorf("bob's DescribeCluster: %b, want %b", got, 1<<8)
	}
	if got := describe(ts.as("bob"), false); got != notProvided {
		t.Errorf("DescribeCluster not asked: %d", got)
	}
	if c, tp := ops(ts.as("alice", kgo.MaxVersions(v10)), true); c != allCluster || tp != allTopic {
		t.Errorf("super user: cluster %b topic %b", c, tp)
	}

	open := startServer(t, "", Options{})
	if err := open.st.CreateTopic("t", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	anon := open.client(kgo.MaxVersions(v10))
	if c, tp := ops(anon, true); c != allCluster || tp != allTopic {
		t.Errorf("SASL off: cluster %b topic %b", c, tp)
	}
	if got := describe(open.client(), true); got != allCluster {
		t.Errorf("SASL off DescribeCluster: %b", got)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g"}, true
	dresp, err := dg.RequestWith(ctx, open.client())
	if err != nil || len(dresp.Groups) != 1 || dresp.Groups[0].AuthorizedOperations != 1<<3|1<<6|1<<8 {
		t.Errorf("SASL off DescribeGroups: %v %+v", err, dresp)
	}
}

// CreateTopics v5+ answers a new topic's configs only to a principal with
// DESCRIBE_CONFIGS on it; to another, TOPIC_AUTHORIZATION_FAILED as the
// topic's config error and no configs, the topic still created.
func TestACLCreateTopicsConfigs(t *testing.T) {
	ts := aclServer(t, "")
	adm := kadm.NewClient(ts.as("alice"))
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Topics("hid", "shown").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpCreate))
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Topics("shown").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpDescribeConfigs))
	create := func(c *kgo.Client, names ...string) map[string]kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		for _, n := range names {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = n, 2, 1
			rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1234")}}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(testCtx(t), c)
		if err != nil || resp.Version < 5 {
			t.Fatalf("create topics: %v %+v", err, resp)
		}
		out := map[string]kmsg.CreateTopicsResponseTopic{}
		for _, rt := range resp.Topics {
			out[rt.Topic] = rt
		}
		return out
	}
	retention := func(rt kmsg.CreateTopicsResponseTopic) string {
		for _, c := range rt.Configs {
			if c.Name == "retention.ms" && c.Value != nil && c.Source == int8(kmsg.ConfigSourceDynamicTopicConfig) {
				return *c.Value
			}
		}
		return ""
	}
	got := create(ts.as("bob"), "hid", "shown")
	if h := got["hid"]; h.ErrorCode != 0 || h.ConfigErrorCode != topicDenied || h.Configs != nil || h.NumPartitions != -1 {
		t.Errorf("without DESCRIBE_CONFIGS: %+v", h)
	}
	if _, err := ts.st.Partitions("hid"); err != nil {
		t.Errorf("the topic whose configs were hidden was not created: %v", err)
	}
	if s := got["shown"]; s.ErrorCode != 0 || s.ConfigErrorCode != 0 || retention(s) != "1234" || s.NumPartitions != 2 {
		t.Errorf("with DESCRIBE_CONFIGS: %+v", s)
	}
	open := startServer(t, "", Options{})
	if o := create(open.client(), "o")["o"]; o.ErrorCode != 0 || o.ConfigErrorCode != 0 || retention(o) != "1234" {
		t.Errorf("SASL off: %+v", o)
	}
}
