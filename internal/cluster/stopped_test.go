package cluster

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
)

// fullDisk is a three-node cluster with the real partition manager, the
// topic "full" (one partition, three replicas) and a follower of it, r,
// neither its leader nor the controller, which logs to logs and fails
// with ENOSPC, while full is set, every write to a file of full-0 whose
// path holds fileMark. One record ("before") is in every replica.
type fullDisk struct {
	c    *tcluster
	r    *tnode
	logs *testutil.LockedBuffer
	full *atomic.Bool
	ctx  context.Context
}

func newFullDisk(t *testing.T, fileMark string) *fullDisk {
	f := &fullDisk{logs: new(testutil.LockedBuffer), full: new(atomic.Bool), ctx: ctxTimeout(t)}
	f.c = newClusterConfigured(t, 3, true, func(tn *tnode, cfg *Config) {
		if tn.fs != nil {
			cfg.Logger = slog.New(slog.NewTextHandler(f.logs, nil))
		}
	})
	ctrl := f.c.controller()
	if err := ctrl.node.CreateTopic(f.ctx, "full", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	l := f.c.leaderOf("full", 0)
	for _, tn := range f.c.running() {
		if tn != l && tn != ctrl {
			f.r = tn
		}
	}
	if f.r == nil {
		t.Fatalf("no node is neither full-0's leader (%d) nor the controller (%d)", l.id, ctrl.id)
	}
	f.c.stop(f.r.id)
	f.r.fs = vfs.Inject(f.c.fs, vfs.InjectorFunc(func(op vfs.Op) error {
		if f.full.Load() && (op.Kind == vfs.OpWrite || op.Kind == vfs.OpWriteAt) &&
			strings.Contains(op.Path, "full-0") && strings.Contains(op.Path, fileMark) {
			return syscall.ENOSPC
		}
		return nil
	}))
	f.c.restart(f.r.id)
	f.c.controller()
	f.produce(t, "before")
	testutil.WaitFor(t, "the follower to hold the first record", func() bool {
		return len(values(t, f.r, "full", 0)) == 1
	})
	return f
}

// produce writes one record through the partition's leader, retrying
// until it is acknowledged (a retry after a lost leadership may store it
// twice: there is no producer id), and returns its offset.
func (f *fullDisk) produce(t *testing.T, value string) int64 {
	t.Helper()
	for {
		l := f.c.leaderOf("full", 0)
		off, err := l.node.Produce(f.ctx, "full", 0, producerBatch(t, value), -1)
		if err == nil {
			return off
		}
		if f.ctx.Err() != nil {
			t.Fatalf("produce %q: %v", value, err)
		}
	}
}

// caughtUp waits until r's high watermark is past off and it holds what
// the leader holds, which has want in order (and maybe a retried record
// twice).
func (f *fullDisk) caughtUp(t *testing.T, off int64, want ...string) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("follower %d's log:\n%s", f.r.id, f.logs.String())
		}
	}()
	l := f.c.leaderOf("full", 0)
	var got []string
	testutil.WaitFor(t, "the follower to catch up", func() bool {
		st, err := f.r.node.State("full", 0)
		got = values(t, f.r, "full", 0)
		return err == nil && st.HighWatermark > off && slices.Equal(got, values(t, l, "full", 0))
	})
	if !slices.Equal(slices.Compact(slices.Clone(got)), want) {
		t.Fatalf("the replicas hold %q, want %q", got, want)
	}
}

// TestStoppedReplicaRestarts: a follower that cannot write a checkpoint
// (its disk full) stops its replica of the partition; it logs why, and
// once the disk has room it starts the replica again by itself and
// catches up, without a restart or a metadata change (a replica left
// stopped stays out of the ISR, silently).
func TestStoppedReplicaRestarts(t *testing.T) {
	// The epoch checkpoint is written before a term's first batch: the
	// next batch of a new term fails there, and leaves the log as it was.
	f := newFullDisk(t, "leader-epoch-checkpoint")
	f.full.Store(true)
	// A new term: the leader hands its leaderships over, and the new
	// term's first batch needs the follower's checkpoint.
	if err := f.c.leaderOf("full", 0).node.HandOver(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.produce(t, "while full")
	testutil.WaitFor(t, "the node to log that its replica stopped, and why", func() bool {
		s := f.logs.String()
		return strings.Contains(s, "replica stopped on an error; starting it again") &&
			strings.Contains(s, "no space left on device") && strings.Contains(s, "topic=full")
	})
	f.full.Store(false)
	off := f.produce(t, "after")
	f.caughtUp(t, off, "before", "while full", "after")
}

// TestFailedWriteWaitsForRestart: a follower whose segment write fails
// (its disk full) stops its replica and says that the node must restart:
// the Log refuses writes until it is reopened. Restarted once the disk
// has room, the node catches up.
func TestFailedWriteWaitsForRestart(t *testing.T) {
	f := newFullDisk(t, ".log")
	f.full.Store(true)
	f.produce(t, "while full")
	testutil.WaitFor(t, "the node to log that its replica stopped until a restart", func() bool {
		s := f.logs.String()
		return strings.Contains(s, "refuses writes until this node restarts") &&
			strings.Contains(s, "no space left on device") && strings.Contains(s, "topic=full")
	})
	if strings.Contains(f.logs.String(), "starting it again") {
		t.Error("the node restarts a replica whose Log refuses writes")
	}
	f.full.Store(false)
	f.r.node.Close()
	f.r.st.Close() // fails: the Log's write failed; the next open recovers
	f.r.node, f.r.st = nil, nil
	f.c.restart(f.r.id)
	off := f.produce(t, "after")
	f.caughtUp(t, off, "before", "while full", "after")
}
