package meta

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// SASL credentials in the metadata (docs/security.md, "In a cluster"):
// what a single node keeps in its sasl-credentials file, replicated so a
// user altered through any node logs in on every node. The commands carry
// exactly what the file holds, never a password.

// Refusals of the credential commands.
var (
	// ErrInvalidCredential reports a credential outside the bounds below:
	// an empty or over-long user name, a mechanism name too long, no
	// salt, keys of different or unusual lengths. What the values mean
	// (a mechanism the server speaks, Kafka's minimum of iterations) is
	// checked by the server before it proposes, as topic configs are.
	ErrInvalidCredential = errors.New("meta: invalid SASL credential")
	// ErrUnknownCredential reports a DeleteCredential of a credential the
	// metadata does not hold (Kafka's RESOURCE_NOT_FOUND).
	ErrUnknownCredential = errors.New("meta: no such SASL credential")
	// ErrCredentialsInForce reports a bootstrap SetCredential applied
	// after the metadata's credentials were set: the first bootstrap,
	// or any change through the controller, made the metadata the
	// truth, and a node's file no longer seeds it.
	ErrCredentialsInForce = errors.New("meta: the cluster's SASL credentials are already in force")
)

// Bounds of a credential: the user as the credentials file bounds it,
// the salt as its one-byte length does, the keys up to SHA-512's size.
const (
	MaxCredentialUser = 1 << 15
	maxMechanismLen   = 64
	maxSaltLen        = 255
	maxKeyLen         = 64
)

// Credential is one user's SASL secret for one mechanism, as a node's
// credentials file holds it (server.Credential): the salt, the PBKDF2
// iterations and SCRAM's StoredKey and ServerKey (KIP-554), which prove a
// password without being it.
type Credential struct {
	// User is the user name, 1 to MaxCredentialUser bytes of UTF-8.
	User string
	// Mechanism is the SASL mechanism's name (SCRAM-SHA-256, ...).
	Mechanism string
	// Iterations is the PBKDF2 iteration count, 1 or more.
	Iterations int32
	// Salt is 1 to 255 bytes.
	Salt []byte
	// StoredKey and ServerKey have the same length, 16 to 64 bytes.
	StoredKey []byte
	ServerKey []byte
}

func (c Credential) clone() Credential {
	c.Salt = slices.Clone(c.Salt)
	c.StoredKey = slices.Clone(c.StoredKey)
	c.ServerKey = slices.Clone(c.ServerKey)
	return c
}

// check bounds a credential; the error wraps ErrInvalidCredential.
func (c Credential) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: user %.64q %s: %s", ErrInvalidCredential, c.User, c.Mechanism, fmt.Sprintf(format, args...))
	}
	switch {
	case c.User == "" || len(c.User) > MaxCredentialUser || !utf8.ValidString(c.User):
		return bad("user name of %d bytes, want 1 to %d of UTF-8", len(c.User), MaxCredentialUser)
	case c.Mechanism == "" || len(c.Mechanism) > maxMechanismLen:
		return bad("mechanism name of %d bytes, want 1 to %d", len(c.Mechanism), maxMechanismLen)
	case c.Iterations < 1:
		return bad("%d iterations", c.Iterations)
	case len(c.Salt) == 0 || len(c.Salt) > maxSaltLen:
		return bad("salt of %d bytes, want 1 to %d", len(c.Salt), maxSaltLen)
	case len(c.StoredKey) < 16 || len(c.StoredKey) > maxKeyLen || len(c.ServerKey) != len(c.StoredKey):
		return bad("keys of %d and %d bytes, want the same length, 16 to %d", len(c.StoredKey), len(c.ServerKey), maxKeyLen)
	}
	return nil
}

// credKey names a credential in State.
type credKey struct{ user, mech string }

func compareCredKeys(a, b credKey) int {
	if n := strings.Compare(a.user, b.user); n != 0 {
		return n
	}
	return strings.Compare(a.mech, b.mech)
}

// SetCredential adds or replaces credentials, all or none. With
// Bootstrap, it is a node's file seeding a cluster whose credentials
// were never set: Apply refuses it (ErrCredentialsInForce) once any
// credential command has been applied, so of the nodes racing to seed,
// the first to be applied wins and the others' files are ignored.
type SetCredential struct {
	// Credentials are the credentials to set, at least one, each
	// user and mechanism at most once.
	Credentials []Credential
	// Bootstrap marks a seed from a node's credentials file.
	Bootstrap bool
}

// DeleteCredential removes a user's credential for one mechanism.
type DeleteCredential struct {
	// User and Mechanism name the credential.
	User      string
	Mechanism string
}

const (
	kindSetCredential    kind = 8
	kindDeleteCredential kind = 9
)

func (*SetCredential) kind() kind    { return kindSetCredential }
func (*DeleteCredential) kind() kind { return kindDeleteCredential }

func (c *SetCredential) encodeBody(w *writer) {
	w.bool(c.Bootstrap)
	w.uvarint(uint64(len(c.Credentials)))
	for _, cr := range c.Credentials {
		writeCredential(w, cr)
	}
}

func (c *DeleteCredential) encodeBody(w *writer) {
	w.str(c.User)
	w.str(c.Mechanism)
}

func writeCredential(w *writer, c Credential) {
	w.str(c.User)
	w.str(c.Mechanism)
	w.varint(int64(c.Iterations))
	w.str(string(c.Salt))
	w.str(string(c.StoredKey))
	w.str(string(c.ServerKey))
}

// minCredential is the fewest bytes an encoded credential takes: each
// field's length and one byte of the user, mechanism and salt, and two
// keys of 16 bytes.
const minCredential = 6 + 3 + 2*16

// readCredential reads what writeCredential wrote and refuses a
// credential out of bounds, as damage (ErrBadEncoding): no node ever
// writes one.
func readCredential(r *reader) Credential {
	c := Credential{User: r.str(), Mechanism: r.str(), Iterations: r.int32()}
	c.Salt = []byte(r.str())
	c.StoredKey = []byte(r.str())
	c.ServerKey = []byte(r.str())
	if r.err == nil {
		if err := c.check(); err != nil {
			r.fail("%v", err)
		}
	}
	return c
}

func decodeSetCredential(r *reader, c *SetCredential) {
	c.Bootstrap = r.bool()
	n := r.count(minCredential)
	for i := 0; i < n && r.err == nil; i++ {
		c.Credentials = append(c.Credentials, readCredential(r))
	}
}

func decodeDeleteCredential(r *reader, c *DeleteCredential) {
	c.User = r.str()
	c.Mechanism = r.str()
}

func (s *State) setCredential(c *SetCredential) (*State, error) {
	if len(c.Credentials) == 0 {
		return nil, fmt.Errorf("%w: no credential to set", ErrInvalidCredential)
	}
	if c.Bootstrap && s.credsInForce {
		return nil, ErrCredentialsInForce
	}
	seen := make(map[credKey]bool, len(c.Credentials))
	for _, cr := range c.Credentials {
		if err := cr.check(); err != nil {
			return nil, err
		}
		k := credKey{cr.User, cr.Mechanism}
		if seen[k] {
			return nil, fmt.Errorf("%w: user %.64q %s set twice", ErrInvalidCredential, cr.User, cr.Mechanism)
		}
		seen[k] = true
	}
	n := s.next()
	for _, cr := range c.Credentials {
		n.creds[credKey{cr.User, cr.Mechanism}] = cr.clone()
	}
	n.credsInForce = true
	return n, nil
}

func (s *State) deleteCredential(c *DeleteCredential) (*State, error) {
	k := credKey{c.User, c.Mechanism}
	if _, ok := s.creds[k]; !ok {
		return nil, fmt.Errorf("%w: user %.64q %s", ErrUnknownCredential, c.User, c.Mechanism)
	}
	n := s.next()
	delete(n.creds, k)
	n.credsInForce = true
	return n, nil
}

// Credential returns a copy of user's credential for mech.
func (s *State) Credential(user, mech string) (Credential, bool) {
	c, ok := s.creds[credKey{user, mech}]
	if !ok {
		return Credential{}, false
	}
	return c.clone(), true
}

// Credentials returns copies of every credential, by user then
// mechanism.
func (s *State) Credentials() []Credential {
	keys := slices.SortedFunc(maps.Keys(s.creds), compareCredKeys)
	out := make([]Credential, len(keys))
	for i, k := range keys {
		out[i] = s.creds[k].clone()
	}
	return out
}

// CredentialsInForce reports whether the metadata's credentials are the
// cluster's: once any SetCredential or DeleteCredential was applied,
// even if every credential has been deleted since. Before, nodes seed
// them from their files (SetCredential.Bootstrap).
func (s *State) CredentialsInForce() bool { return s.credsInForce }

// encodeCredentials appends the snapshot's credentials section: whether
// they are in force, then every credential by user and mechanism.
func encodeCredentials(w *writer, s *State) {
	w.bool(s.credsInForce)
	keys := slices.SortedFunc(maps.Keys(s.creds), compareCredKeys)
	w.uvarint(uint64(len(keys)))
	for _, k := range keys {
		writeCredential(w, s.creds[k])
	}
}

// decodeCredentials reads the section, refusing credentials out of
// order or repeated so a decoded State encodes to the same bytes.
func decodeCredentials(r *reader, s *State) {
	s.credsInForce = r.bool()
	n := r.count(minCredential)
	var prev credKey
	for i := 0; i < n && r.err == nil; i++ {
		c := readCredential(r)
		k := credKey{c.User, c.Mechanism}
		if i > 0 && compareCredKeys(k, prev) <= 0 {
			r.fail("credential of user %.64q %s after user %.64q %s", k.user, k.mech, prev.user, prev.mech)
		}
		prev = k
		s.creds[k] = c
	}
	if r.err == nil && n > 0 && !s.credsInForce {
		r.fail("%d credentials not in force", n)
	}
}
