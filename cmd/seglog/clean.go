package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

func init() { register(newCleanCmd) }

func newCleanCmd() *cobra.Command {
	var retentionMs, retentionBytes, before int64
	var compact, dryRun bool
	var deleteRetentionMs, minLagMs int64
	cmd := &cobra.Command{
		Use:   "clean DIR",
		Short: "Apply retention or compaction to the log in DIR, or to every topic of a store, now",
		Long: `Run one retention pass over the log in DIR, as Kafka's log manager does
every log.retention.check.interval.ms, and exit when it is done.

DIR may be a store (a Kafka log.dir, seglog topics): each topic is then
cleaned by its own config (retention.ms, retention.bytes, cleanup.policy and
the compaction settings), as a broker's cleaner would, through the store and
its lock; --topic T cleans one topic. --delete-records-before O with --topic
and --partition is DeleteRecords on that partition: its start moves to O in
the store's log-start checkpoint, and every reader (consume, groups, the UI,
a restart) starts there. --dry-run says what the configs would delete.
--compact runs a compaction round now on each compacting topic (or --topic),
under its own config, whatever its dirty ratio: it also rewrites the
compressed empty headers older seglog compactions left, which Kafka clients
cannot read past (fsck's empty-batch-codec). The other rules below do not
apply to a store.

DIR may be a partition directory of a store (STORE/TOPIC-N): the rules given
apply to that partition, through the store (its lock and checkpoints; no
file of its own appears in the partition directory). When another command
holds the store, clean refuses, naming it; when seglog serve holds it,
--delete-records-before goes through the server (DeleteRecords), and the
rest is the server's own cleaner's work: the refusal says so.

On a log or a partition, only the rules given apply (nothing is deleted by
default):

  --retention-ms N           delete the oldest segments whose newest record is
                             more than N milliseconds old (Kafka retention.ms;
                             -1, or more than 292 years, keeps them forever)
  --retention-bytes N        delete the oldest segments while the log would
                             still hold at least N bytes without them
                             (retention.bytes; -1 is no limit)
  --delete-records-before O  make O the log's start offset, as Kafka's
                             DeleteRecords: the segments wholly below go, the
                             records below O in the segment holding it become
                             unreadable; O must not be past the end

  --compact                  compact the log: keep the latest record of each
                             key, drop keyless records and aborted transaction
                             data, and drop tombstones and transaction markers
                             whose delete horizon has passed (the first pass
                             that sees them sets it); runs whatever the dirty
                             ratio, also rewriting segments that only hold
                             records to drop. The active segment is never
                             compacted. With it:
    --delete-retention-ms N  the delete horizon's distance (delete.retention.ms,
                             default 86400000)
    --min-compaction-lag-ms N  leave segments holding records younger than N ms
                             alone (min.compaction.lag.ms, default 0)

  --dry-run                  only say what the retention rules given would
                             delete: the log is opened read-only and nothing
                             is written (not with --compact)

Retention deletes only whole segments, oldest first. A breaching active segment is
rolled first. No reader holds the files, so they are unlinked before the
command exits: no .deleted files are left. The new start offset is
checkpointed and survives a restart. One line on standard output says what
went: segments, records (offsets), bytes, and the new start offset; with
--compact a second line says what compaction removed.`,
		Args: cobra.ExactArgs(1),
	}
	lf := bindLogFlagsExcept(cmd, appendOnlyFlags...)
	fl := cmd.Flags()
	var topic string
	var partition int32
	fl.StringVar(&topic, "topic", "", "DIR is a store: clean this topic only")
	fl.Int32Var(&partition, "partition", 0, "DIR is a store: with --topic and --delete-records-before, the partition")
	limitFlag(cmd, "partition", 0, math.MaxInt32)
	onlyWith(cmd, "partition", "delete-records-before")
	fl.Int64Var(&retentionMs, "retention-ms", -1, "delete segments whose newest record is older than N ms (retention.ms; -1: forever)")
	fl.Int64Var(&retentionBytes, "retention-bytes", -1, "keep the log to about N bytes, deleting the oldest segments (retention.bytes; -1: no limit)")
	fl.Int64Var(&before, "delete-records-before", 0, "make OFFSET the log start offset (DeleteRecords)")
	fl.BoolVar(&compact, "compact", false, "compact the log now, whatever its dirty ratio")
	fl.BoolVar(&dryRun, "dry-run", false, "say what retention would delete, changing nothing (read-only)")
	fl.Int64Var(&deleteRetentionMs, "delete-retention-ms", cleaner.DefaultDeleteRetention.Milliseconds(), "with --compact: keep tombstones and markers N ms after their first compaction (delete.retention.ms)")
	fl.Int64Var(&minLagMs, "min-compaction-lag-ms", 0, "with --compact: do not compact segments holding records younger than N ms (min.compaction.lag.ms)")
	limitFlag(cmd, "retention-ms", -1, math.MaxInt64)    // -1: forever
	limitFlag(cmd, "retention-bytes", -1, math.MaxInt64) // -1: no limit
	limitFlag(cmd, "delete-records-before", 0, math.MaxInt64)
	// In milliseconds, up to time.Duration's range.
	limitFlag(cmd, "delete-retention-ms", 0, math.MaxInt64/int64(time.Millisecond))
	limitFlag(cmd, "min-compaction-lag-ms", 0, math.MaxInt64/int64(time.Millisecond))
	onlyWith(cmd, "delete-retention-ms", "compact")
	onlyWith(cmd, "min-compaction-lag-ms", "compact")
	notWith(cmd, "compact", "dry-run")
	// A dry run opens the log read-only: nothing is rolled or rewritten.
	notWith(cmd, "dry-run", "segment-bytes", "index-interval-bytes", "max-index-bytes", "max-mapped-indexes", "max-open-segment-files")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		dir := args[0]
		if ok, err := isStoreDir(dir); err != nil {
			return err
		} else if ok {
			sc := storeClean{dir: dir, topic: topic, partition: -1, dryRun: dryRun,
				deleteRecords: fl.Changed("delete-records-before"), before: before, compact: compact}
			if fl.Changed("partition") {
				sc.partition = partition
			}
			return sc.run(cmd)
		}
		if fl.Changed("topic") || fl.Changed("partition") {
			return usageErrorf(cmd, "--topic and --partition apply to a store: %s is not a store", dir)
		}
		if !fl.Changed("retention-ms") && !fl.Changed("retention-bytes") && !fl.Changed("delete-records-before") && !compact {
			return usageErrorf(cmd, "nothing to do: give --retention-ms, --retention-bytes, --delete-records-before or --compact")
		}
		const maxMs = math.MaxInt64 / int64(time.Millisecond)
		policy := cleaner.DefaultPolicy()
		policy.Retention, policy.RetentionBytes, policy.FileDeleteDelay = cleaner.Forever, retentionBytes, 0
		switch {
		case retentionMs > maxMs:
			// Kafka takes any long; past 292 years (time.Duration's
			// range) nothing expires, as with -1.
		case retentionMs >= 0:
			policy.Retention = time.Duration(retentionMs) * time.Millisecond
		}
		if err := policy.Validate(); err != nil {
			var pe *cleaner.PolicyError
			if errors.As(err, &pe) && pe.Name == "retention.bytes" {
				return usageErrorf(cmd, "invalid --retention-bytes %d: want -1 (no limit) or at least 0", retentionBytes)
			}
			return err
		}
		opts, err := lf.options(cmd)
		if err != nil {
			return err
		}
		if err := checkLogDir(dir); err != nil {
			return err
		}
		if dryRun {
			requested := int64(-1)
			if fl.Changed("delete-records-before") {
				requested = before
			}
			return cleanDryRun(cmd.OutOrStdout(), dir, opts, policy, requested)
		}
		if fl.Changed("delete-records-before") {
			if err := checkBeforeEnd(dir, opts, before); err != nil {
				return err
			}
		}
		onlyDeleteRecords := fl.Changed("delete-records-before") && !fl.Changed("retention-ms") && !fl.Changed("retention-bytes") && !compact
		l, closeLog, err := openCleanLog(cmd, dir, opts, onlyDeleteRecords, before)
		if errors.Is(err, errDoneThroughServer) {
			return nil
		}
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("%w; cleaning writes to the log's directory and files, --dry-run only reads them", err)
		}
		if err != nil {
			return err
		}
		policy.DeleteRetention = time.Duration(deleteRetentionMs) * time.Millisecond
		policy.MinCompactionLag = time.Duration(minLagMs) * time.Millisecond
		retain := fl.Changed("retention-ms") || fl.Changed("retention-bytes") || fl.Changed("delete-records-before")
		res, comp, err := cleanOnce(l, opts, policy, retain, fl.Changed("delete-records-before"), before, compact)
		if cerr := closeLog(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if retain {
			fmt.Fprintf(cmd.OutOrStdout(), "%s: deleted %d segments, %d records, %d bytes; start offset %d (was %d)\n",
				dir, res.Segments, res.Records, res.Bytes, res.NewStartOffset, res.OldStartOffset)
		}
		if compact {
			printCompacted(cmd.OutOrStdout(), dir, comp)
		}
		return nil
	}
	return cmd
}

// checkLogDir refuses a missing directory, a file, or a directory holding
// no segment: Open would create a log there, and cleaning a directory
// that is not a log is a mistake to report. A directory holding
// directories (a Kafka log.dir) is refused with the *seglog.NotALogError
// that consume gives, naming the partition directories to clean instead;
// every refusal matches seglog.ErrNotALog.
func checkLogDir(dir string) error {
	fi, err := vfs.Default.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	names, err := vfs.Default.List(dir)
	if err != nil {
		return err
	}
	var strangers seglog.NotALogError
	for _, n := range names {
		if _, suffix, ok := segment.ParseFileName(n); ok && suffix == segment.LogSuffix {
			return nil
		}
		if layout.IsLogFile(n) {
			continue
		}
		if fi, err := vfs.Default.Stat(filepath.Join(dir, n)); err == nil && fi.IsDir() {
			strangers.Subdirs = append(strangers.Subdirs, n)
		} else if err == nil {
			strangers.Files = append(strangers.Files, n)
		}
	}
	if len(strangers.Subdirs) > 0 {
		strangers.Dir = dir
		return &strangers
	}
	return fmt.Errorf("%w: %s holds no %s segment files", seglog.ErrNotALog, dir, segment.LogSuffix)
}

// checkBeforeEnd refuses a --delete-records-before past the log end from a
// read-only open, before the writable one: that open rewrites the
// checkpoints and the clean-shutdown marker (and recovers an unclean log),
// and a refused command must change nothing. A log the read-only open
// cannot read is left to the writable open and cleanOnce's own check.
func checkBeforeEnd(dir string, opts seglog.Options, before int64) error {
	r, err := seglog.Open(dir, seglog.Options{ReadOnly: true, FS: opts.FS, LogConfig: seglog.LogConfig{MaxBatchBytes: opts.MaxBatchBytes}, Logger: opts.Logger})
	if err != nil {
		return nil
	}
	end := r.EndOffset()
	if err := r.Close(); err != nil {
		return err
	}
	if before > end {
		return fmt.Errorf("invalid --delete-records-before %d: past the log end %d", before, end)
	}
	return nil
}

// cleanDryRun opens dir read-only and prints what a pass with policy (and
// a DeleteRecords to requested, if not negative) would delete now.
func cleanDryRun(w io.Writer, dir string, opts seglog.Options, policy cleaner.Policy, requested int64) error {
	l, err := seglog.Open(dir, seglog.Options{ReadOnly: true, FS: opts.FS, LogConfig: seglog.LogConfig{MaxBatchBytes: opts.MaxBatchBytes}, Logger: opts.Logger})
	if err != nil {
		return err
	}
	defer l.Close()
	_, _, err = previewLog(w, dir, l.View(), policy, requested, true)
	return err
}

// cleanOnce runs one retention round over l alone if retain, then a
// forced compaction round if compact, and returns what they did.
func cleanOnce(l *seglog.Log, opts seglog.Options, policy cleaner.Policy, retain, deleteRecords bool, before int64, compact bool) (cleaner.LogCleaned, cleaner.LogCompacted, error) {
	var res cleaner.LogCleaned
	var comp cleaner.LogCompacted
	var failure error
	// The command reports what the round deleted on stdout; the
	// cleaner's own Info line saying the same would repeat it on stderr.
	logger := opts.Logger
	if logger != nil {
		logger = slog.New(warnAndUp{logger.Handler()})
	}
	c := cleaner.New(cleaner.Options{Logger: logger, Events: cleaner.Events{
		LogCleaned: func(e cleaner.LogCleaned) { res = e },
		Failure:    func(f cleaner.Failure) { failure = f.Err },
	}})
	log := cleaner.Wrap(l)
	if err := c.Add(log, policy); err != nil {
		return res, comp, err
	}
	if deleteRecords {
		if err := c.DeleteRecords(log, before); err != nil {
			return res, comp, fmt.Errorf("invalid --delete-records-before %d: past the log end %d", before, l.EndOffset())
		}
	}
	if retain {
		if err := c.RunOnce(context.Background()); err != nil {
			return res, comp, err
		}
		if failure != nil {
			return res, comp, failure
		}
	}
	if compact {
		var err error
		if comp, err = c.Compact(context.Background(), log, policy); err != nil {
			return res, comp, err
		}
	}
	return res, comp, failure
}

// warnAndUp passes on a handler's records from Warn up.
type warnAndUp struct{ slog.Handler }

func (h warnAndUp) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnAndUp) WithAttrs(as []slog.Attr) slog.Handler {
	return warnAndUp{h.Handler.WithAttrs(as)}
}

func (h warnAndUp) WithGroup(name string) slog.Handler { return warnAndUp{h.Handler.WithGroup(name)} }
