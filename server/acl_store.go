package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/seglog/seglog/server/acl"
	"github.com/seglog/seglog/vfs"
)

// ACLFile is the file, in a single node's store directory, that holds its
// ACLs (docs/security.md, "ACLs"). In a cluster they live in the
// replicated metadata instead.
const ACLFile = "acls"

// The file is a smallFile frame (smallfile.go) of the entries in
// acl.Append's encoding, sorted by acl.Compare.
var aclFrame = smallFile{magic: "SGAC", version: 1, kind: "ACL", minEntry: acl.MinEncodedLen}

const (
	// aclHeaderSize is where the first entry starts.
	aclHeaderSize = smallHeaderSize
	// maxACLFile bounds the file read: a few dozen bytes an entry.
	maxACLFile = 64 << 20
)

// ACLFileError is a damaged ACL file: which file, the byte where it stops
// making sense, and why.
type ACLFileError struct {
	File   string
	Offset int64
	Reason string
}

// Error names the file, the byte and the reason.
func (e *ACLFileError) Error() string {
	return fmt.Sprintf("%s: damaged at byte %d: %s", e.File, e.Offset, e.Reason)
}

// aclStore is a single node's ACLs, as its ACLFile holds them. Every
// change rewrites the file atomically before it is seen; readers get the
// published list without a lock (authorization reads it on every
// request).
type aclStore struct {
	fs   vfs.FS
	path string

	mu   sync.Mutex // serializes changes
	list atomic.Pointer[[]acl.ACL]
}

// loadACLStore reads dir's ACL file; a missing one is no ACLs. A damaged
// one is an *ACLFileError.
func loadACLStore(fsys vfs.FS, dir string) (*aclStore, error) {
	st := &aclStore{fs: fsys, path: filepath.Join(dir, ACLFile)}
	list, err := ReadACLs(fsys, dir)
	if err != nil {
		return nil, err
	}
	st.list.Store(&list)
	return st, nil
}

// ReadACLs returns the ACLs in dir's ACL file, sorted; a missing file is
// none, a damaged one an *ACLFileError. It never writes (seglog acls
// list reads through it).
func ReadACLs(fsys vfs.FS, dir string) ([]acl.ACL, error) {
	path := filepath.Join(dir, ACLFile)
	b, err := vfs.ReadFileLimit(fsys, path, maxACLFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	list, err := decodeACLFile(b)
	if err != nil {
		var fe *ACLFileError
		if errors.As(err, &fe) {
			fe.File = path
		}
		return nil, err
	}
	return list, nil
}

// ACLs returns the published list; callers must not modify it.
func (st *aclStore) ACLs() []acl.ACL { return *st.list.Load() }

// CreateACLs adds the ACLs not already present (creating one twice is not
// an error, as in Kafka) and writes the file; the caller has validated
// them.
func (st *aclStore) CreateACLs(_ context.Context, add []acl.ACL) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	next := acl.Merge(st.ACLs(), add)
	if len(next) > acl.MaxACLs {
		return fmt.Errorf("%w: %d", acl.ErrTooMany, len(next))
	}
	return st.publish(next)
}

// DeleteACLs removes every ACL a filter matches and returns, per filter,
// the ones it removed (an ACL two filters match is the first's).
func (st *aclStore) DeleteACLs(_ context.Context, filters []acl.Filter) ([][]acl.ACL, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	next, deleted := acl.Remove(st.ACLs(), filters)
	if len(next) == len(st.ACLs()) {
		return deleted, nil
	}
	if err := st.publish(next); err != nil {
		return nil, err
	}
	return deleted, nil
}

func (st *aclStore) publish(next []acl.ACL) error {
	if err := vfs.WriteFileAtomic(st.fs, st.path, encodeACLFile(next)); err != nil {
		return err
	}
	st.list.Store(&next)
	return nil
}

func encodeACLFile(list []acl.ACL) []byte {
	b := aclFrame.begin(len(list))
	for _, a := range list {
		b = acl.Append(b, a)
	}
	return aclFrame.seal(b)
}

// decodeACLFile parses an ACL file; errors are *ACLFileError without the
// file name.
func decodeACLFile(b []byte) ([]acl.ACL, error) {
	bad := func(off int, format string, args ...any) error {
		return &ACLFileError{Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
	}
	count, end, err := aclFrame.open(b, bad)
	if err != nil {
		return nil, err
	}
	list := make([]acl.ACL, 0, count)
	rest := b[smallHeaderSize:end]
	for range count {
		off := end - len(rest)
		a, next, err := acl.Decode(rest)
		if err != nil {
			var de *acl.DecodeError
			if errors.As(err, &de) {
				return nil, bad(off+de.Offset, "%s", de.Reason)
			}
			return nil, bad(off, "%v", err)
		}
		if n := len(list); n > 0 && acl.Compare(list[n-1], a) >= 0 {
			return nil, bad(off, "entry %v out of order or repeated", a)
		}
		list = append(list, a)
		rest = next
	}
	if len(rest) != 0 {
		return nil, bad(end-len(rest), "%d bytes after the last entry", len(rest))
	}
	return list, nil
}
