package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/internal/storelog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// Cleaning a store: every topic by its own config, through the store's
// lock and checkpoints, and a partition of a store through the store.

// isStoreDir reports whether dir is a store (a Kafka log.dir,
// layout.IsLogDir).
func isStoreDir(dir string) (bool, error) {
	ok, err := layout.IsLogDir(vfs.Default, dir)
	if err != nil {
		return false, nil // clean's own checks say what is wrong with it
	}
	return ok, nil
}

// storeClean is seglog clean on a store.
type storeClean struct {
	dir, topic    string
	partition     int32
	dryRun        bool
	deleteRecords bool
	before        int64
	// compact forces a compaction round on each compacting topic (or
	// --topic) under its own config (store.Compact).
	compact bool
}

// cleanRuleFlags are clean's rules for one log, which a store takes from
// its topics' configs.
var cleanRuleFlags = []string{"retention-ms", "retention-bytes", "delete-retention-ms", "min-compaction-lag-ms"}

func (c storeClean) run(cmd *cobra.Command) error {
	var given []string
	for _, n := range append(cleanRuleFlags, logShapingFlags...) {
		if cmd.Flags().Changed(n) {
			given = append(given, "--"+n)
		}
	}
	if len(given) > 0 {
		return usageErrorf(cmd, "%v do not apply to a store: each topic is cleaned by its own config (retention.ms, retention.bytes, cleanup.policy; seglog topics describe %s); to apply them once to one partition, give its directory (seglog clean %s --retention-ms N)",
			given, c.dir, filepath.Join(c.dir, "TOPIC-N"))
	}
	switch {
	case c.deleteRecords && (c.topic == "" || c.partition < 0):
		return usageErrorf(cmd, "--delete-records-before on a store needs --topic and --partition")
	case c.compact && c.deleteRecords:
		return usageErrorf(cmd, "--compact on a store does not take --delete-records-before")
	case c.dryRun:
		return c.preview(cmd)
	case c.deleteRecords:
		return c.deleteRecordsBefore(cmd)
	}
	return c.clean(cmd)
}

func (c storeClean) name(topic string, p int32) string {
	return filepath.Join(c.dir, fmt.Sprintf("%s-%d", topic, p))
}

// clean runs one round of every topic's (or --topic's) own config.
func (c storeClean) clean(cmd *cobra.Command) error {
	var topics []string
	if c.topic != "" {
		topics = []string{c.topic}
	}
	advice := func(addr string) string {
		if c.compact {
			return fmt.Sprintf("its own cleaner compacts a topic only once its dirty ratio calls for a round; to force one now, stop it and run this again (seglog clean %s --compact)", c.dir)
		}
		return fmt.Sprintf("its own cleaner applies each topic's config every %v; to delete records now, DeleteRecords goes through it: seglog clean %s --topic T --partition N --delete-records-before OFFSET",
			cleaner.DefaultCheckInterval, c.dir)
	}
	return withStore(cmd, c.dir, false, advice, func(s *store.Store) error {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		clean := s.Clean
		if c.compact {
			clean = s.Compact
		}
		res, err := clean(ctx, topics...)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		var errs []error
		var segs, recs, bytes int64
		compacted := 0
		for _, r := range res {
			name := c.name(r.Topic, r.Partition)
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, r.Err))
				continue
			}
			if e := r.Cleaned; e.Segments > 0 || e.NewStartOffset != e.OldStartOffset {
				fmt.Fprintf(out, "%s: deleted %d segments, %d records, %d bytes; start offset %d (was %d)\n",
					name, e.Segments, e.Records, e.Bytes, e.NewStartOffset, e.OldStartOffset)
				segs, recs, bytes = segs+e.Segments, recs+e.Records, bytes+e.Bytes
			}
			if r.Compacted != nil {
				printCompacted(out, name, *r.Compacted)
				compacted++
			}
		}
		if c.compact {
			fmt.Fprintf(out, "%s: compacted %d of %d partitions now, each by its topic's config, whatever its dirty ratio\n", c.dir, compacted, len(res))
		} else {
			fmt.Fprintf(out, "%s: cleaned %d partitions by their topics' configs: deleted %d segments, %d records, %d bytes; compacted %d partitions\n",
				c.dir, len(res), segs, recs, bytes, compacted)
		}
		return errors.Join(errs...)
	})
}

// deleteRecordsBefore is DeleteRecords on --topic's --partition: through
// the store, or through the server that holds it.
func (c storeClean) deleteRecordsBefore(cmd *cobra.Command) error {
	name := c.name(c.topic, c.partition)
	s, err := openStoreWriter(cmd, c.dir, false)
	if addr, ok := servedBy(err); ok {
		start, err := deleteRecordsViaServer(cmd.Context(), addr, c.topic, c.partition, c.before)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: deleted the records before %d; start offset %d (through the server at %s, which holds %s)\n",
			name, c.before, start, addr, c.dir)
		return nil
	}
	if err != nil {
		return withAdvice(err, nil)
	}
	err = func() error {
		l, release, err := s.AcquireLog(c.topic, c.partition)
		if err != nil {
			return err
		}
		old := l.StartOffset()
		release()
		start, err := s.DeleteRecords(c.topic, c.partition, c.before)
		if err != nil {
			return fmt.Errorf("invalid --delete-records-before %d: %w", c.before, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: deleted %d records; start offset %d (was %d)\n", name, max(start-old, 0), start, old)
		return nil
	}()
	return errors.Join(err, s.Close())
}

// preview is --dry-run on a store: what each partition's topic config (and
// --delete-records-before) would delete now, from a read-only open.
func (c storeClean) preview(cmd *cobra.Command) error {
	return readStore(cmd, c.dir, func(s *store.Store) error {
		topics := s.Topics()
		if c.topic != "" {
			topics = []string{c.topic}
		}
		out := cmd.OutOrStdout()
		var total cleaner.Plan
		var segs, recs int64
		var errs []error
		for _, t := range topics {
			info, err := s.DescribeTopic(t)
			if err != nil {
				return err
			}
			policy := info.Config.Policy()
			if info.Config.CleanupPolicy != cleaner.Delete {
				fmt.Fprintf(out, "%s: topic %s is compacted (cleanup.policy=%s): compaction is not previewed\n", c.dir, t, info.Config.CleanupPolicy)
			}
			for _, pi := range info.Partitions {
				requested := int64(-1)
				if c.deleteRecords && pi.Partition == c.partition {
					requested = c.before
				}
				l, release, err := s.AcquireLog(t, pi.Partition)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", c.name(t, pi.Partition), err))
					continue
				}
				plan, newStart, err := previewLog(out, c.name(t, pi.Partition), l, policy, requested, false)
				release()
				if err != nil {
					return err
				}
				segs += int64(len(plan.Delete))
				recs += newStart - l.StartOffset()
				total.Bytes += plan.Bytes
			}
		}
		fmt.Fprintf(out, "%s: would delete %d segments, %d records, %d bytes; nothing changed (dry run)\n", c.dir, segs, recs, total.Bytes)
		return errors.Join(errs...)
	})
}

// previewLog prints what a pass with policy (and a DeleteRecords to
// requested, if not negative) would delete from l now, as cleaner.Decide
// plans it: the pass itself decides the same way. A log with nothing to
// delete gets a line only if always.
func previewLog(w io.Writer, name string, l seglog.View, policy cleaner.Policy, requested int64, always bool) (cleaner.Plan, int64, error) {
	start, end := l.StartOffset(), l.EndOffset()
	if requested > end {
		return cleaner.Plan{}, start, fmt.Errorf("invalid --delete-records-before %d: past the log end %d", requested, end)
	}
	plan := cleaner.Decide(cleaner.Input{
		Segments:    cleaner.SegmentsOf(l),
		Policy:      policy,
		Now:         time.Now(),
		StartOffset: max(start, requested),
		UpperBound:  -1,
	})
	newStart := max(plan.NewStart, start)
	if !always && len(plan.Delete) == 0 && newStart == start {
		return plan, newStart, nil
	}
	fmt.Fprintf(w, "%s: would delete %d segments, %d records, %d bytes; start offset %d (now %d); nothing changed (dry run)\n",
		name, len(plan.Delete), newStart-start, plan.Bytes, newStart, start)
	for i, s := range plan.Delete {
		active := ""
		if s.Active {
			active = " (the active segment: rolled first)"
		}
		fmt.Fprintf(w, "  segment %d [%d, %d), %d bytes: %s%s\n", s.BaseOffset, s.BaseOffset, s.NextOffset, s.Size, plan.Reasons[i], active)
	}
	if plan.Pinned != nil {
		fmt.Fprintf(w, "  segment %d has a record dated in the future: it and the segments after it are kept from --retention-ms\n", plan.Pinned.BaseOffset)
	}
	return plan, newStart, nil
}

// errDoneThroughServer: openCleanLog did the work through the server.
var errDoneThroughServer = errors.New("done through the server")

// openCleanLog opens the log clean works on. A partition directory of a
// store is cleaned through the store: the store is opened with its lock
// (refused, naming the holder, when another holds it) and the partition's
// Log is the store's (reached through internal/storelog: the store's
// users get a read-only view, but this one-off pass runs the cleaner with
// the flags' policy over the Log, as over a standalone one), so its
// checkpoints are the log.dir's and no file of its own appears in the
// partition. When a server holds the store and
// the work is only --delete-records-before, it is done through the server
// (DeleteRecords) and errDoneThroughServer returned.
func openCleanLog(cmd *cobra.Command, dir string, opts seglog.Options, onlyDeleteRecords bool, before int64) (*seglog.Log, func() error, error) {
	logDir, topic, part, ok, err := partitionOfStore(dir)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		l, err := seglog.Open(dir, opts)
		if err != nil {
			return nil, nil, err
		}
		return l, l.Close, nil
	}
	if err := refuseLogFlags(cmd, dir, logDir, topic, part, logShapingFlags...); err != nil {
		return nil, nil, err
	}
	s, err := openStoreWriter(cmd, logDir, false)
	if addr, served := servedBy(err); served && onlyDeleteRecords {
		start, err := deleteRecordsViaServer(cmd.Context(), addr, topic, part, before)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: deleted the records before %d; start offset %d (through the server at %s, which holds %s)\n",
			dir, before, start, addr, logDir)
		return nil, nil, errDoneThroughServer
	}
	if err != nil {
		return nil, nil, withAdvice(err, func(addr string) string {
			return fmt.Sprintf("its own cleaner applies topic %s's config every %v; to delete records now, DeleteRecords goes through it: seglog clean %s --delete-records-before OFFSET",
				topic, cleaner.DefaultCheckInterval, dir)
		})
	}
	l, release, err := storelog.Acquire(s, topic, part)
	if err != nil {
		return nil, nil, errors.Join(err, s.Close())
	}
	return l, func() error { release(); return s.Close() }, nil
}
