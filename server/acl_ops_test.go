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
}
