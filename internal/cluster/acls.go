package cluster

import (
	"context"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/server/acl"
)

// The cluster's ACLs live in the replicated metadata (meta.CreateACLs,
// meta.DeleteACLs): a node forwards a change to the controller, which
// proposes it, and every node authorizes its clients against the ACLs
// it has applied.

// Forwarded operations.
const (
	opCreateACLs = "create-acls"
	opDeleteACLs = "delete-acls"
)

// ACLs returns the ACLs this node has applied, sorted; the list is the
// metadata state's own and must not be modified.
func (n *Node) ACLs() []acl.ACL { return n.meta.State().ACLs() }

// CreateACLs adds acls through the controller and returns once this node
// has applied them. A retry after a lost answer is harmless: adding an
// ACL already there changes nothing.
func (n *Node) CreateACLs(ctx context.Context, acls []acl.ACL) error {
	resp, err := n.forward(ctx, request{Op: opCreateACLs, Broker: n.cfg.NodeID, ACLs: acls})
	if err != nil {
		return err
	}
	return n.waitApplied(ctx, resp.Index)
}

// DeleteACLs removes through the controller every ACL a filter matches
// and returns, per filter, the ones removed, once this node has applied
// the removal. A retry after a lost answer finds nothing more to remove
// and reports none.
func (n *Node) DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.ACL, error) {
	resp, err := n.forward(ctx, request{Op: opDeleteACLs, Broker: n.cfg.NodeID, ACLFilters: filters})
	if err != nil {
		return nil, err
	}
	deleted := resp.DeletedACLs
	if len(deleted) != len(filters) {
		deleted = make([][]acl.ACL, len(filters))
	}
	return deleted, n.waitApplied(ctx, resp.Index)
}

// handleACLs runs an ACL operation on the controller; ok is false for
// any other operation.
func (n *Node) handleACLs(ctx context.Context, req request) (resp response, ok bool) {
	var c meta.Command
	switch req.Op {
	case opCreateACLs:
		c = &meta.CreateACLs{ACLs: req.ACLs}
	case opDeleteACLs:
		c = &meta.DeleteACLs{Filters: req.ACLFilters}
	default:
		return response{}, false
	}
	res, err := n.meta.Propose(ctx, c)
	if err != nil {
		return errResponse(err), true
	}
	return response{Index: res.Index, DeletedACLs: res.DeletedACLs}, true
}

// waitApplied waits until this node's metadata is at index or later.
func (n *Node) waitApplied(ctx context.Context, index uint64) error {
	for {
		st, changed := n.meta.Watch()
		if st.Index() >= index {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.ctx.Done():
			return ErrClosed
		}
	}
}
