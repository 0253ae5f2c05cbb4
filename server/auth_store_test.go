package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// unreachable is a CredentialStore whose changes fail as a cluster
// node's do when no controller answers: its lookups are a file's.
type unreachable struct {
	*Credentials
	err error
}

func (u unreachable) Put(context.Context, Credential) error { return u.err }
func (u unreachable) Remove(context.Context, string, string) (bool, error) {
	return false, u.err
}

// A change the store cannot make through the controller is answered
// with Kafka's code for it, per user, and nothing else goes wrong.
func TestAlterSCRAMThroughAStoreThatFails(t *testing.T) {
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	if err := creds.SetPassword("alice", MechanismSCRAMSHA256, "alice-pw", 0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		err  error
		code int16
	}{
		{fmt.Errorf("forwarding: %w", ErrNotController), kerr.NotController.Code},
		{context.DeadlineExceeded, kerr.RequestTimedOut.Code},
		{errors.New("disk on fire"), kerr.UnknownServerError.Code},
	} {
		ts := startServer(t, "", Options{SASL: &SASLConfig{Mechanisms: Mechanisms, Credentials: unreachable{creds, c.err}},
			SuperUsers: []string{"alice"}}) // past ACLs, which SASL turns on
		// kgo would retry NOT_CONTROLLER until its retry timeout: the
		// first answer is what is tested.
		cl := ts.client(kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()), kgo.RetryTimeout(time.Millisecond))
		salt := []byte("0123456789abcdef")
		alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		alter.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
			{Name: "bob", Mechanism: 1, Iterations: 4096, Salt: salt, SaltedPassword: make([]byte, 32)}}
		alter.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: 1}}
		r, err := alter.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range r.Results {
			if res.ErrorCode != c.code {
				t.Errorf("%v: %s answered %d, want %d", c.err, res.User, res.ErrorCode, c.code)
			}
		}
	}
}

// A node's file cannot be a cluster's users: New refuses it.
func TestSASLInAClusterNeedsTheClusterCredentials(t *testing.T) {
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.TempDir(), store.Options{OffsetsPartitions: 3, ReplicatedOffsets: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = New(st, Options{Cluster: newFakeCluster(t), ClusterID: "c", SASL: &SASLConfig{Mechanisms: Mechanisms, Credentials: creds}})
	if err == nil {
		t.Fatal("New took a node's credentials file in a cluster")
	}
}

// The file's Put checks what it stores; Remove needs a mechanism.
func TestCredentialsPutAndRemove(t *testing.T) {
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cr, err := saltedCredential("bob", MechanismSCRAMSHA512, []byte("salt"), make([]byte, 64), 4096)
	if err != nil {
		t.Fatal(err)
	}
	short := cr
	short.ServerKey = short.ServerKey[:32]
	if err := creds.Put(ctx, short); err == nil {
		t.Error("a SHA-512 credential with a 32-byte ServerKey was stored")
	}
	if err := creds.Put(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if got, ok := creds.Lookup("bob", MechanismSCRAMSHA512); !ok || string(got.StoredKey) != string(cr.StoredKey) {
		t.Fatalf("lookup after Put: %v %+v", ok, got)
	}
	if _, err := creds.Remove(ctx, "bob", ""); err == nil {
		t.Error("Remove without a mechanism removed")
	}
	for i, want := range []bool{true, false} {
		if found, err := creds.Remove(ctx, "bob", MechanismSCRAMSHA512); err != nil || found != want {
			t.Errorf("remove %d: found %v, %v; want %v", i, found, err, want)
		}
	}
}
