package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/vfs"
)

// An ACL created through one node is enforced by another: the partition's
// leader authorizes from the metadata it has applied; deleted through a
// third node, it stops applying everywhere.
func TestACLsReplicated(t *testing.T) {
	// alice (a super user) and bob, seeded from node 1's file.
	c := saslCluster(t, 3, func(fs vfs.FS) {
		for _, u := range []string{"alice", "bob"} {
			addUser(t, fs, "/n1", u, u+"-pw", server.MechanismSCRAMSHA256)
		}
	}, "alice")
	c.awaitUser("bob", server.MechanismSCRAMSHA256, true)
	ctx := ctxTimeout(t)
	const topic = "orders"
	if err := c.controller().node.CreateTopic(ctx, topic, 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	as := func(user string) *kgo.Client {
		return c.client(t, kgo.SASL(scram.Auth{User: user, Pass: user + "-pw"}.AsSha256Mechanism()),
			kgo.RequestRetries(0), kgo.ProducerLinger(0))
	}
	alice, bob := as("alice"), as("bob")
	produce := func() error {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return bob.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte("bob")}).FirstErr()
	}
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob's produce without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	leader := c.leaderOf(topic, 0)
	var others []*tnode
	for _, tn := range c.running() {
		if tn.id != leader.id {
			others = append(others, tn)
		}
	}

	create := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "ord", kmsg.ACLResourcePatternTypePrefixed
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:bob", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
	create.Creations = append(create.Creations, cr)
	resp, err := alice.Broker(int(others[0].id)).Request(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.CreateACLsResponse); len(r.Results) != 1 || r.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateACLs through node %d: %+v", others[0].id, r)
	}
	testutil.WaitFor(t, "every node to apply the ACL", func() bool {
		for _, tn := range c.running() {
			if len(tn.node.ACLs()) != 1 {
				return false
			}
		}
		return true
	})
	if err := produce(); err != nil {
		t.Fatalf("bob's produce to leader %d, granted through node %d: %v", leader.id, others[0].id, err)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	resp, err = alice.Broker(int(others[1].id)).Request(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.DeleteACLsResponse); len(r.Results) != 1 || r.Results[0].ErrorCode != 0 || len(r.Results[0].MatchingACLs) != 1 {
		t.Fatalf("DeleteACLs through node %d: %+v", others[1].id, r)
	}
	testutil.WaitFor(t, "every node to apply the removal", func() bool {
		for _, tn := range c.running() {
			if len(tn.node.ACLs()) != 0 {
				return false
			}
		}
		return true
	})
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob's produce after the removal: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}
