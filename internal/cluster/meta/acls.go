package meta

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/server/acl"
)

// The cluster's ACLs (docs/security.md, "ACLs"): kept in the replicated
// metadata so every node authorizes requests against the same list, the
// one it has applied. CreateAcls and DeleteAcls are commands the
// controller proposes; Apply checks each entry as Kafka's
// AclControlManager does, so a command no node would accept changes
// nothing anywhere.

// CreateACLs adds ACLs; ones already present are not an error.
type CreateACLs struct {
	// ACLs are the entries to add, each valid (acl.Validate).
	ACLs []acl.ACL
}

// DeleteACLs removes every ACL one of Filters matches; the Result lists,
// per filter, the ACLs it removed.
type DeleteACLs struct {
	// Filters select the ACLs to remove (acl.ValidateFilter).
	Filters []acl.Filter
}

func (*CreateACLs) kind() kind { return kindCreateACLs }
func (*DeleteACLs) kind() kind { return kindDeleteACLs }

func (c *CreateACLs) encodeBody(w *writer) {
	w.uvarint(uint64(len(c.ACLs)))
	for _, a := range c.ACLs {
		w.b = acl.Append(w.b, a)
	}
}

func (c *CreateACLs) decodeBody(r *reader) {
	n := r.count(acl.MinEncodedLen)
	for i := 0; i < n && r.err == nil; i++ {
		c.ACLs = append(c.ACLs, r.acl())
	}
}

// A filter is its four codes, then the name, principal and host, each a
// presence byte and, when present, the string.
func (c *DeleteACLs) encodeBody(w *writer) {
	w.uvarint(uint64(len(c.Filters)))
	for _, f := range c.Filters {
		w.b = append(w.b, byte(f.ResourceType), byte(f.Pattern), byte(f.Operation), byte(f.Permission))
		for _, s := range []*string{f.Name, f.Principal, f.Host} {
			w.bool(s != nil)
			if s != nil {
				w.str(*s)
			}
		}
	}
}

func (c *DeleteACLs) decodeBody(r *reader) {
	n := r.count(4 + 3)
	for i := 0; i < n && r.err == nil; i++ {
		f := acl.Filter{ResourceType: kmsg.ACLResourceType(r.u8()), Pattern: kmsg.ACLResourcePatternType(r.u8()),
			Operation: kmsg.ACLOperation(r.u8()), Permission: kmsg.ACLPermissionType(r.u8())}
		for _, s := range []**string{&f.Name, &f.Principal, &f.Host} {
			if r.bool() {
				v := r.str()
				*s = &v
			}
		}
		c.Filters = append(c.Filters, f)
	}
}

// acl reads one entry in acl.Append's encoding.
func (r *reader) acl() acl.ACL {
	if r.err != nil {
		return acl.ACL{}
	}
	a, rest, err := acl.Decode(r.b)
	if err != nil {
		r.fail("%v", err)
		return acl.ACL{}
	}
	r.b = rest
	return a
}

func (s *State) createACLs(c *CreateACLs) (*State, error) {
	for _, a := range c.ACLs {
		if err := acl.Validate(a); err != nil {
			return nil, err
		}
	}
	next := acl.Merge(s.acls, c.ACLs)
	if len(next) > acl.MaxACLs {
		return nil, fmt.Errorf("%w: %d", acl.ErrTooMany, len(next))
	}
	n := s.next()
	n.acls = next
	return n, nil
}

func (s *State) deleteACLs(c *DeleteACLs) (*State, [][]acl.ACL, error) {
	for _, f := range c.Filters {
		if err := acl.ValidateFilter(f); err != nil {
			return nil, nil, err
		}
	}
	next, deleted := acl.Remove(s.acls, c.Filters)
	n := s.next()
	n.acls = next
	return n, deleted, nil
}

// ACLs returns the cluster's ACLs, sorted by acl.Compare. The list is
// the State's own, shared by every reader (authorization reads it on
// every request): the caller must not modify it.
func (s *State) ACLs() []acl.ACL { return s.acls }

// encodeACLs appends the snapshot's ACL section: a count and the
// entries in order.
func encodeACLs(w *writer, list []acl.ACL) {
	w.uvarint(uint64(len(list)))
	for _, a := range list {
		w.b = acl.Append(w.b, a)
	}
}

// decodeACLs reads the snapshot's ACL section, refusing entries out of
// order or repeated, so a decoded State re-encodes to the same bytes.
func decodeACLs(r *reader) []acl.ACL {
	n := r.count(acl.MinEncodedLen)
	if r.err != nil || n == 0 {
		return nil
	}
	list := make([]acl.ACL, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		a := r.acl()
		if i > 0 && r.err == nil && acl.Compare(list[i-1], a) >= 0 {
			r.fail("ACL %v out of order", a)
		}
		list = append(list, a)
	}
	return list
}
