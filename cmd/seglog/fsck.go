package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/vfs"
)

func init() { register(newFsckCmd) }

// fsckFS is the filesystem fsck works on; tests point it elsewhere.
var fsckFS vfs.FS = vfs.Default

func newFsckCmd() *cobra.Command {
	var o struct {
		repair, deep, json, truncateDamaged       bool
		maxEntryBytes, oldMaxBatch, indexInterval int
	}
	cmd := &cobra.Command{
		Use:   "fsck DIR...",
		Short: "check (and with --repair, fix) seglog or Kafka partition directories",
		Long: `Check seglog or Apache Kafka partition directories, reporting every problem
with its file and byte position. A directory holding partition directories
(a Kafka log.dir) is searched for them, a few levels deep; hidden
directories (.ssh) and symbolic links below it are not searched. A DIR in
which no partition is found is an error (exit status 8), never "clean".

Missing data is always reported, as "data missing: offsets X–Y": an offset
gap in a log that was never compacted (it has no cleaner-offset-checkpoint),
index entries pointing past the end of their .log, a recovery point beyond
the end of the log. Repair cannot bring the data back and leaves every piece
of that evidence as it is. Files that are not a log's beside a log's
(notes.txt) are listed and ignored, as Kafka and every seglog command
ignore them.

Checking writes nothing and takes no lock, so it is safe beside a running log.

--repair follows the log's own recovery rules, and cuts and rebuilds indexes
with the engine's own segment recovery, so a repaired directory is what the
next Open would make of it:
  - damage past the recovery point (data the log had not synced: a torn
    tail) is cut there, with every later segment, as recovery on Open does;
  - damage below the recovery point (data the log had synced) is corruption:
    it is reported and NOT cut. The recovery point is seglog's
    recovery-point-offset-checkpoint in the directory, or a Kafka log.dir's
    line for the partition in the parent; a clean-shutdown marker means
    everything was synced;
  - missing or wrong indexes are rebuilt (not those that are the evidence of
    missing data), leftover .deleted/.cleaned/.swap files resolved as
    Kafka's recovery does;
  - an unusable checkpoint (one consume and produce refuse) is rewritten so
    that every record is kept, and a log start beyond the end of the log is
    set to the end; the report says what was written.
An entry larger than --max-entry-bytes is not read and never taken for
damage: raise the limit to verify it. Repair refuses to run while a log holds
the directory's lock.

--truncate-damaged is DESTRUCTIVE, the one escape hatch: with --repair it also
cuts at damage below the recovery point and DELETES every valid batch after
it (the report says how many records). Copy the directory first.

Exit status, as fsck(8), ORed over the directories: 0 clean, 1 problems found
and all repaired, 4 problems left, 8 usage or operational error.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("fsck: at least one directory is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("max-batch-bytes") {
				o.maxEntryBytes = o.oldMaxBatch
			}
			if o.indexInterval == 0 {
				// Kafka's index.interval.bytes=0, an entry per batch; the
				// library reads 0 as its default and a negative as this.
				o.indexInterval = -1
			}
			opts := fsck.RepairOptions{
				Options:            fsck.Options{Deep: o.deep, MaxEntryBytes: o.maxEntryBytes},
				TruncateDamaged:    o.truncateDamaged,
				IndexIntervalBytes: o.indexInterval,
			}
			return runFsck(cmd, args, o.repair, o.json, opts)
		},
	}
	// fsck(8)'s status for a usage error; its 2 means something else.
	cmd.Annotations = map[string]string{usageStatusKey: strconv.Itoa(fsck.ExitOperational)}
	fl := cmd.Flags()
	fl.BoolVar(&o.repair, "repair", false, "fix what the log's recovery would fix: cut damage past the recovery point, rebuild indexes, resolve leftovers")
	fl.BoolVar(&o.truncateDamaged, "truncate-damaged", false, "DESTRUCTIVE: with --repair, also cut at damage below the recovery point, deleting every valid batch after it")
	fl.BoolVar(&o.deep, "deep", false, "decode every record (decompression, lengths, counts, varints), not only framing and checksums")
	fl.BoolVar(&o.json, "json", false, "print one JSON object: dirs, problems, stats, exit")
	fl.IntVar(&o.maxEntryBytes, "max-entry-bytes", fsck.DefaultMaxEntryBytes, "read limit: largest entry read into memory to verify it; a larger entry the file holds is reported as read-limit (not damage) and left alone")
	// The old name of --max-entry-bytes, for scripts that use it.
	fl.IntVar(&o.oldMaxBatch, "max-batch-bytes", fsck.DefaultMaxEntryBytes, "old name of --max-entry-bytes")
	_ = fl.MarkHidden("max-batch-bytes") // cannot fail: defined just above
	fl.IntVar(&o.indexInterval, "index-interval-bytes", fsck.DefaultIndexIntervalBytes, "with --repair: index.interval.bytes used to rebuild indexes (0: an entry per batch)")
	// An entry's size is a 32-bit field: a larger limit means nothing more.
	limitFlag(cmd, "max-entry-bytes", 1, math.MaxInt32)
	limitFlag(cmd, "max-batch-bytes", 1, math.MaxInt32)
	exclusive(cmd, "max-entry-bytes", "max-batch-bytes")
	limitFlag(cmd, "index-interval-bytes", 0, math.MaxInt32)
	onlyWith(cmd, "index-interval-bytes", "repair")
	onlyWith(cmd, "truncate-damaged", "repair")
	return cmd
}

// fsckJSON is the --json output (DESIGN.md).
type fsckJSON struct {
	Dirs     []string       `json:"dirs"`
	Problems []fsck.Problem `json:"problems"`
	Stats    fsck.Stats     `json:"stats"`
	Exit     int            `json:"exit"`
}

func runFsck(cmd *cobra.Command, args []string, repair, asJSON bool, opts fsck.RepairOptions) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	exit := 0
	var dirs []string
	for _, arg := range args {
		found, err := fsck.PartitionDirs(fsckFS, arg)
		if err != nil {
			fmt.Fprintf(errw, "seglog fsck: %v\n", err)
			exit |= fsck.ExitOperational
			continue
		}
		dirs = append(dirs, found...)
	}
	prog := newProgress(errw, fsck.LogBytes(fsckFS, dirs))
	opts.Progress = func(n int64) { prog.Add64(n) }

	result := fsckJSON{Dirs: []string{}, Problems: []fsck.Problem{}, Stats: fsck.Stats{FirstOffset: -1, LastOffset: -1, MinTimestamp: -1, MaxTimestamp: -1}}
	var reports []*fsck.Report
	seen, lockedSaid := map[string]bool{}, map[string]bool{}
	for _, d := range dirs {
		var r *fsck.Report
		var err error
		if repair {
			r, err = fsck.Repair(fsckFS, d, opts)
			if errors.Is(err, fsck.ErrLocked) {
				// Every partition of a held store is refused over
				// the same lock: said once, not once per partition.
				if msg := err.Error(); !lockedSaid[msg] {
					lockedSaid[msg] = true
					fmt.Fprintf(errw, "seglog fsck: %v; checking only\n", err)
				}
				exit |= fsck.ExitOperational
				r, err = fsck.Check(fsckFS, d, opts.Options)
			}
		} else {
			r, err = fsck.Check(fsckFS, d, opts.Options)
		}
		if err != nil {
			fmt.Fprintf(errw, "seglog fsck: %s: %v\n", d, err)
			exit |= fsck.ExitOperational
			if r == nil {
				continue
			}
		}
		// Problems of a log.dir's checkpoints are found once per partition
		// directory; list each once.
		kept := r.Problems[:0:0]
		for _, p := range r.Problems {
			p.File = filepath.Join(d, p.File)
			if k := fmt.Sprintf("%s\x00%d\x00%s", p.File, p.Position, p.Kind); !seen[k] {
				seen[k] = true
				kept = append(kept, p)
			}
		}
		r.Problems = kept
		exit |= r.ExitCode()
		reports = append(reports, r)
		result.Dirs = append(result.Dirs, d)
		result.Problems = append(result.Problems, kept...)
		result.Stats.Add(r.Stats)
		for _, n := range r.Stats.Strays {
			result.Stats.Strays = append(result.Stats.Strays, filepath.Join(d, n))
		}
	}
	prog.Finish()
	result.Exit = exit
	if asJSON {
		enc := json.NewEncoder(out)
		if err := enc.Encode(result); err != nil {
			return err
		}
	} else {
		printFsck(out, reports, exit)
	}
	if exit != 0 {
		return &exitError{code: exit}
	}
	return nil
}

// printFsck writes the human-readable report, grouped by directory and
// file.
func printFsck(w io.Writer, reports []*fsck.Report, exit int) {
	var probs, errs, warns, fixed int
	for _, r := range reports {
		fmt.Fprintf(w, "%s: %s\n", r.Dir, describeStats(r))
		if len(r.Stats.Strays) > 0 {
			fmt.Fprintf(w, "  not a log's files, ignored as Kafka ignores them: %s\n", strings.Join(r.Stats.Strays, ", "))
		}
		file := ""
		for _, p := range r.Problems {
			if p.File != file {
				file = p.File
				fmt.Fprintf(w, "  %s\n", relTo(r.Dir, file))
			}
			mark := ""
			if p.Repaired {
				mark = " [repaired]"
				if p.Repair != "" {
					mark = " [repaired: " + p.Repair + "]"
				}
				fixed++
			}
			fmt.Fprintf(w, "    byte %d: %s %s: %s%s\n", p.Position, p.Severity, p.Kind, p.Detail, mark)
			probs++
			if p.Severity == fsck.Warning {
				warns++
			} else {
				errs++
			}
		}
	}
	fmt.Fprintf(w, "%d directories, %d problems (%d errors, %d warnings), %d repaired; exit status %d\n",
		len(reports), probs, errs, warns, fixed, exit)
}

func relTo(dir, file string) string {
	if rel, err := filepath.Rel(dir, file); err == nil {
		return rel
	}
	return file
}

func describeStats(r *fsck.Report) string {
	s := r.Stats
	var b strings.Builder
	if r.Layout != "" {
		fmt.Fprintf(&b, "%s layout, ", r.Layout)
	}
	fmt.Fprintf(&b, "%d segments, %d batches, %d records, %s", s.Segments, s.Batches, s.Records, fsckBytes(s.LogBytes))
	if s.FirstOffset >= 0 {
		fmt.Fprintf(&b, ", offsets %d-%d", s.FirstOffset, s.LastOffset)
	}
	if s.MinTimestamp >= 0 {
		fmt.Fprintf(&b, ", time %s to %s", time.UnixMilli(s.MinTimestamp).UTC().Format(time.RFC3339), time.UnixMilli(s.MaxTimestamp).UTC().Format(time.RFC3339))
	}
	if len(s.Codecs) > 0 {
		var cs []string
		for _, c := range []string{"none", "gzip", "snappy", "lz4", "zstd", "legacy-v0", "legacy-v1"} {
			if n := s.Codecs[c]; n > 0 {
				cs = append(cs, fmt.Sprintf("%s %d", c, n))
			}
		}
		fmt.Fprintf(&b, ", codecs: %s", strings.Join(cs, ", "))
	}
	if len(r.Problems) == 0 {
		b.WriteString("; clean")
	}
	return b.String()
}

func fsckBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n), 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, []string{"bytes", "KiB", "MiB", "GiB", "TiB"}[i])
}
