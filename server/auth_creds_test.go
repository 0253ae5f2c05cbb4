package server

import (
	"bytes"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seglog/seglog/internal/crc32c"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

func TestCredentialsPersist(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCredentials(fs, "/d")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Mechanisms {
		if err := c.SetPassword("alice", m, "pw-"+m, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SetPassword("bob", MechanismSCRAMSHA512, "bob", 8192); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Delete("alice", MechanismSCRAMSHA512); n != 1 || err != nil {
		t.Fatalf("delete: %d, %v", n, err)
	}
	again, err := LoadCredentials(fs, "/d")
	if err != nil {
		t.Fatal(err)
	}
	list := again.List()
	var got []string
	for _, cr := range list {
		got = append(got, cr.User+"/"+cr.Mechanism)
	}
	if strings.Join(got, " ") != "alice/PLAIN alice/SCRAM-SHA-256 bob/SCRAM-SHA-512" {
		t.Fatalf("reloaded %v", got)
	}
	for _, cr := range list {
		want := "pw-" + cr.Mechanism
		if cr.User == "bob" {
			want = "bob"
		}
		if !checkPassword(cr, want) || checkPassword(cr, want+"x") {
			t.Errorf("%s/%s: the reloaded credential does not check its password", cr.User, cr.Mechanism)
		}
	}
	// No password is in the file, however it is encoded.
	b := vfstest.ReadFile(t, fs, filepath.Join("/d", CredentialsFile))
	if strings.Contains(string(b), "pw-") {
		t.Fatal("a password is stored in the clear")
	}
}

// Every damaged byte, and every truncation, is a *CredentialsError naming
// the file; nothing panics or allocates what a length claims.
func TestCredentialsDamage(t *testing.T) {
	fs := vfs.NewMem()
	c, err := LoadCredentials(fs, "/")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetPassword("alice", MechanismSCRAMSHA256, "pw", 0); err != nil {
		t.Fatal(err)
	}
	name := "/" + CredentialsFile
	good := vfstest.ReadFile(t, fs, name)
	check := func(what string, b []byte) {
		t.Helper()
		vfstest.WriteFile(t, fs, name, b)
		_, err := LoadCredentials(fs, "/")
		var ce *CredentialsError
		if !errors.As(err, &ce) || ce.File != name || ce.Offset < 0 || ce.Offset > int64(len(b)) {
			t.Fatalf("%s: %v, want a *CredentialsError naming %s and a byte in it", what, err, name)
		}
	}
	for i := range good {
		b := []byte(string(good))
		b[i] ^= 0x40
		check(fmt.Sprintf("byte %d flipped", i), b)
	}
	for n := range len(good) {
		check("truncated", good[:n])
	}
	// A checksum made right over a header claiming a huge count.
	b := []byte(string(good[:len(good)-4]))
	b[6], b[7] = 0x7f, 0xff
	vfstest.WriteFile(t, fs, name, binary.BigEndian.AppendUint32(b, crc32c.Checksum(b)))
	var ce *CredentialsError
	if _, err := LoadCredentials(fs, "/"); !errors.As(err, &ce) || ce.Offset != 6 {
		t.Fatalf("a count the file cannot hold: %v, want damage at byte 6", err)
	}
}

// DescribeUserScramCredentials and AlterUserScramCredentials, as kadm
// and kafka-configs.sh send them: a user added through the protocol can
// log in, and one deleted cannot.
func TestSCRAMCredentialsAdmin(t *testing.T) {
	ts, creds := saslServer(t)
	cl := ts.client(kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()))
	ctx := testCtx(t)

	desc, err := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(desc.Results) != 1 || desc.Results[0].User != "alice" || len(desc.Results[0].CredentialInfos) != 2 {
		t.Fatalf("describe all: %+v", desc.Results)
	}

	salt := []byte("0123456789abcdef")
	salted, err := saltPassword(sha512.New, "carol-pw", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	alter.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		{Name: "carol", Mechanism: 2, Iterations: 4096, Salt: salt, SaltedPassword: salted},
		{Name: "dave", Mechanism: 1, Iterations: 100, Salt: salt, SaltedPassword: salted[:32]},
	}
	alter.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}}
	ar, err := alter.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, r := range ar.Results {
		codes[r.User] = r.ErrorCode
	}
	if codes["carol"] != 0 || codes["dave"] != kerr.UnacceptableCredential.Code || codes["nobody"] != kerr.ResourceNotFound.Code {
		t.Fatalf("alter results %v", codes)
	}
	carol := ts.client(kgo.SASL(scram.Auth{User: "carol", Pass: "carol-pw"}.AsSha512Mechanism()))
	if err := carol.Ping(ctx); err != nil {
		t.Fatalf("carol, added through the protocol: %v", err)
	}
	if _, ok := creds.Lookup("dave", MechanismSCRAMSHA256); ok {
		t.Fatal("a credential with 100 iterations was stored")
	}

	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "carol", Mechanism: 2}}
	if r, err := del.RequestWith(ctx, cl); err != nil || r.Results[0].ErrorCode != 0 {
		t.Fatalf("delete carol: %v %+v", err, r)
	}
	one := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	one.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "carol"}}
	if r, err := one.RequestWith(ctx, cl); err != nil || r.Results[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Fatalf("describe carol after delete: %v %+v", err, r)
	}
}

// FuzzSASLInput feeds arbitrary bytes to everything that parses what a
// client or the disk sends before authentication: the credentials file,
// a PLAIN message and both SCRAM client messages. Nothing may panic; a
// file that decodes must encode back to the same bytes.
func FuzzSASLInput(f *testing.F) {
	c, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		f.Fatal(err)
	}
	if err := c.SetPassword("alice", MechanismSCRAMSHA512, "pw", 0); err != nil {
		f.Fatal(err)
	}
	f.Add(encodeCredentials(c.List()))
	f.Add([]byte("n,,n=alice,r=abc"))
	f.Add([]byte("\x00alice\x00pw"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if list, err := decodeCredentials(b); err == nil && !bytes.Equal(encodeCredentials(list), b) {
			t.Fatalf("decoded %d credentials that encode differently", len(list))
		}
		parsePlain(b)
		x := &scramExchange{mech: MechanismSCRAMSHA512, lookup: func(u string) (Credential, bool) { return c.Lookup(u, MechanismSCRAMSHA512) }}
		if _, err := x.first(b); err != nil {
			x.first([]byte("n,,n=alice,r=abc"))
		}
		x.final(b)
	})
}

// A change that fails at any filesystem operation is an error, is not
// seen by logins, and leaves a file that loads, with the users before or
// after it, also after a power loss; nothing valid is lost.
func TestCredentialsWriteFaults(t *testing.T) {
	for n := 1; ; n++ {
		mem := vfs.NewMem()
		base, err := LoadCredentials(mem, "/")
		if err != nil {
			t.Fatal(err)
		}
		if err := base.SetPassword("alice", MechanismPlain, "a", 0); err != nil {
			t.Fatal(err)
		}
		calls, armed := 0, false
		fs := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
			if !armed {
				return nil
			}
			calls++
			if calls == n {
				return errors.New("disk on fire")
			}
			return nil
		}))
		c, err := LoadCredentials(fs, "/")
		if err != nil {
			t.Fatal(err)
		}
		armed = true // the n-th operation of the write fails
		err = c.SetPassword("bob", MechanismPlain, "b", 0)
		if err == nil {
			if n < 6 {
				t.Fatalf("the write took only %d operations", n-1)
			}
			return // every operation of the write has had its fault
		}
		if _, ok := c.Lookup("bob", MechanismPlain); ok {
			t.Fatalf("fault at operation %d: bob is seen though the write failed", n)
		}
		for _, fsys := range []vfs.FS{mem, mem.CrashClone()} {
			after, err := LoadCredentials(fsys, "/")
			if err != nil {
				t.Fatalf("fault at operation %d: the file no longer loads: %v", n, err)
			}
			if _, ok := after.Lookup("alice", MechanismPlain); !ok {
				t.Fatalf("fault at operation %d: alice is lost", n)
			}
		}
	}
}
