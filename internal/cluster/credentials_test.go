package cluster

import (
	"crypto/pbkdf2"
	"crypto/sha512"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// addUser writes user into dir's credentials file, as seglog users add
// does, for each of mechs.
func addUser(t *testing.T, fsys vfs.FS, dir, user, password string, mechs ...string) {
	t.Helper()
	if _, err := fsys.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// A store's directory, as seglog users add makes it.
		st, err := store.Open(dir, store.Options{FS: fsys, ReplicatedOffsets: true, OffsetsPartitions: 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	creds, err := server.LoadCredentials(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mechs {
		if err := creds.SetPassword(user, m, password, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// saslCluster serves n nodes with SASL on, every node given its DIR's
// credentials file as seeds; before returning, files(fs) writes them.
// superUsers are every server's Options.SuperUsers (ACLs are on with
// SASL).
func saslCluster(t *testing.T, n int, files func(fs vfs.FS), superUsers ...string) *served {
	t.Helper()
	var once sync.Once
	configure := func(tn *tnode, cfg *Config) {
		once.Do(func() { files(cfg.FS) })
		creds, err := server.LoadCredentials(cfg.FS, tn.dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Credentials = creds
	}
	options := func(tn *tnode, o *server.Options) {
		o.SASL = &server.SASLConfig{Mechanisms: server.Mechanisms, Credentials: tn.node.Credentials()}
		o.SuperUsers = superUsers
	}
	return newServedClusterWith(t, n, configure, options)
}

// on sends req to the node at addr alone, logged in with mech.
func on(t *testing.T, addr string, mech sasl.Mechanism, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return cl.SeedBrokers()[0].Request(ctxTimeout(t), req)
}

// login reports how a login with mech on the node at addr went.
func login(t *testing.T, addr string, mech sasl.Mechanism) error {
	_, err := on(t, addr, mech, kmsg.NewPtrMetadataRequest())
	return err
}

// awaitUser waits until every running node has applied (or dropped) user's
// credential for mech.
func (s *served) awaitUser(user, mech string, want bool) {
	s.t.Helper()
	testutil.WaitFor(s.t, fmt.Sprintf("every node to apply %s %s present=%v", user, mech, want), func() bool {
		for _, tn := range s.running() {
			if _, ok := tn.node.Credentials().Lookup(user, mech); ok != want {
				return false
			}
		}
		return true
	})
}

// TestSASLAcrossTheCluster: users seeded from one node's file log in on
// every node; a user added through node 1 logs in on node 3; deleted
// through node 2, it is refused everywhere; kgo with SCRAM produces and
// consumes through the three nodes; a restarted node keeps the users and
// ignores a file that differs.
func TestSASLAcrossTheCluster(t *testing.T) {
	c := saslCluster(t, 3, func(fs vfs.FS) {
		addUser(t, fs, "/n2", "admin", "admin-pw", server.MechanismSCRAMSHA256, server.MechanismSCRAMSHA512)
	}, "admin") // ACLs are on with SASL: the administrator is a super user
	admin := scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha256Mechanism()
	c.awaitUser("admin", server.MechanismSCRAMSHA512, true)
	for _, tn := range c.running() {
		if err := login(t, tn.kafka, admin); err != nil {
			t.Fatalf("admin, from node 2's file, on node %d: %v", tn.id, err)
		}
	}

	// bob is added through node 1 and logs in on node 3.
	bob := scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha512Mechanism()
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	salt := []byte("a salt of bob's")
	alter.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "bob", Mechanism: 2, Iterations: 4096, Salt: salt,
		SaltedPassword: saltedPassword(t, "bob-pw", salt)}}
	resp, err := on(t, c.nodes[1].kafka, admin, alter)
	if err != nil || resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode != 0 {
		t.Fatalf("adding bob through node 1: %v %+v", err, resp)
	}
	// Answered once node 1 applied it: bob logs in there at once.
	if err := login(t, c.nodes[1].kafka, bob); err != nil {
		t.Fatalf("bob on node 1 after its answer: %v", err)
	}
	c.awaitUser("bob", server.MechanismSCRAMSHA512, true)
	if err := login(t, c.nodes[3].kafka, bob); err != nil {
		t.Fatalf("bob on node 3: %v", err)
	}
	desc, err := on(t, c.nodes[2].kafka, admin, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest())
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, r := range desc.(*kmsg.DescribeUserSCRAMCredentialsResponse).Results {
		users = append(users, fmt.Sprintf("%s/%d", r.User, len(r.CredentialInfos)))
	}
	if want := []string{"admin/2", "bob/1"}; !slices.Equal(users, want) {
		t.Errorf("node 2 describes %v, want %v", users, want)
	}

	// kgo with SCRAM produces and consumes through the three nodes.
	const topic, total = "secure", 50
	if err := c.controller().node.CreateTopic(ctxTimeout(t), topic, 3, 3, nil); err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t)
	// The super user: bob has no ACL (internal/cluster/acls_test.go
	// has the ACLs across the cluster).
	prod := c.client(t, kgo.SASL(admin), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range total {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("r%03d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := c.client(t, kgo.SASL(admin), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]bool{}
	for len(got) < total {
		fetches := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", len(got), total, ctx.Err())
		}
		for _, fe := range fetches.Errors() {
			t.Logf("fetch error (retried): %v", fe.Err)
		}
		fetches.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
	}

	// bob is deleted through node 2 and refused everywhere.
	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "bob", Mechanism: 2}}
	resp, err = on(t, c.nodes[2].kafka, admin, del)
	if err != nil || resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode != 0 {
		t.Fatalf("deleting bob through node 2: %v %+v", err, resp)
	}
	if resp, err := on(t, c.nodes[3].kafka, admin, del); err != nil || resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Errorf("deleting bob again through node 3: %v %+v, want RESOURCE_NOT_FOUND", err, resp)
	}
	c.awaitUser("bob", server.MechanismSCRAMSHA512, false)
	for _, tn := range c.running() {
		if err := login(t, tn.kafka, bob); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("deleted bob on node %d: %v, want SASL_AUTHENTICATION_FAILED", tn.id, err)
		}
	}

	// Node 3 restarts with a file of its own: the metadata's users are
	// still in force there, and the file is ignored.
	c.stopNode(3)
	addUser(t, c.fs, "/n3", "mallory", "mallory-pw", server.MechanismSCRAMSHA256)
	c.restartNode(3)
	c.awaitUser("admin", server.MechanismSCRAMSHA256, true)
	if err := login(t, c.nodes[3].kafka, admin); err != nil {
		t.Fatalf("admin on restarted node 3: %v", err)
	}
	mallory := scram.Auth{User: "mallory", Pass: "mallory-pw"}.AsSha256Mechanism()
	if err := login(t, c.nodes[3].kafka, mallory); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("mallory, only in node 3's file: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	testutil.WaitFor(t, "node 3's credentials record to list admin alone", func() bool {
		rec, err := ReadCredentialRecord(c.fs, "/n3")
		return err == nil && rec.InForce && len(rec.Users) == 2 && rec.Users[0].User == "admin" && rec.Users[1].User == "admin"
	})
}

// saltedPassword is what a client sends in AlterUserScramCredentials:
// SCRAM-SHA-512's Hi(password, salt, 4096).
func saltedPassword(t *testing.T, password string, salt []byte) []byte {
	t.Helper()
	b, err := pbkdf2.Key(sha512.New, password, salt, 4096, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCredentialBootstrapRace: two nodes whose files differ both seed;
// one file wins whole on every node, the other node says its file is
// ignored, and the third node, without a file, records the winner.
func TestCredentialBootstrapRace(t *testing.T) {
	logs := map[int32]*testutil.LockedBuffer{1: {}, 2: {}, 3: {}}
	files := map[int32][]server.Credential{}
	var filesMu sync.Mutex // the nodes start together
	var once sync.Once
	c := newClusterConfigured(t, 3, false, func(tn *tnode, cfg *Config) {
		once.Do(func() {
			addUser(t, cfg.FS, "/n1", "alice", "pw", server.MechanismSCRAMSHA256, server.MechanismPlain)
			addUser(t, cfg.FS, "/n2", "bob", "pw", server.MechanismSCRAMSHA512)
		})
		creds, err := server.LoadCredentials(cfg.FS, tn.dir)
		if err != nil {
			t.Fatal(err)
		}
		filesMu.Lock()
		files[tn.id] = creds.List()
		filesMu.Unlock()
		cfg.Credentials = creds
		cfg.Logger = slog.New(slog.NewTextHandler(logs[tn.id], nil))
	})
	var winner int32
	testutil.WaitFor(t, "every node to record the same users in force", func() bool {
		recs := map[string]bool{}
		for _, tn := range c.running() {
			rec, err := ReadCredentialRecord(c.fs, tn.dir)
			if err != nil || !rec.InForce {
				return false
			}
			recs[fmt.Sprint(rec.Users)] = true
		}
		return len(recs) == 1
	})
	st := c.nodes[3].node.Credentials().List()
	for id := int32(1); id <= 2; id++ {
		if slices.EqualFunc(st, files[id], sameServerCredential) {
			winner = id
		}
	}
	if winner == 0 {
		t.Fatalf("the cluster's users %v are neither node's file whole", st)
	}
	loser := 3 - winner
	testutil.WaitFor(t, fmt.Sprintf("node %d to say its file is ignored", loser), func() bool {
		return strings.Contains(logs[loser].String(), "is ignored")
	})
	if strings.Contains(logs[winner].String(), "is ignored") {
		t.Errorf("node %d, whose file won, says it is ignored", winner)
	}
	// The record holds no secret.
	rec, err := vfs.ReadFileLimit(c.fs, filepath.Join("/n3", nodeDirName, CredentialsFile), maxNodeFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec), "Key") || strings.Contains(string(rec), "alt") {
		t.Errorf("the credentials record holds secrets: %s", rec)
	}
}

func sameServerCredential(a, b server.Credential) bool {
	return a.User == b.User && a.Mechanism == b.Mechanism && a.Iterations == b.Iterations &&
		string(a.Salt) == string(b.Salt) && string(a.StoredKey) == string(b.StoredKey) && string(a.ServerKey) == string(b.ServerKey)
}
