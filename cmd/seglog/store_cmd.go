package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog/internal/cluster"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

func init() {
	register(newTopicsCmd)
	register(newGroupsCmd)
}

// openStoreWith opens the store in dir: read-only (no lock, nothing
// written) for the read commands, else to write it, as cmd, with its
// lock. Only commands that create something may create the directory or
// a store in it; the others refuse a missing one, or one holding no
// store, so a typo does not leave an empty store behind.
func openStoreWith(cmd *cobra.Command, dir string, create, readOnly bool) (*store.Store, error) {
	if !readOnly {
		return openStoreWriter(cmd, dir, create)
	}
	if err := storeDirExists(dir); err != nil {
		return nil, err
	}
	return store.Open(dir, store.Options{Logger: storeLogger(cmd), ReadOnly: true})
}

// storeDirExists refuses a dir that is missing or not a directory, with
// an error that names it.
func storeDirExists(dir string) error {
	st, err := vfs.Default.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: no such store directory", dir)
		}
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	return nil
}

// readStore runs f on the store in dir opened read-only: no lock, nothing
// written, so the read commands work without write permission and beside a
// running writer (seglog produce, a server).
func readStore(cmd *cobra.Command, dir string, f func(*store.Store) error) error {
	s, err := openStoreWith(cmd, dir, false, true)
	if err != nil {
		return err
	}
	err = f(s)
	return errors.Join(err, s.Close())
}

// withStore runs f on the store in dir, opened to write it, and closes
// it, joining errors. A store held by another command is refused, naming
// it; held by a server, the refusal says how to do the work through it
// (advice, given the server's address).
func withStore(cmd *cobra.Command, dir string, create bool, advice func(addr string) string, f func(*store.Store) error) error {
	s, err := openStoreWith(cmd, dir, create, false)
	return runOpened(s, err, advice, f)
}

// runOpened finishes withStore and its kin after their open: a failed
// open gets the advice, otherwise f runs on s and s is closed, errors
// joined.
func runOpened(s *store.Store, err error, advice func(addr string) string, f func(*store.Store) error) error {
	if err != nil {
		return withAdvice(err, advice)
	}
	err = f(s)
	return errors.Join(err, s.Close())
}

func newTopicsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Create, list, describe, grow and delete topics in a store directory (a Kafka log.dir)",
		Long: `Manage the topics of a store: a directory laid out as a Kafka log.dir, one
directory per partition named TOPIC-N (docs/store.md). Like kafka-topics.sh.

list and describe open the store read-only: no lock, nothing written, so they
work without write permission and beside the store's writer. create,
add-partitions (or alter, its other name) and delete take the store's lock: a store another process
holds is refused, naming it (command, pid, and the listener of seglog serve,
with the kafka-topics.sh command to run through it). Only create makes a
store; the others refuse a directory that holds none.`,
	}
	var (
		partitions int
		configs    []string
	)
	create := &cobra.Command{
		Use:   "create DIR NAME",
		Short: "Create a topic of --partitions partitions with --config key=value settings",
		Long: `Create a topic. Names are Kafka's: 1 to 249 characters of [a-zA-Z0-9._-],
not "." or "..". Configs are Kafka's topic configs: ` + strings.Join(store.Keys(), ", ") + `.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := store.DefaultTopicConfig()
			if err := cfg.SetAll(configs); err != nil {
				return asUsageError(cmd, err)
			}
			if err := store.ValidateTopic(args[1]); err != nil {
				return asUsageError(cmd, err)
			}
			advice := func(addr string) string {
				return fmt.Sprintf("create it through the server: kafka-topics.sh --bootstrap-server %s --create --topic %s --partitions %d", addr, args[1], partitions)
			}
			return withStore(cmd, args[0], true, advice, func(s *store.Store) error {
				if err := s.CreateTopic(args[1], partitions, cfg); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Created topic %s with %d partitions.\n", args[1], partitions)
				return nil
			})
		},
	}
	create.Flags().IntVar(&partitions, "partitions", 1, "number of partitions")
	create.Flags().StringArrayVar(&configs, "config", nil, "a topic config as key=value (repeatable)")
	limitFlag(create, "partitions", 1, store.MaxPartitions)

	list := &cobra.Command{
		Use:   "list DIR",
		Short: "List the topics",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return readStore(cmd, args[0], func(s *store.Store) error {
				for _, t := range s.Topics() {
					fmt.Fprintln(cmd.OutOrStdout(), t)
				}
				return nil
			})
		},
	}
	describe := &cobra.Command{
		Use:   "describe DIR [NAME]",
		Short: "Describe topics: configs, and per partition the offsets, size, segments and each group's lag",
		Long: `Describe topics: configs, and per partition the offsets, size, segments and
each group's lag. On a cluster node's DIR (seglog serve --voters), also each
partition's replicas, and its leader, leader epoch and ISR as the node last
knew them: the node records them in DIR/.cluster_node/` + cluster.ReplicasFile + `
when they change, so this works the same whether the node runs or not, and
takes no lock and writes nothing. docs/cluster.md, "Tools".`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A cluster node's DIR: its record of the replicas, read
			// before the store, so a damaged record fails before any
			// output.
			rv, err := readReplicaView(args[0])
			if err != nil {
				return err
			}
			return readStore(cmd, args[0], func(s *store.Store) error {
				names := s.Topics()
				if len(args) == 2 {
					names = []string{args[1]}
				}
				// Every topic first: an unknown one fails before any
				// output, the cluster's header included.
				infos := make([]store.TopicInfo, len(names))
				for i, n := range names {
					if infos[i], err = s.DescribeTopic(n); err != nil {
						return err
					}
				}
				if rv.cluster {
					fmt.Fprintln(cmd.OutOrStdout(), rv.header())
				}
				var errs []error
				for i, n := range names {
					info := infos[i]
					printTopic(cmd, info)
					rv.printReplicas(cmd.OutOrStdout(), n)
					for _, p := range info.Partitions {
						if p.Err != nil {
							errs = append(errs, fmt.Errorf("%s-%d: %w", n, p.Partition, p.Err))
						}
					}
				}
				return errors.Join(errs...)
			})
		},
	}
	var grow int
	add := &cobra.Command{
		Use: "add-partitions DIR NAME",
		// kafka-topics.sh grows a topic with --alter --partitions.
		Aliases: []string{"alter"},
		Short:   "Grow a topic to --partitions partitions (keys move, as in Kafka); also named alter",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			advice := func(addr string) string {
				return fmt.Sprintf("grow it through the server: kafka-topics.sh --bootstrap-server %s --alter --topic %s --partitions %d", addr, args[1], grow)
			}
			return withStore(cmd, args[0], false, advice, func(s *store.Store) error {
				if err := s.AddPartitions(args[1], grow); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Topic %s now has %d partitions.\n", args[1], grow)
				return nil
			})
		},
	}
	add.Flags().IntVar(&grow, "partitions", 0, "the new partition count")
	_ = add.MarkFlagRequired("partitions") // cannot fail: defined just above
	limitFlag(add, "partitions", 1, store.MaxPartitions)
	del := &cobra.Command{
		Use:   "delete DIR NAME",
		Short: "Delete a topic: its partition directories are renamed to TOPIC-N.<id>-delete and removed",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			advice := func(addr string) string {
				return fmt.Sprintf("delete it through the server: kafka-topics.sh --bootstrap-server %s --delete --topic %s", addr, args[1])
			}
			return withStore(cmd, args[0], false, advice, func(s *store.Store) error {
				if err := s.DeleteTopic(args[1]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted topic %s.\n", args[1])
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, describe, add, del)
	acceptDirFirst(cmd)
	return cmd
}

func printTopic(cmd *cobra.Command, info store.TopicInfo) {
	out := cmd.OutOrStdout()
	// Configs: lists what was set on the topic, as kafka-topics.sh
	// --describe does; the table below gives every config, with where its
	// value comes from in DescribeConfigs' terms (the server answers the
	// same).
	var cfgs []string
	for _, k := range info.Config.Overrides() {
		cfgs = append(cfgs, k+"="+info.Config.Get(k))
	}
	fmt.Fprintf(out, "Topic: %s\tPartitionCount: %d\tConfigs: %s\n", info.Name, len(info.Partitions), strings.Join(cfgs, ","))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONFIG\tVALUE\tSOURCE")
	for _, k := range store.Keys() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k, info.Config.Get(k), info.Config.Source(k))
	}
	tw.Flush()
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tSTART\tEND\tSIZE\tSEGMENTS\tLAG")
	for _, p := range info.Partitions {
		if p.Err != nil {
			fmt.Fprintf(tw, "%d\t-\t-\t-\t-\t- (not readable: see below)\n", p.Partition)
			continue
		}
		var lags []string
		for g, l := range p.Lag {
			lags = append(lags, g+"="+strconv.FormatInt(l, 10))
		}
		slices.Sort(lags)
		lag := strings.Join(lags, ",")
		if lag == "" {
			lag = "-"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%s\n", p.Partition, p.StartOffset, p.EndOffset, p.Size, p.Segments, lag)
	}
	tw.Flush()
}

func newGroupsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "List, describe (lag), reset and delete consumer groups in a store directory",
		Long: `Manage consumer groups, like kafka-consumer-groups.sh. A group's committed
offsets live in the store's __consumer_offsets topic in Kafka's record format.

list and describe open the store read-only: no lock, nothing written, so they
work without write permission and beside the store's writer. reset and
delete take the store's lock: a store another process holds is refused,
naming it (with the kafka-consumer-groups.sh command to run when seglog
serve holds it).`,
	}
	list := &cobra.Command{
		Use:   "list DIR",
		Short: "List the groups with committed offsets",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return readStore(cmd, args[0], func(s *store.Store) error {
				for _, g := range s.Groups() {
					fmt.Fprintln(cmd.OutOrStdout(), g)
				}
				return nil
			})
		},
	}
	describe := &cobra.Command{
		Use:   "describe DIR GROUP",
		Short: "Print a group's committed offset, log end and lag per topic and partition",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return readStore(cmd, args[0], func(s *store.Store) error {
				rows, total, err := s.DescribeGroup(args[1])
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-START-OFFSET\tLOG-END-OFFSET\tLAG")
				var errs []error
				for _, r := range rows {
					if r.Err != nil {
						fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t-\t-\t- (not readable: see below)\n", args[1], r.Topic, r.Partition, r.Committed)
						errs = append(errs, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, r.Err))
						continue
					}
					note := ""
					if r.PastEnd() {
						// Kafka stores such a commit; the consumers'
						// auto.offset.reset applies when they fetch.
						note = " (committed past the log end)"
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d%s\n", args[1], r.Topic, r.Partition, r.Committed, r.Start, r.End, r.Lag, note)
				}
				tw.Flush()
				fmt.Fprintf(cmd.OutOrStdout(), "TOTAL LAG: %d\n", total)
				return errors.Join(errs...)
			})
		},
	}
	var (
		topic            string
		earliest, latest bool
		toOffset, shift  int64
		toDatetime       string
	)
	reset := &cobra.Command{
		Use:   "reset DIR GROUP --topic T (--to-earliest | --to-latest | --to-offset N | --to-datetime T | --shift-by N)",
		Short: "Move a group's committed offsets on a topic, as kafka-consumer-groups.sh --reset-offsets --execute",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var r store.Reset
			n := 0
			f := cmd.Flags()
			if earliest {
				r.Kind, n = store.ToEarliest, n+1
			}
			if latest {
				r.Kind, n = store.ToLatest, n+1
			}
			if f.Changed("to-offset") {
				r.Kind, r.Offset, n = store.ToOffset, toOffset, n+1
			}
			if f.Changed("shift-by") {
				r.Kind, r.Shift, n = store.ShiftBy, shift, n+1
			}
			if f.Changed("to-datetime") {
				ts, err := parseDatetime(toDatetime)
				if err != nil {
					return asUsageError(cmd, err)
				}
				r.Kind, r.Time, n = store.ToTime, ts, n+1
			}
			if n != 1 {
				return usageErrorf(cmd, "give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
			}
			advice := func(addr string) string {
				return fmt.Sprintf("reset it through the server (with the group's consumers stopped): kafka-consumer-groups.sh --bootstrap-server %s --group %s --topic %s --reset-offsets %s --execute", addr, args[1], topic, resetFlag(cmd))
			}
			return withStore(cmd, args[0], false, advice, func(s *store.Store) error {
				got, err := s.ResetOffsets(args[1], topic, r)
				if err != nil {
					return err
				}
				parts := make([]int32, 0, len(got))
				for p := range got {
					parts = append(parts, p)
				}
				slices.Sort(parts)
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tNEW-OFFSET")
				for _, p := range parts {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", args[1], topic, p, got[p])
				}
				return tw.Flush()
			})
		},
	}
	rf := reset.Flags()
	rf.StringVar(&topic, "topic", "", "the topic whose offsets move")
	rf.BoolVar(&earliest, "to-earliest", false, "to each partition's start")
	rf.BoolVar(&latest, "to-latest", false, "to each partition's end")
	rf.Int64Var(&toOffset, "to-offset", 0, "to offset N (clamped to each partition)")
	rf.StringVar(&toDatetime, "to-datetime", "", "to the first record at or after T (RFC 3339, or YYYY-MM-DDTHH:mm:SS[.sss] in UTC)")
	rf.Int64Var(&shift, "shift-by", 0, "by N records (negative: back)")
	_ = reset.MarkFlagRequired("topic") // cannot fail: defined just above
	limitFlag(reset, "to-offset", 0, math.MaxInt64)
	anyValue(reset, "shift-by")
	del := &cobra.Command{
		Use:   "delete DIR GROUP",
		Short: "Delete a group's committed offsets (tombstones in __consumer_offsets)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			advice := func(addr string) string {
				return fmt.Sprintf("delete it through the server (with the group's consumers stopped): kafka-consumer-groups.sh --bootstrap-server %s --delete --group %s", addr, args[1])
			}
			return withStore(cmd, args[0], false, advice, func(s *store.Store) error {
				if err := s.DeleteGroup(args[1]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted group %s.\n", args[1])
				return nil
			})
		},
	}
	cmd.AddCommand(list, describe, reset, del)
	acceptDirFirst(cmd)
	return cmd
}

// parseDatetime accepts RFC 3339 and Kafka's tool format
// YYYY-MM-DDTHH:mm:SS.sss (taken as UTC here).
func parseDatetime(s string) (int64, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("--to-datetime %q: want RFC 3339 or YYYY-MM-DDTHH:mm:SS[.sss]", s)
}

// resetFlag renders groups reset's target as kafka-consumer-groups.sh
// spells it.
func resetFlag(cmd *cobra.Command) string {
	f := cmd.Flags()
	for _, n := range []string{"to-earliest", "to-latest"} {
		if f.Changed(n) {
			return "--" + n
		}
	}
	for _, n := range []string{"to-offset", "shift-by", "to-datetime"} {
		if f.Changed(n) {
			return "--" + n + " " + f.Lookup(n).Value.String()
		}
	}
	return ""
}
