package cluster

import (
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
)

// TestClientQuotasReplicated: quotas altered on a follower go through the
// controller and reach every node; a change the server would refuse is
// refused by the controller too, and changes nothing.
func TestClientQuotasReplicated(t *testing.T) {
	c := newCluster(t, 3)
	ctrl := c.controller()
	f := c.follower(ctrl)
	ctx := ctxTimeout(t)
	alice := server.QuotaEntity{User: "alice", DefaultClientID: true}
	if err := f.node.AlterClientQuotas(ctx, []server.ClientQuotaChange{
		{Entity: alice, Set: map[string]float64{server.QuotaProducerByteRate: 1024}},
		{Entity: server.QuotaEntity{ClientID: "app"}, Set: map[string]float64{server.QuotaRequestPercentage: 12.5}},
	}); err != nil {
		t.Fatal(err)
	}
	// The follower answered once it applied them.
	if got := f.node.ClientQuotas(); len(got) != 2 {
		t.Fatalf("follower holds %+v", got)
	}
	for _, tn := range c.running() {
		testutil.WaitFor(t, "every node holds the quotas", func() bool {
			for _, q := range tn.node.ClientQuotas() {
				if q.Entity == alice && q.Values[server.QuotaProducerByteRate] == 1024 {
					return true
				}
			}
			return false
		})
	}
	before := f.node.QuotasVersion()
	if err := f.node.AlterClientQuotas(ctx, []server.ClientQuotaChange{
		{Entity: alice, Set: map[string]float64{"bogus": 1}},
	}); err == nil {
		t.Fatal("a bogus key was accepted")
	}
	if err := ctrl.node.AlterClientQuotas(ctx, []server.ClientQuotaChange{
		{Entity: alice, Remove: []string{server.QuotaProducerByteRate}},
	}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the removal on the follower", func() bool { return len(f.node.ClientQuotas()) == 1 })
	if f.node.QuotasVersion() <= before {
		t.Fatalf("version %d did not move from %d", f.node.QuotasVersion(), before)
	}
}
