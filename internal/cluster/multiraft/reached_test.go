package multiraft

import (
	"log/slog"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/cluster/reach"
	"github.com/seglog/seglog/internal/testutil"
)

// TestReachedUntilConnectionEnds: the time a peer was last reached is
// when the connection to it ended, not when it was opened, so a Warn
// about a peer that went away gives its last contact.
func TestReachedUntilConnectionEnds(t *testing.T) {
	tr := reach.New(reach.Config{Logger: slog.New(slog.DiscardHandler)})
	c := newClusterWith(t, 2, 1, Config{Reach: tr}, nil, nil)
	c.waitLeaders()
	reached := func() time.Time {
		for _, p := range tr.Peers() {
			if p.ID == 2 {
				return p.Reached
			}
		}
		return time.Time{}
	}
	testutil.WaitFor(t, "node 1's connection to node 2 to be held", func() bool { return !reached().IsZero() })
	opened := reached()
	c.stop(c.members[2])
	testutil.WaitFor(t, "node 2 to be last reached when the connection ended", func() bool { return reached().After(opened) })
}
