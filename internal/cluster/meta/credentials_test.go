package meta

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// sampleCredential is a credential with keys of size bytes, its bytes
// derived from the user so that two credentials differ.
func sampleCredential(user, mech string, size int) Credential {
	fill := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	return Credential{User: user, Mechanism: mech, Iterations: 4096,
		Salt: fill(32, user[0]), StoredKey: fill(size, user[0]+1), ServerKey: fill(size, user[0]+2)}
}

func TestCredentialCommands(t *testing.T) {
	alice := sampleCredential("alice", "SCRAM-SHA-256", 32)
	alice512 := sampleCredential("alice", "SCRAM-SHA-512", 64)
	bob := sampleCredential("bob", "SCRAM-SHA-256", 32)
	carol := sampleCredential("carol", "PLAIN", 32)
	newAlice := alice
	newAlice.Iterations = 8192
	f := NewFSM()
	if f.State().CredentialsInForce() {
		t.Fatal("an empty state has credentials in force")
	}
	res := applyAll(t, f,
		&SetCredential{Credentials: []Credential{alice, bob}, Bootstrap: true},
		// A second seed, another node's file, loses to the first.
		&SetCredential{Credentials: []Credential{carol}, Bootstrap: true},
		&SetCredential{Credentials: []Credential{newAlice, alice512}},
		&DeleteCredential{User: "bob", Mechanism: "SCRAM-SHA-256"},
		&DeleteCredential{User: "bob", Mechanism: "SCRAM-SHA-256"},
		&DeleteCredential{User: "alice", Mechanism: "PLAIN"},
	)
	for i, want := range []error{nil, ErrCredentialsInForce, nil, nil, ErrUnknownCredential, ErrUnknownCredential} {
		if !errors.Is(res[i].Err, want) {
			t.Errorf("command %d: %v, want %v", i, res[i].Err, want)
		}
	}
	st := f.State()
	if got, want := st.Credentials(), []Credential{newAlice, alice512}; !reflect.DeepEqual(got, want) {
		t.Errorf("credentials %+v, want %+v", got, want)
	}
	if _, ok := st.Credential("carol", "PLAIN"); ok {
		t.Error("the losing seed's credential is in the state")
	}
	// What the state hands out is a copy.
	got, _ := st.Credential("alice", "SCRAM-SHA-256")
	got.StoredKey[0]++
	if again, _ := st.Credential("alice", "SCRAM-SHA-256"); !bytes.Equal(again.StoredKey, newAlice.StoredKey) {
		t.Error("changing a returned credential changed the state")
	}
	// Once every credential is deleted, the metadata is still the truth:
	// a node's file does not seed it again.
	res = applyAll(t, f,
		&DeleteCredential{User: "alice", Mechanism: "SCRAM-SHA-256"},
		&DeleteCredential{User: "alice", Mechanism: "SCRAM-SHA-512"},
		&SetCredential{Credentials: []Credential{carol}, Bootstrap: true},
	)
	for i, want := range []error{nil, nil, ErrCredentialsInForce} {
		if !errors.Is(res[i].Err, want) {
			t.Errorf("command %d after: %v, want %v", i, res[i].Err, want)
		}
	}
	if st := f.State(); len(st.Credentials()) != 0 || !st.CredentialsInForce() {
		t.Errorf("after deleting every credential: %d left, in force %v", len(st.Credentials()), st.CredentialsInForce())
	}
}

func TestCredentialBounds(t *testing.T) {
	ok := sampleCredential("alice", "SCRAM-SHA-256", 32)
	with := func(f func(*Credential)) Credential {
		c := ok
		f(&c)
		return c
	}
	for name, c := range map[string]Credential{
		"empty user":       with(func(c *Credential) { c.User = "" }),
		"long user":        with(func(c *Credential) { c.User = strings.Repeat("u", MaxCredentialUser+1) }),
		"user not UTF-8":   with(func(c *Credential) { c.User = "\xff" }),
		"empty mechanism":  with(func(c *Credential) { c.Mechanism = "" }),
		"long mechanism":   with(func(c *Credential) { c.Mechanism = strings.Repeat("M", maxMechanismLen+1) }),
		"no iterations":    with(func(c *Credential) { c.Iterations = 0 }),
		"no salt":          with(func(c *Credential) { c.Salt = nil }),
		"long salt":        with(func(c *Credential) { c.Salt = make([]byte, maxSaltLen+1) }),
		"short keys":       with(func(c *Credential) { c.StoredKey, c.ServerKey = make([]byte, 8), make([]byte, 8) }),
		"keys that differ": with(func(c *Credential) { c.ServerKey = make([]byte, 64) }),
	} {
		// Apply refuses it (a command built in this process)...
		s := emptyState()
		if _, _, err := s.apply(1, &SetCredential{Credentials: []Credential{c}}); !errors.Is(err, ErrInvalidCredential) {
			t.Errorf("%s: apply answered %v, want ErrInvalidCredential", name, err)
		}
		// ... and Decode refuses its encoding as damage, with no panic.
		b, err := Encode(&SetCredential{Credentials: []Credential{c}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := Decode(b); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("%s: decode answered %v, want ErrBadEncoding", name, err)
		}
	}
	if _, _, err := emptyState().apply(1, &SetCredential{}); !errors.Is(err, ErrInvalidCredential) {
		t.Errorf("no credential: %v, want ErrInvalidCredential", err)
	}
	if _, _, err := emptyState().apply(1, &SetCredential{Credentials: []Credential{ok, ok}}); !errors.Is(err, ErrInvalidCredential) {
		t.Errorf("a credential twice: %v, want ErrInvalidCredential", err)
	}
	// A count no input could hold is refused before anything is made.
	huge := []byte{byte(kindSetCredential), commandVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := Decode(huge); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("a count of 2^32: %v, want ErrBadEncoding", err)
	}
}

// credentialState is populated's state with credentials in force.
func credentialState(t testing.TB) *State {
	s := populated(t)
	n, _, err := s.apply(s.index+1, &SetCredential{Credentials: []Credential{
		sampleCredential("bob", "SCRAM-SHA-512", 64), sampleCredential("alice", "SCRAM-SHA-256", 32),
		sampleCredential("alice", "PLAIN", 32)}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCredentialSnapshot(t *testing.T) {
	s := credentialState(t)
	b := EncodeState(s)
	got, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Credentials(), s.Credentials()) || !got.CredentialsInForce() {
		t.Fatalf("restored %+v (in force %v), want %+v", got.Credentials(), got.CredentialsInForce(), s.Credentials())
	}
	if !bytes.Equal(EncodeState(got), b) {
		t.Error("a decoded state does not encode to the same bytes")
	}
	// A version 2 snapshot has no credentials section: it restores
	// with none, not in force.
	v2 := asVersion2(EncodeState(populated(t)))
	if old, err := DecodeState(v2); err != nil || len(old.Credentials()) != 0 || old.CredentialsInForce() {
		t.Errorf("version 2 snapshot: %v", err)
	}
	// Damage in the section is refused, never misread: every cut, and
	// every byte changed in it.
	section := len(EncodeState(populated(t))) - emptyV3Sections
	for i := section; i < len(b); i++ {
		if _, err := DecodeState(b[:i]); !errors.Is(err, ErrBadEncoding) {
			t.Fatalf("cut at %d/%d: %v, want ErrBadEncoding", i, len(b), err)
		}
		for _, x := range []byte{0x01, 0x80, 0xff} {
			d := bytes.Clone(b)
			d[i] ^= x
			if s, err := DecodeState(d); err == nil && !bytes.Equal(EncodeState(s), d) {
				t.Fatalf("byte %d ^ %#x: decoded a state that encodes differently", i, x)
			}
		}
	}
	// Credentials out of order, or repeated, are refused.
	w := &writer{}
	w.bool(true)
	w.uvarint(2)
	writeCredential(w, sampleCredential("bob", "PLAIN", 32))
	writeCredential(w, sampleCredential("alice", "PLAIN", 32))
	// The section replaced in an empty State's encoding, the sections
	// after it kept.
	enc := EncodeState(emptyState())
	start := len(enc) - emptyV3Sections
	withSection := func(section []byte) []byte {
		return append(append(append([]byte(nil), enc[:start]...), section...), enc[start+emptyCredentialsSection:]...)
	}
	bad := withSection(w.b)
	bad[len(snapshotMagic)] = snapshotVersion
	if _, err := DecodeState(bad); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("credentials out of order: %v, want ErrBadEncoding", err)
	}
	// Credentials with the section saying none are in force.
	w = &writer{}
	w.bool(false)
	w.uvarint(1)
	writeCredential(w, sampleCredential("alice", "PLAIN", 32))
	bad = withSection(w.b)
	if _, err := DecodeState(bad); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("credentials not in force: %v, want ErrBadEncoding", err)
	}
}
