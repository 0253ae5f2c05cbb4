package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/internal/cluster"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// followPoll is how often consume --topic --follow looks at the store
// again (Store.Refresh) for what its writer appended.
const followPoll = 100 * time.Millisecond

// commitInterval is how often consume --group writes the group's
// positions while it follows (Kafka's auto.commit.interval.ms), and once
// more when it stops: each commit takes the store's lock for a moment.
const commitInterval = 5 * time.Second

// consumeTopic prints a topic's records, every partition, as
// "key<TAB>value" lines (a keyless record: the value alone). The store is
// opened read-only: no lock, nothing written, so it works beside the
// store's writer (seglog serve, produce --topic) and without write
// permission; with --follow it looks again every followPoll for what the
// writer appended.
//
// With a group it starts at the group's committed offsets
// (auto.offset.reset earliest with --from-beginning, else latest), and
// the group's commits are its only write (groupCommitter). Without a group
// it reads from the start with --from-beginning, else only new records.
//
// A partition that cannot be read (damage, an inconsistent checkpoint)
// is reported on stderr and left out; the others are printed, and the
// command exits non-zero at the end.
func consumeTopic(cmd *cobra.Command, dir, topic, group string, fromBeginning, follow bool) error {
	limit, err := cmd.Flags().GetInt64("max")
	if err != nil {
		return err
	}
	reset := store.Latest
	if fromBeginning {
		reset = store.Earliest
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if follow {
		// Stopped by a signal, the follower commits what it printed and
		// exits 0, as the single-log follower does.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	var commits *groupCommitter
	if group != "" {
		// The commits at the end would be refused there
		// (store.ErrClusterNode): refused before anything is printed.
		if node, err := cluster.IsClusterDir(vfs.Default, dir); err != nil {
			return err
		} else if node {
			return fmt.Errorf("%w: consume --group commits the group's offsets to %s, which only its node writes: "+
				"consume through the node with a Kafka client (kcat -b HOST:PORT -G %s %s), or without --group to read here",
				store.ErrClusterNode, dir, group, topic)
		}
		commits = &groupCommitter{cmd: cmd, dir: dir, group: group, topic: topic, pending: map[int32]int64{}}
	}
	err = readStore(cmd, dir, func(s *store.Store) error {
		c := topicConsumer{cmd: cmd, s: s, topic: topic, group: group, reset: reset, limit: limit,
			follow: follow, commits: commits, failed: map[int32]error{}, out: bufio.NewWriter(cmd.OutOrStdout())}
		for {
			if err := c.grow(); err != nil {
				return err
			}
			c.round()
			if err := c.out.Flush(); err != nil {
				// What was not shown is not committed.
				if commits != nil {
					clear(commits.pending)
				}
				return err
			}
			if !follow || c.done() {
				return c.failures()
			}
			if commits != nil {
				commits.commit(ctx, false)
			}
			select {
			case <-ctx.Done():
				return c.failures()
			case <-time.After(followPoll):
			}
			if err := s.Refresh(); err != nil {
				return err
			}
		}
	})
	if commits != nil {
		err = errors.Join(err, commits.commit(context.WithoutCancel(ctx), true))
	}
	return err
}

// topicConsumer is consume --topic's state: where each partition is read
// from, and the partitions that failed.
type topicConsumer struct {
	cmd          *cobra.Command
	s            *store.Store
	topic, group string
	reset        store.AutoOffsetReset
	limit        int64
	follow       bool
	commits      *groupCommitter
	out          *bufio.Writer

	pos     []int64
	printed int64
	failed  map[int32]error
}

func (c *topicConsumer) done() bool { return c.limit >= 0 && c.printed >= c.limit }

// grow finds each partition's first position: the group's, or the start
// or end. Partitions added to the topic while following start at their
// start: everything in them is new.
func (c *topicConsumer) grow() error {
	n, err := c.s.Partitions(c.topic)
	if err != nil {
		return err
	}
	first := len(c.pos) == 0
	for p := int32(len(c.pos)); p < int32(n); p++ {
		reset := c.reset
		if !first {
			reset = store.Earliest
		}
		off, err := c.startAt(p, reset)
		if err != nil {
			c.fail(p, err)
		}
		c.pos = append(c.pos, off)
	}
	return nil
}

func (c *topicConsumer) startAt(p int32, reset store.AutoOffsetReset) (int64, error) {
	if c.group == "" {
		l, release, err := c.s.AcquireLog(c.topic, p)
		if err != nil {
			return 0, err
		}
		// Released at once: a topic of many partitions stays within the
		// store's budget of open Logs.
		defer release()
		if reset == store.Earliest {
			return l.StartOffset(), nil
		}
		return l.EndOffset(), nil
	}
	ps, err := c.s.Position(c.group, c.topic, p, reset)
	if err != nil {
		return 0, err
	}
	if ps.Skipped > 0 {
		fmt.Fprintf(c.cmd.ErrOrStderr(), "group %s: %s-%d: %d records skipped (committed %d was below the start; auto.offset.reset moved it to %d)\n",
			c.group, c.topic, p, ps.Skipped, ps.Offset-ps.Skipped, ps.Offset)
	}
	if ps.Reset {
		// As a Kafka consumer commits its position on every assigned
		// partition: the group's lag then covers the whole topic.
		c.commits.set(p, ps.Offset)
	}
	return ps.Offset, nil
}

// fail leaves a partition that cannot be read out of later rounds. Its
// error ends the command (failures); a follower, which may run long after,
// also reports it at once.
func (c *topicConsumer) fail(p int32, err error) {
	if _, ok := c.failed[p]; ok {
		return
	}
	c.failed[p] = err
	if c.follow {
		fmt.Fprintf(c.cmd.ErrOrStderr(), "seglog: %v (the other partitions of %s are followed)\n", err, c.topic)
	}
}

// round prints what every partition holds past its position. A
// partition that fails is reported and left out of later rounds.
func (c *topicConsumer) round() {
	for p := range int32(len(c.pos)) {
		if c.done() {
			break
		}
		if _, ok := c.failed[p]; ok {
			continue
		}
		if err := c.readPartition(p); err != nil {
			c.fail(p, err)
		}
	}
}

func (c *topicConsumer) readPartition(p int32) error {
	l, release, err := c.s.AcquireLog(c.topic, p)
	if err != nil {
		return err
	}
	defer release()
	moved := false
	defer func() {
		if moved {
			c.commits.set(p, c.pos[p])
		}
	}()
	for r, err := range l.Records(c.pos[p]) {
		if err != nil {
			return err
		}
		if c.done() {
			break
		}
		if r.Key != nil {
			c.out.Write(r.Key)
			c.out.WriteByte('\t')
		}
		c.out.Write(r.Value)
		c.out.WriteByte('\n')
		c.printed++
		c.pos[p] = r.Offset + 1
		moved = true
	}
	return nil
}

// failures is the error consume --topic ends with when partitions could
// not be read: theirs, in partition order (each names its partition's
// directory or file).
func (c *topicConsumer) failures() error {
	var errs []error
	for _, p := range slices.Sorted(maps.Keys(c.failed)) {
		errs = append(errs, c.failed[p])
	}
	return errors.Join(errs...)
}

// groupCommitter writes consume --group's positions: the group's commits
// are the only write consume makes. They are written through the store's
// lock, taken for the commit alone (the reading holds no lock, so a
// producer can append meanwhile); when `seglog serve` holds the store,
// through the server, as a Kafka consumer commits (a standalone commit:
// generation -1). When another command holds the store, the commits wait
// for it to finish (a warning says so once) and are written at the next
// try; if it still holds the store when consume stops, consume fails,
// naming the holder and the offsets it could not commit.
type groupCommitter struct {
	cmd               *cobra.Command
	dir, group, topic string
	pending           map[int32]int64
	last              time.Time
	warned            bool
}

// set records partition p's position to commit (nil-safe: no group).
func (g *groupCommitter) set(p int32, off int64) {
	if g != nil {
		g.pending[p] = off
	}
}

// commit writes the pending positions, at most every commitInterval
// unless final. Only the final call returns an error; before it, a
// failure is reported and the positions stay pending.
func (g *groupCommitter) commit(ctx context.Context, final bool) error {
	if len(g.pending) == 0 || (!final && time.Since(g.last) < commitInterval) {
		return nil
	}
	g.last = time.Now()
	err := g.write(ctx)
	if err == nil {
		clear(g.pending)
		return nil
	}
	if final {
		return fmt.Errorf("group %s: positions printed but not committed (%s): %w", g.group, g.describe(), err)
	}
	if !g.warned {
		g.warned = true
		fmt.Fprintf(g.cmd.ErrOrStderr(), "seglog: group %s: commits wait: %v\n", g.group, err)
	}
	return nil
}

func (g *groupCommitter) write(ctx context.Context) error {
	h := holderOf(g.cmd)
	h.Brief = true
	s, err := openStoreAs(g.dir, store.Options{Logger: storeLogger(g.cmd), Existing: true, Holder: h})
	if addr, ok := servedBy(err); ok {
		return commitViaServer(ctx, addr, g.group, g.topic, g.pending)
	}
	if err != nil {
		return err
	}
	return errors.Join(s.Commit(g.group, g.topic, g.pending), s.Close())
}

func (g *groupCommitter) describe() string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(g.pending)) {
		parts = append(parts, fmt.Sprintf("%s-%d at %d", g.topic, p, g.pending[p]))
	}
	return strings.Join(parts, ", ")
}
