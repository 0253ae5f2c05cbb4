package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seglog/seglog/internal/crc32c"
	"github.com/seglog/seglog/server/acl"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// aclServer serves dir (a new one when empty) with SCRAM-SHA-256 users
// alice, a super user, and bob, whom only the ACLs let do anything.
func aclServer(t *testing.T, dir string) *testServer {
	t.Helper()
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if err := creds.SetPassword(u, MechanismSCRAMSHA256, u+"-pw", 0); err != nil {
			t.Fatal(err)
		}
	}
	return startServer(t, dir, Options{SASL: &SASLConfig{Mechanisms: Mechanisms, Credentials: creds}, SuperUsers: []string{"alice"}})
}

func (ts *testServer) as(user string, opts ...kgo.Opt) *kgo.Client {
	ts.t.Helper()
	return ts.client(append([]kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: user + "-pw"}.AsSha256Mechanism()),
		kgo.RequestRetries(0)}, opts...)...)
}

func grant(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("creating %v: %v", r, r.Err)
		}
	}
}

func TestACLsCreateDescribeDelete(t *testing.T) {
	dir := t.TempDir()
	ts := aclServer(t, dir)
	adm := kadm.NewClient(ts.as("alice"))
	ctx := testCtx(t)
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpRead, kadm.OpWrite))
	grant(t, adm, kadm.NewACLs().Deny("User:*").AllowHosts().DenyHosts("10.1.1.1").Groups("g-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll))

	described := func(adm *kadm.Client) []kadm.DescribedACL {
		t.Helper()
		res, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
			Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].Err != nil {
			t.Fatalf("describe: %+v", res)
		}
		return res[0].Described
	}
	if got := described(adm); len(got) != 3 {
		t.Fatalf("described %d ACLs, want 3: %+v", len(got), got)
	}

	// bob has no ACL on the cluster: neither describe nor change them.
	bobAdm := kadm.NewClient(ts.as("bob"))
	dres, err := bobAdm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil || len(dres) != 1 || !errors.Is(dres[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("bob's DescribeACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, dres)
	}
	res, err := bobAdm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Clusters().
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAlter))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("bob's CreateACLs: %v %+v", err, res)
	}

	// They survive a restart: the acls file.
	ts.stop()
	ts = aclServer(t, dir)
	adm = kadm.NewClient(ts.as("alice"))
	if got := described(adm); len(got) != 3 {
		t.Fatalf("after a restart, %d ACLs: %+v", len(got), got)
	}
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("orders").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead).AllowHosts())
	if err != nil || len(del) != 1 || len(del[0].Deleted) != 1 || del[0].Deleted[0].Operation != kadm.OpRead {
		t.Fatalf("delete: %v %+v", err, del)
	}
	if got := described(adm); len(got) != 2 {
		t.Fatalf("after a delete, %d ACLs: %+v", len(got), got)
	}
	// An invalid ACL is refused with INVALID_REQUEST.
	res, err = adm.CreateACLs(ctx, kadm.NewACLs().Allow("bob").Topics("x").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.InvalidRequest) {
		t.Errorf("a principal without a type: %v %+v", err, res)
	}
}

func TestACLsSecurityDisabledWithoutSASL(t *testing.T) {
	ts := startServer(t, "", Options{})
	adm := kadm.NewClient(ts.client(kgo.RequestRetries(0)))
	res, err := adm.CreateACLs(testCtx(t), kadm.NewACLs().Allow("User:bob").Topics("t").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Errorf("CreateACLs without SASL: %v %+v", err, res)
	}
	if _, err := vfs.Default.Stat(filepath.Join(ts.dir, ACLFile)); err == nil {
		t.Error("an acls file was written without SASL")
	}
}

// A produce the ACLs refuse answers TOPIC_AUTHORIZATION_FAILED and leaves
// the partition's directory byte for byte as it was; DENY beats ALLOW;
// PREFIXED and host patterns apply.
func TestACLDeniedProduceLeavesLogUnchanged(t *testing.T) {
	ts := aclServer(t, "")
	alice := ts.as("alice", kgo.AllowAutoTopicCreation())
	adm := kadm.NewClient(alice)
	produceRecords(t, alice, "orders-eu", 5, "alice")
	partDir := filepath.Join(ts.dir, "orders-eu-0")
	before := vfstest.Snapshot(t, vfs.Default, partDir)

	bob := ts.as("bob")
	produce := func() error {
		return bob.ProduceSync(testCtx(t), &kgo.Record{Topic: "orders-eu", Value: []byte("bob")}).FirstErr()
	}
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob's produce without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// WRITE granted from another host only.
	grant(t, adm, kadm.NewACLs().Allow("User:bob").AllowHosts("10.9.9.9").Topics("orders-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob's produce with WRITE from another host: %v", err)
	}
	after := vfstest.Snapshot(t, vfs.Default, partDir)
	if !maps2equal(before, after) {
		t.Fatalf("refused produces changed the partition:\nbefore %v\nafter  %v", before, after)
	}

	grant(t, adm, kadm.NewACLs().Allow("User:bob").AllowHosts("127.0.0.1").Topics("orders-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	if err := produce(); err != nil {
		t.Fatalf("bob's produce with a prefixed WRITE: %v", err)
	}
	grant(t, adm, kadm.NewACLs().Deny("User:*").DenyHosts().Topics("orders-eu").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite))
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob's produce under a DENY: %v", err)
	}
	// Fetch needs READ, which WRITE does not give.
	resp, err := fetchReq(12, 0, "orders-eu", map[int32]int64{0: 0}).RequestWith(testCtx(t), bob)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob's fetch: error %d, want TOPIC_AUTHORIZATION_FAILED", got)
	}
}

func maps2equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Metadata lists only what the principal may describe, answers a topic
// asked for and refused with TOPIC_AUTHORIZATION_FAILED, and creates a
// topic on first use only with CREATE.
func TestACLMetadata(t *testing.T) {
	ts := aclServer(t, "")
	for _, name := range []string{"seen", "hidden"} {
		if err := ts.st.CreateTopic(name, 1, store.DefaultTopicConfig()); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(ts.as("alice"))
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Topics("seen", "new").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpDescribe))
	bob := ts.as("bob")
	ctx := testCtx(t)

	all := kmsg.NewPtrMetadataRequest()
	r, err := all.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range r.Topics {
		names = append(names, *tp.Topic)
	}
	if !slices.Equal(names, []string{"seen"}) {
		t.Errorf("all topics: %v, want [seen]", names)
	}

	named := kmsg.NewPtrMetadataRequest()
	named.AllowAutoTopicCreation = true
	for _, n := range []string{"seen", "hidden", "new"} {
		named.Topics = append(named.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(n)})
	}
	r, err = named.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, tp := range r.Topics {
		codes[*tp.Topic] = tp.ErrorCode
	}
	want := map[string]int16{"seen": 0, "hidden": topicDenied, "new": topicDenied}
	if !maps2equalCodes(codes, want) {
		t.Errorf("named topics: %v, want %v", codes, want)
	}
	if _, err := ts.st.Partitions("new"); !errors.Is(err, store.ErrUnknownTopic) {
		t.Errorf("a topic bob may not create was created: %v", err)
	}
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Topics("new").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpCreate))
	if r, err = named.RequestWith(ctx, bob); err != nil {
		t.Fatal(err)
	}
	for _, tp := range r.Topics {
		if *tp.Topic == "new" && tp.ErrorCode != 0 {
			t.Errorf("with CREATE, the new topic answered error %d", tp.ErrorCode)
		}
	}
	if _, err := ts.st.Partitions("new"); err != nil {
		t.Errorf("with CREATE, the topic was not created: %v", err)
	}
}

func maps2equalCodes(a, b map[string]int16) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Group requests need the group's ACLs (GROUP_AUTHORIZATION_FAILED), and
// an offset commit READ on the topic too.
func TestACLGroups(t *testing.T) {
	ts := aclServer(t, "")
	if err := ts.st.CreateTopic("events", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(ts.as("alice"))
	bob := ts.as("bob")
	ctx := testCtx(t)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey = "workers"
	// kgo turns FindCoordinator's error code into the call's error.
	if r, err := find.RequestWith(ctx, bob); !errors.Is(err, kerr.GroupAuthorizationFailed) && (err != nil || r.ErrorCode != groupDenied) {
		t.Errorf("FindCoordinator: %v %+v, want GROUP_AUTHORIZATION_FAILED", err, r)
	}
	commit := func() (*kmsg.OffsetCommitResponse, error) {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "workers", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "events"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// Straight to the broker: kgo would first look the coordinator
		// up, which the ACLs refuse on their own.
		r, err := bob.Broker(int(ts.srv.NodeID())).Request(ctx, req)
		if err != nil {
			return nil, err
		}
		return r.(*kmsg.OffsetCommitResponse), nil
	}
	code := func() int16 {
		r, err := commit()
		if err != nil {
			t.Fatal(err)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	if got := code(); got != groupDenied {
		t.Errorf("commit without the group's READ: %d, want GROUP_AUTHORIZATION_FAILED", got)
	}
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Groups("work").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpRead))
	if got := code(); got != topicDenied {
		t.Errorf("commit without the topic's READ: %d, want TOPIC_AUTHORIZATION_FAILED", got)
	}
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Topics("events").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpRead))
	if got := code(); got != 0 {
		t.Errorf("commit with both: %d", got)
	}
	// ListGroups without DESCRIBE on the cluster shows the groups bob may
	// describe, which READ implies; DeleteGroups needs DELETE.
	lg, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, bob)
	if err != nil || len(lg.Groups) != 1 || lg.Groups[0].Group != "workers" {
		t.Errorf("ListGroups: %v %+v", err, lg)
	}
	desc := kmsg.NewPtrDescribeGroupsRequest()
	desc.Groups, desc.IncludeAuthorizedOperations = []string{"workers"}, true
	dresp, err := bob.Broker(int(ts.srv.NodeID())).Request(ctx, desc)
	if err != nil {
		t.Fatal(err)
	}
	if g := dresp.(*kmsg.DescribeGroupsResponse).Groups; len(g) != 1 || g[0].AuthorizedOperations != 1<<3|1<<8 {
		t.Errorf("DescribeGroups' authorized operations: %+v, want READ and DESCRIBE", g)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"workers"}
	dr, err := dg.RequestWith(ctx, bob)
	if err != nil || len(dr.Groups) != 1 || dr.Groups[0].ErrorCode != groupDenied {
		t.Errorf("DeleteGroups: %v %+v", err, dr)
	}
}

// An idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE
// on some topic (KIP-679).
func TestACLInitProducerID(t *testing.T) {
	ts := aclServer(t, "")
	adm := kadm.NewClient(ts.as("alice"))
	bob := ts.as("bob")
	init := func() int16 {
		r, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(testCtx(t), bob)
		if err != nil {
			t.Fatal(err)
		}
		return r.ErrorCode
	}
	if got := init(); got != clusterDenied {
		t.Errorf("InitProducerID without ACLs: %d, want CLUSTER_AUTHORIZATION_FAILED", got)
	}
	grant(t, adm, kadm.NewACLs().Allow("User:bob").Topics("x-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpWrite))
	if got := init(); got != 0 {
		t.Errorf("InitProducerID with WRITE on a prefix: %d", got)
	}
}

func TestACLFileDamage(t *testing.T) {
	fsys := vfs.NewMem()
	st, err := loadACLStore(fsys, "/")
	if err != nil || len(st.ACLs()) != 0 {
		t.Fatalf("no file: %v %v", st.ACLs(), err)
	}
	acls := []acl.ACL{
		{ResourceType: kmsg.ACLResourceTypeTopic, Name: "t", Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow},
		{ResourceType: kmsg.ACLResourceTypeGroup, Name: "g", Pattern: kmsg.ACLResourcePatternTypePrefixed,
			Principal: "User:*", Host: "10.0.0.1", Operation: kmsg.ACLOperationAll, Permission: kmsg.ACLPermissionTypeDeny},
	}
	if err := st.CreateACLs(testCtx(t), acls); err != nil {
		t.Fatal(err)
	}
	good := vfstest.ReadFile(t, fsys, "/"+ACLFile)
	if got, err := ReadACLs(fsys, "/"); err != nil || len(got) != 2 {
		t.Fatalf("read back: %v %v", got, err)
	}
	flip := func(at int) []byte {
		b := slices.Clone(good)
		b[at] ^= 0x40
		return b
	}
	withCRC := func(b []byte) []byte { return encodeACLFileRaw(b[:len(b)-4]) }
	for _, c := range []struct {
		name string
		b    []byte
		off  int64
	}{
		{"short", good[:8], 8},
		{"magic", flip(0), 0},
		{"version", flip(5), 4},
		{"checksum", flip(len(good) - 10), int64(len(good) - 4)},
		{"count too large", withCRC(append(append(slices.Clone(good[:6]), 0xff, 0xff, 0xff, 0xff), good[10:]...)), 6},
		{"bad resource type", withCRC(func() []byte { b := slices.Clone(good); b[10] = 1; return b }()), 10},
		{"out of order", encodeACLFile([]acl.ACL{acls[1], acls[0]}), int64(aclHeaderSize + len(acl.Append(nil, acls[1])))},
	} {
		if err := vfs.WriteFileAtomic(fsys, "/"+ACLFile, c.b); err != nil {
			t.Fatal(err)
		}
		_, err := ReadACLs(fsys, "/")
		var fe *ACLFileError
		if !errors.As(err, &fe) || fe.File != "/"+ACLFile {
			t.Errorf("%s: %v, want an *ACLFileError naming the file", c.name, err)
			continue
		}
		if fe.Offset != c.off {
			t.Errorf("%s: damaged at byte %d, want %d (%v)", c.name, fe.Offset, c.off, err)
		}
		if _, err := loadACLStore(fsys, "/"); !errors.As(err, &fe) {
			t.Errorf("%s: the server would start: %v", c.name, err)
		}
	}
}

// encodeACLFileRaw appends b's checksum to it: damage the checksum does
// not catch.
func encodeACLFileRaw(b []byte) []byte {
	return binary.BigEndian.AppendUint32(slices.Clone(b), crc32c.Checksum(b))
}

// The single node keeps at most acl.MaxACLs; a creation past it changes
// nothing.
func TestACLStoreBound(t *testing.T) {
	fsys := vfs.NewMem()
	st, err := loadACLStore(fsys, "/")
	if err != nil {
		t.Fatal(err)
	}
	many := make([]acl.ACL, acl.MaxACLs)
	for i := range many {
		many[i] = acl.ACL{ResourceType: kmsg.ACLResourceTypeTopic, Name: fmt.Sprintf("t%06d", i), Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:bob", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	}
	if err := st.CreateACLs(testCtx(t), many); err != nil {
		t.Fatal(err)
	}
	one := many[0]
	one.Name = "over"
	if err := st.CreateACLs(testCtx(t), []acl.ACL{one}); !errors.Is(err, acl.ErrTooMany) {
		t.Fatalf("one past the bound: %v", err)
	}
	if got, err := ReadACLs(fsys, "/"); err != nil || len(got) != acl.MaxACLs || len(st.ACLs()) != acl.MaxACLs {
		t.Fatalf("after the refusal: %d in the file (%v), %d served", len(got), err, len(st.ACLs()))
	}
}
