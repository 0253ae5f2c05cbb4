package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/seglog/seglog/vfs"
)

// CredentialsFile is the file, in a store's directory, that holds its SASL
// users (docs/security.md): per user and mechanism, KIP-554's salt,
// iterations, StoredKey and ServerKey. No password is ever written, PLAIN
// ones included.
const CredentialsFile = "sasl-credentials"

// The file is a smallFile frame (smallfile.go) of entries. An entry is
// the user (uint16 length, UTF-8), the mechanism (uint8: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512,
// 3 PLAIN), the iterations (uint32), the salt (uint8 length) and the two
// keys (the mechanism's hash size each).
var credFrame = smallFile{magic: "SGCR", version: 1, kind: "credentials", minEntry: minCredEntry}

const (
	// minCredEntry is the smallest entry: a one-byte user, a one-byte
	// salt and two SHA-256 keys. It bounds the count a header may claim.
	minCredEntry = 2 + 1 + 1 + 4 + 1 + 1 + 2*32
	// maxCredFile bounds the file read: a few hundred bytes a user.
	maxCredFile = 64 << 20
)

// Credential is one user's secret for one mechanism: what proves a
// password without being it.
type Credential struct {
	User       string
	Mechanism  string
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// CredentialsError is a damaged credentials file: which file, the byte
// where it stops making sense, and why.
type CredentialsError struct {
	File   string
	Offset int64
	Reason string
}

// Error names the file, the byte and the reason.
func (e *CredentialsError) Error() string {
	return fmt.Sprintf("%s: damaged at byte %d: %s", e.File, e.Offset, e.Reason)
}

// CredentialStore is where a server finds its SASL users and changes
// them (SASLConfig.Credentials): a store's CredentialsFile on a single
// node (*Credentials), the replicated metadata in a cluster (the cluster
// node's, docs/security.md "In a cluster"). The server checks a
// credential before it puts it.
type CredentialStore interface {
	// Lookup returns user's credential for mech.
	Lookup(user, mech string) (Credential, bool)
	// List returns every credential, by user then mechanism.
	List() []Credential
	// Put adds cr, or replaces user's credential for its mechanism, and
	// returns once Lookup here finds it.
	Put(ctx context.Context, cr Credential) error
	// Remove deletes user's credential for mech; found is false, and
	// nothing changed, when there was none.
	Remove(ctx context.Context, user, mech string) (found bool, err error)
}

var _ CredentialStore = (*Credentials)(nil)

// Credentials are a store's SASL users, as its CredentialsFile holds
// them. Every change rewrites the file atomically before it is seen.
type Credentials struct {
	fs   vfs.FS
	path string

	mu    sync.Mutex
	creds map[credKey]Credential
}

type credKey struct{ user, mech string }

// LoadCredentials reads dir's credentials file; a missing one is no
// users. A damaged one is a *CredentialsError.
func LoadCredentials(fsys vfs.FS, dir string) (*Credentials, error) {
	c := &Credentials{fs: fsys, path: filepath.Join(dir, CredentialsFile), creds: make(map[credKey]Credential)}
	b, err := vfs.ReadFileLimit(fsys, c.path, maxCredFile)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	list, err := decodeCredentials(b)
	if err != nil {
		var ce *CredentialsError
		if errors.As(err, &ce) {
			ce.File = c.path
		}
		return nil, err
	}
	for _, cr := range list {
		c.creds[credKey{cr.User, cr.Mechanism}] = cr
	}
	return c, nil
}

// List returns every credential, by user then mechanism.
func (c *Credentials) List() []Credential {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sortedLocked()
}

func (c *Credentials) sortedLocked() []Credential {
	out := make([]Credential, 0, len(c.creds))
	for _, cr := range c.creds {
		out = append(out, cr)
	}
	slices.SortFunc(out, func(a, b Credential) int {
		if n := strings.Compare(a.User, b.User); n != 0 {
			return n
		}
		return strings.Compare(a.Mechanism, b.Mechanism)
	})
	return out
}

// Lookup returns user's credential for mech.
func (c *Credentials) Lookup(user, mech string) (Credential, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cr, ok := c.creds[credKey{user, mech}]
	return cr, ok
}

// SetPassword adds or replaces user's credential for mech, derived from
// password with a fresh salt and iterations (0 means MinIterations).
func (c *Credentials) SetPassword(user, mech, password string, iterations int) error {
	if iterations == 0 {
		iterations = MinIterations
	}
	h, ok := mechanismHash(mech)
	if !ok {
		return fmt.Errorf("unknown SASL mechanism %q (one of %s)", mech, strings.Join(Mechanisms, ", "))
	}
	salt := newSalt()
	salted, err := saltPassword(h, password, salt, iterations)
	if err != nil {
		return err
	}
	return c.SetSalted(user, mech, salt, salted, iterations)
}

// SetSalted adds or replaces user's credential for mech from a password
// already salted (AlterUserScramCredentials sends it so).
func (c *Credentials) SetSalted(user, mech string, salt, salted []byte, iterations int) error {
	cr, err := saltedCredential(user, mech, salt, salted, iterations)
	if err != nil {
		return err
	}
	return c.Put(context.Background(), cr)
}

// Put adds or replaces cr in the file (CredentialStore); ctx is unused,
// the write being local.
func (c *Credentials) Put(_ context.Context, cr Credential) error {
	if err := checkStored(cr); err != nil {
		return err
	}
	cr.Salt, cr.StoredKey, cr.ServerKey = slices.Clone(cr.Salt), slices.Clone(cr.StoredKey), slices.Clone(cr.ServerKey)
	return c.update(func(m map[credKey]Credential) { m[credKey{cr.User, cr.Mechanism}] = cr })
}

// Remove deletes user's credential for mech from the file
// (CredentialStore).
func (c *Credentials) Remove(_ context.Context, user, mech string) (bool, error) {
	if mech == "" {
		return false, errors.New("no SASL mechanism named")
	}
	n, err := c.Delete(user, mech)
	return n > 0, err
}

// saltedCredential derives the credential of a password already salted:
// what is stored instead of it.
func saltedCredential(user, mech string, salt, salted []byte, iterations int) (Credential, error) {
	if err := checkSalted(user, mech, salt, salted, iterations); err != nil {
		return Credential{}, err
	}
	h, _ := mechanismHash(mech)
	stored, server := scramKeys(h, salted)
	return Credential{User: user, Mechanism: mech, Iterations: iterations,
		Salt: slices.Clone(salt), StoredKey: stored, ServerKey: server}, nil
}

// checkStored refuses a credential the file could not hold or a login
// could not use: checkSalted's checks, on the derived keys.
func checkStored(cr Credential) error {
	h, ok := mechanismHash(cr.Mechanism)
	if !ok {
		return fmt.Errorf("unknown SASL mechanism %q", cr.Mechanism)
	}
	if err := checkCredential(cr.User, cr.Iterations, cr.Salt); err != nil {
		return err
	}
	if len(cr.StoredKey) != h().Size() || len(cr.ServerKey) != h().Size() {
		return fmt.Errorf("keys of %d and %d bytes, want %d for %s", len(cr.StoredKey), len(cr.ServerKey), h().Size(), cr.Mechanism)
	}
	return nil
}

// Delete removes user's credential for mech, or every one of user's when
// mech is empty, and returns how many went; none is not an error, and
// then nothing is written.
func (c *Credentials) Delete(user, mech string) (int, error) {
	match := func(k credKey) bool { return k.user == user && (mech == "" || k.mech == mech) }
	n := 0
	for _, cr := range c.List() {
		if match(credKey{cr.User, cr.Mechanism}) {
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	return n, c.update(func(m map[credKey]Credential) {
		for k := range m {
			if match(k) {
				delete(m, k)
			}
		}
	})
}

// update applies f to a copy and writes it; the change is seen only once
// the file holds it.
func (c *Credentials) update(f func(map[credKey]Credential)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[credKey]Credential, len(c.creds)+1)
	for k, v := range c.creds {
		next[k] = v
	}
	f(next)
	old := c.creds
	c.creds = next
	b := encodeCredentials(c.sortedLocked())
	if err := vfs.WriteFileAtomic(c.fs, c.path, b); err != nil {
		c.creds = old
		return err
	}
	return nil
}

// checkSalted refuses a credential the file could not hold or a login
// could not use.
func checkSalted(user, mech string, salt, salted []byte, iterations int) error {
	h, ok := mechanismHash(mech)
	if !ok {
		return fmt.Errorf("unknown SASL mechanism %q", mech)
	}
	if err := checkCredential(user, iterations, salt); err != nil {
		return err
	}
	if len(salted) != h().Size() {
		return fmt.Errorf("salted password of %d bytes, want %d for %s", len(salted), h().Size(), mech)
	}
	return nil
}

func checkCredential(user string, iterations int, salt []byte) error {
	if user == "" || len(user) > 1<<15 || !utf8.ValidString(user) {
		return fmt.Errorf("user name %q: want 1 to 32768 bytes of UTF-8", user)
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return fmt.Errorf("%d iterations, want %d to %d", iterations, MinIterations, MaxIterations)
	}
	if len(salt) == 0 || len(salt) > 255 {
		return fmt.Errorf("salt of %d bytes, want 1 to 255", len(salt))
	}
	return nil
}

var credMechCodes = []string{1: MechanismSCRAMSHA256, 2: MechanismSCRAMSHA512, 3: MechanismPlain}

func encodeCredentials(list []Credential) []byte {
	b := credFrame.begin(len(list))
	for _, cr := range list {
		b = binary.BigEndian.AppendUint16(b, uint16(len(cr.User)))
		b = append(b, cr.User...)
		b = append(b, byte(slices.Index(credMechCodes, cr.Mechanism)))
		b = binary.BigEndian.AppendUint32(b, uint32(cr.Iterations))
		b = append(b, byte(len(cr.Salt)))
		b = append(b, cr.Salt...)
		b = append(b, cr.StoredKey...)
		b = append(b, cr.ServerKey...)
	}
	return credFrame.seal(b)
}

// decodeCredentials parses a credentials file; errors are
// *CredentialsError without the file name.
func decodeCredentials(b []byte) ([]Credential, error) {
	bad := func(off int, format string, args ...any) error {
		return &CredentialsError{Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
	}
	count, end, err := credFrame.open(b, bad)
	if err != nil {
		return nil, err
	}
	list := make([]Credential, 0, count)
	seen := make(map[credKey]bool, count)
	off := smallHeaderSize
	need := func(n int) bool { return off+n <= end }
	for range count {
		start := off
		if !need(2) {
			return nil, bad(off, "entry cut short")
		}
		n := int(binary.BigEndian.Uint16(b[off:]))
		off += 2
		if n == 0 || !need(n) || !utf8.Valid(b[off:off+n]) {
			return nil, bad(start, "bad user name")
		}
		cr := Credential{User: string(b[off : off+n])}
		off += n
		if !need(1 + 4 + 1) {
			return nil, bad(off, "entry cut short")
		}
		code := int(b[off])
		if code == 0 || code >= len(credMechCodes) {
			return nil, bad(off, "unknown mechanism %d", code)
		}
		cr.Mechanism = credMechCodes[code]
		h, _ := mechanismHash(cr.Mechanism)
		cr.Iterations = int(binary.BigEndian.Uint32(b[off+1:]))
		if cr.Iterations < MinIterations || cr.Iterations > MaxIterations {
			return nil, bad(off+1, "%d iterations", cr.Iterations)
		}
		saltLen := int(b[off+5])
		off += 6
		keys := 2 * h().Size()
		if saltLen == 0 || !need(saltLen+keys) {
			return nil, bad(off-1, "salt of %d bytes and keys cut short", saltLen)
		}
		cr.Salt = slices.Clone(b[off : off+saltLen])
		off += saltLen
		cr.StoredKey = slices.Clone(b[off : off+keys/2])
		cr.ServerKey = slices.Clone(b[off+keys/2 : off+keys])
		off += keys
		k := credKey{cr.User, cr.Mechanism}
		if seen[k] {
			return nil, bad(start, "second %s credential of user %q", cr.Mechanism, cr.User)
		}
		seen[k] = true
		list = append(list, cr)
	}
	if off != end {
		return nil, bad(off, "%d bytes after the last entry", end-off)
	}
	return list, nil
}
