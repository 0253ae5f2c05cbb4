package main

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// topicFlags are the flags of produce and consume that apply with
// --topic, and storeOnlyFlags those that apply only with it. Every other
// flag works on one log and is refused with --topic (withStoreTopic).
var (
	topicFlags     = map[string][]string{"produce": {"batch", "verbose"}, "consume": {"follow", "max", "group", "from-beginning"}}
	storeOnlyFlags = []string{"group", "from-beginning", "verbose"}
)

// withStoreTopic adds the store mode to produce and consume: with --topic,
// DIR is a store (a Kafka log.dir) and the command works on a topic; without
// it, the command is unchanged and works on one log.
func withStoreTopic(cmd *cobra.Command) *cobra.Command {
	var (
		topic, group           string
		verbose, fromBeginning bool
	)
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "DIR is a store: work on this topic (seglog topics)")
	switch cmd.Name() {
	case "produce":
		f.BoolVar(&verbose, "verbose", false, "with --topic: print each record's key, partition and offset")
	case "consume":
		f.StringVar(&group, "group", "", "with --topic: read from this group's committed offsets and commit as it goes")
		f.BoolVar(&fromBeginning, "from-beginning", false, "with --topic: start at the earliest offset when the group has no valid commit (else the latest)")
	}
	f.VisitAll(func(fl *pflag.Flag) {
		switch {
		case slices.Contains(storeOnlyFlags, fl.Name):
			onlyWith(cmd, fl.Name, "topic")
		case fl.Name == "topic" || slices.Contains(topicFlags[cmd.Name()], fl.Name):
		default:
			notWith(cmd, "topic", fl.Name)
		}
	})
	single := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if topic == "" {
			return single(cmd, args)
		}
		if cmd.Name() == "produce" {
			return produceTopic(cmd, args[0], topic, verbose)
		}
		// --follow is consume's own flag; with --topic it keeps waiting
		// for new records until --max or an interrupt.
		follow, err := cmd.Flags().GetBool("follow")
		if err != nil {
			return err
		}
		return consumeTopic(cmd, args[0], topic, group, fromBeginning, follow)
	}
	return cmd
}

// produceTopic appends stdin's lines, "key<TAB>value" (no TAB: a keyless
// value), to a topic; the key picks the partition as Kafka's partitioner
// does. --batch lines at a time are one Produce call: one batch per
// partition touched.
func produceTopic(cmd *cobra.Command, dir, topic string, verbose bool) error {
	perBatch, err := cmd.Flags().GetInt("batch")
	if err != nil {
		return err
	}
	if perBatch < 1 {
		return fmt.Errorf("invalid --batch %d: must be at least 1", perBatch)
	}
	return withStore(cmd, dir, false, func(s *store.Store) error {
		if _, err := s.Partitions(topic); err != nil {
			return err
		}
		sc := bufio.NewScanner(cmd.InOrStdin())
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		out := bufio.NewWriter(cmd.OutOrStdout())
		defer out.Flush()
		var recs []record.Record
		var total, calls int
		flush := func() error {
			if len(recs) == 0 {
				return nil
			}
			res, err := s.Produce(topic, recs...)
			if err != nil {
				return err
			}
			if verbose {
				for i, r := range res {
					key := "(null)"
					if recs[i].Key != nil {
						key = string(recs[i].Key)
					}
					fmt.Fprintf(out, "%s\t%s-%d\t%d\n", key, topic, r.Partition, r.Offset)
				}
			}
			total += len(recs)
			calls++
			recs = recs[:0]
			return nil
		}
		for sc.Scan() {
			line := sc.Bytes()
			var r record.Record
			if k, v, ok := bytes.Cut(line, []byte{'\t'}); ok {
				r.Key, r.Value = bytes.Clone(k), bytes.Clone(v)
			} else {
				r.Value = bytes.Clone(line)
			}
			recs = append(recs, r)
			if len(recs) == perBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "produced %d records to %s in %d calls\n", total, topic, calls)
		return nil
	})
}

// consumeTopic prints a topic's records, every partition, as
// "key<TAB>value" lines (a keyless record: the value alone). With a group
// it starts at the group's committed offsets (auto.offset.reset earliest
// with --from-beginning, else latest), commits after each partition's
// records are written, and reports records retention removed before the
// group read them. Without a group it reads from the start with
// --from-beginning, else only new records, and commits nothing.
func consumeTopic(cmd *cobra.Command, dir, topic, group string, fromBeginning, follow bool) error {
	limit, err := cmd.Flags().GetInt64("max")
	if err != nil {
		return err
	}
	reset := store.Latest
	if fromBeginning {
		reset = store.Earliest
	}
	return withStore(cmd, dir, false, func(s *store.Store) error {
		n, err := s.Partitions(topic)
		if err != nil {
			return err
		}
		pos := make([]int64, n)
		for p := range int32(n) {
			l, release, err := s.AcquireLog(topic, p)
			if err != nil {
				return err
			}
			pos[p] = l.EndOffset()
			if fromBeginning {
				pos[p] = l.StartOffset()
			}
			release() // a topic of many partitions stays within the store's budget of open Logs
			if group != "" {
				ps, err := s.Position(group, topic, p, reset)
				if err != nil {
					return err
				}
				if ps.Skipped > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "group %s: %s-%d: %d records skipped (committed %d was below the start; auto.offset.reset moved it to %d)\n",
						group, topic, p, ps.Skipped, ps.Offset-ps.Skipped, ps.Offset)
				}
				pos[p] = ps.Offset
				if ps.Reset {
					// As a Kafka consumer commits its position on every
					// assigned partition: the group's lag then covers
					// the whole topic.
					if err := s.Commit(group, topic, map[int32]int64{p: ps.Offset}); err != nil {
						return err
					}
				}
			}
		}
		out := bufio.NewWriter(cmd.OutOrStdout())
		defer out.Flush()
		var printed int64
		ctx := cmd.Context()
		for {
			for p := range int32(n) {
				if limit >= 0 && printed >= limit {
					return nil
				}
				l, release, err := s.AcquireLog(topic, p)
				if err != nil {
					return err
				}
				moved := false
				for r, err := range l.Records(pos[p]) {
					if err != nil {
						release()
						return err
					}
					if limit >= 0 && printed >= limit {
						break
					}
					if r.Key != nil {
						out.Write(r.Key)
						out.WriteByte('\t')
					}
					out.Write(r.Value)
					out.WriteByte('\n')
					printed++
					pos[p] = r.Offset + 1
					moved = true
				}
				release()
				if err := out.Flush(); err != nil {
					return err
				}
				if group != "" && moved {
					if err := s.Commit(group, topic, map[int32]int64{p: pos[p]}); err != nil {
						return err
					}
				}
			}
			if !follow || (limit >= 0 && printed >= limit) {
				return nil
			}
			if ctx != nil {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(100 * time.Millisecond):
				}
			} else {
				time.Sleep(100 * time.Millisecond)
			}
		}
	})
}
