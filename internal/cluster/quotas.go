package cluster

import (
	"context"
	"fmt"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/server"
)

// Client quotas are held in the replicated metadata (meta.AlterClientQuotas),
// so every node enforces the same ones; the Node is the server's
// QuotaCluster.
var _ server.QuotaCluster = (*Node)(nil)

// opAlterQuotas forwards AlterClientQuotas to the controller.
const opAlterQuotas = "alter-client-quotas"

// QuotasVersion is the metadata index this node has applied: the quotas
// change only with it.
func (n *Node) QuotasVersion() uint64 { return n.meta.State().Index() }

// ClientQuotas returns the quotas as this node last applied them.
func (n *Node) ClientQuotas() []server.ClientQuota {
	qs := n.meta.State().ClientQuotas()
	out := make([]server.ClientQuota, len(qs))
	for i, q := range qs {
		e := q.Entity
		out[i] = server.ClientQuota{Values: q.Values, Entity: server.QuotaEntity{User: e.User, DefaultUser: e.DefaultUser,
			ClientID: e.ClientID, DefaultClientID: e.DefaultClientID}}
	}
	return out
}

// AlterClientQuotas applies changes through the controller and returns
// once this node has applied them.
func (n *Node) AlterClientQuotas(ctx context.Context, changes []server.ClientQuotaChange) error {
	req := request{Op: opAlterQuotas, Broker: n.cfg.NodeID}
	for _, c := range changes {
		e := c.Entity
		req.QuotaChanges = append(req.QuotaChanges, meta.QuotaChange{Set: c.Set, Remove: c.Remove,
			Entity: meta.QuotaEntity{User: e.User, DefaultUser: e.DefaultUser, ClientID: e.ClientID, DefaultClientID: e.DefaultClientID}})
	}
	resp, err := n.forward(ctx, req)
	if err != nil {
		return err
	}
	return n.waitSynced(ctx, resp.Index)
}

// alterQuotas is the controller's side: it checks each change as the
// single node does (server.CheckQuotaChange), then proposes them as one
// command, so they apply all or none.
func (n *Node) alterQuotas(ctx context.Context, req request) response {
	if len(req.QuotaChanges) == 0 {
		return errResponse(fmt.Errorf("%w: no changes", meta.ErrInvalidQuota))
	}
	for _, c := range req.QuotaChanges {
		e := c.Entity
		sc := server.ClientQuotaChange{Set: c.Set, Remove: c.Remove, Entity: server.QuotaEntity{User: e.User,
			DefaultUser: e.DefaultUser, ClientID: e.ClientID, DefaultClientID: e.DefaultClientID}}
		if err := server.CheckQuotaChange(sc); err != nil {
			return errResponse(fmt.Errorf("%w: %v: %v", meta.ErrInvalidQuota, sc.Entity, err))
		}
	}
	res, err := n.meta.Propose(ctx, &meta.AlterClientQuotas{Changes: req.QuotaChanges})
	if err != nil {
		return errResponse(err)
	}
	return response{Index: res.Index}
}
