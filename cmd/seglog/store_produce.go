package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
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
		cmd.Long += produceStoreHelp
	case "consume":
		f.StringVar(&group, "group", "", "with --topic: read from this group's committed offsets and commit them (its only write)")
		f.BoolVar(&fromBeginning, "from-beginning", false, "with --topic: start at the earliest offset when the group has no valid commit (else the latest)")
		cmd.Long += consumeStoreHelp
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
			err := single(cmd, args)
			if errors.Is(err, seglog.ErrNotALog) {
				if store, _ := layout.IsLogDir(vfs.Default, args[0]); store {
					return fmt.Errorf("%w; %s is a store: give --topic TOPIC to %s a topic", err, args[0], cmd.Name())
				}
			}
			return err
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

// produceStoreHelp and consumeStoreHelp end produce's and consume's
// --help: what they do with a store.
const (
	produceStoreHelp = `

With --topic, DIR is a store (seglog topics): each line goes to the
partition its key picks, as Kafka's partitioner does (keyless lines stick to
one partition per batch); --verbose prints each record's key, partition and
offset. The store is written through its lock; when another command holds
it, produce refuses, naming it; when seglog serve holds it, the records go
through the server as a Kafka producer.

A partition directory of a store (STORE/TOPIC-N) is written through the
store too: its lock and checkpoints, no file of its own in the partition
directory, the Log shaped by the topic's config (the log flags are refused
there). A partition the topic does not have is refused before the store
is opened, changing nothing. Beside seglog serve it is refused with the
kcat command that produces to that partition through the server. A
partition of a Kafka broker's log.dir that is not a seglog store is
refused.`
	consumeStoreHelp = `

With --topic, DIR is a store (seglog topics) and the records of every
partition are printed as KEY<TAB>VALUE lines (a keyless record: the value
alone). The store is opened read-only: no lock, no file written, so it works
without write permission and beside the store's writer (seglog serve,
produce --topic); with --follow it looks again every 100 ms and prints what
they append, until SIGINT or SIGTERM (exit status 0). Without --group it
reads from the start with --from-beginning, else only new records.

With --group it starts at the group's committed offsets (auto.offset.reset
earliest with --from-beginning, else latest) and commits what it printed:
after its first round, every 5 s while following, and when it stops. The
commits are its only write: it takes the store's lock for each commit
alone, or, when seglog serve holds the store, commits through the server.
When another command holds the store the commits wait for it; if it still
holds it when consume stops, consume exits 1 naming it and the offsets it
printed but did not commit.

A partition that cannot be read (damage, missing data, an inconsistent
checkpoint) does not stop the others: they are printed (a follower goes on
following them and reports the partition at once), and consume ends with
the partition's error, exit status 3 for missing data and 1 otherwise.`
)

// placed is where a record of produce --topic went.
type placed struct {
	partition int32
	offset    int64
}

// produceTopic appends stdin's lines, "key<TAB>value" (no TAB: a keyless
// value), to a topic; the key picks the partition as Kafka's partitioner
// does. --batch lines at a time are one Produce call: one batch per
// partition touched. The store is written through its lock; when `seglog
// serve` holds it, through the server, as a Kafka producer.
func produceTopic(cmd *cobra.Command, dir, topic string, verbose bool) error {
	perBatch, err := cmd.Flags().GetInt("batch")
	if err != nil {
		return err
	}
	if perBatch < 1 {
		return fmt.Errorf("invalid --batch %d: must be at least 1", perBatch)
	}
	s, err := openStoreWriter(cmd, dir, false)
	if addr, ok := servedBy(err); ok {
		return produceTopicViaServer(cmd, dir, addr, topic, verbose, perBatch)
	}
	if err != nil {
		return withAdvice(err, nil)
	}
	err = func() error {
		if _, err := s.Partitions(topic); err != nil {
			return err
		}
		return produceTopicLines(cmd, topic, verbose, perBatch, "", func(recs []record.Record) ([]placed, error) {
			res, err := s.Produce(topic, recs...)
			out := make([]placed, len(res))
			for i, r := range res {
				out[i] = placed{r.Partition, r.Offset}
			}
			return out, err
		})
	}()
	return errors.Join(err, s.Close())
}

// produceTopicViaServer is produce --topic through the server at addr
// that holds the store: Kafka Produce requests (acks=all) partitioned as
// the store partitions (produceViaServer). The topic is looked up in the
// store first, read-only, so that a misspelt one is refused as the store
// refuses it rather than created by the server, and so that its partition
// count is known.
func produceTopicViaServer(cmd *cobra.Command, dir, addr, topic string, verbose bool, perBatch int) error {
	var partitions int
	if err := readStore(cmd, dir, func(s *store.Store) error {
		n, err := s.Partitions(topic)
		partitions = int(n)
		return err
	}); err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := dialServer(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	sticky := rand.IntN(partitions)
	how := fmt.Sprintf(" through the server at %s (it holds %s)", addr, dir)
	return produceTopicLines(cmd, topic, verbose, perBatch, how, func(recs []record.Record) ([]placed, error) {
		// As the store does: a keyed record to its key's partition, a
		// call's keyless records to one partition, the next one's to the
		// next.
		parts := make([]int32, len(recs))
		keyless := false
		for i, r := range recs {
			if r.Key != nil {
				parts[i] = store.PartitionForKey(r.Key, partitions)
			} else {
				parts[i], keyless = int32(sticky), true
			}
		}
		if keyless {
			sticky = (sticky + 1) % partitions
		}
		return produceViaServer(ctx, c, topic, recs, parts)
	})
}

// produceViaServer sends recs to topic through c, record i to partition
// parts[i], with acks=all, and returns where each went, in order. Each
// partition's records are one batch, or several when they would make a
// batch over maxServerBatch; a Produce request carries at most one batch
// per partition (the server takes no more), so the batches go in rounds,
// each partition's in order.
func produceViaServer(ctx context.Context, c *serverConn, topic string, recs []record.Record, parts []int32) ([]placed, error) {
	type batch struct {
		part  int32
		idx   []int // the records', in recs
		bytes int   // their keys', values' and headers' bytes
	}
	var order []int32 // partitions in the order first touched
	byPart := map[int32][]*batch{}
	for i, p := range parts {
		size := len(recs[i].Key) + len(recs[i].Value)
		for _, h := range recs[i].Headers {
			size += len(h.Key) + len(h.Value)
		}
		bs := byPart[p]
		if len(bs) == 0 {
			order = append(order, p)
		}
		if len(bs) == 0 || bs[len(bs)-1].bytes+size > maxServerBatch {
			bs = append(bs, &batch{part: p})
			byPart[p] = bs
		}
		last := bs[len(bs)-1]
		last.idx = append(last.idx, i)
		last.bytes += size
	}
	b := record.NewBuilder(record.None)
	now := time.Now().UnixMilli()
	out := make([]placed, len(recs))
	for round := 0; ; round++ {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, int32(serverTimeout/time.Millisecond)
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		var sent []*batch
		for _, p := range order {
			if round >= len(byPart[p]) {
				continue
			}
			bt := byPart[p][round]
			b.Reset()
			for k, i := range bt.idx {
				ts := recs[i].Timestamp
				if ts == 0 {
					ts = now
				}
				if err := b.AddAt(int64(k), ts, &recs[i]); err != nil {
					return out, err
				}
			}
			built, err := b.Build()
			if err != nil {
				return out, err
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, append([]byte(nil), built...)
			rt.Partitions = append(rt.Partitions, rp)
			sent = append(sent, bt)
		}
		if len(sent) == 0 {
			return out, nil
		}
		req.Topics = append(req.Topics, rt)
		r, err := c.request(ctx, req)
		if err != nil {
			return out, fmt.Errorf("producing through the server at %s: %w", c.addr, err)
		}
		base := map[int32]int64{}
		for _, t := range r.(*kmsg.ProduceResponse).Topics {
			for _, rp := range t.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return out, fmt.Errorf("producing to %s-%d through the server at %s: %w", topic, rp.Partition, c.addr, err)
				}
				base[rp.Partition] = rp.BaseOffset
			}
		}
		for _, bt := range sent {
			off, ok := base[bt.part]
			if !ok {
				return out, fmt.Errorf("producing through the server at %s: no answer for %s-%d", c.addr, topic, bt.part)
			}
			for k, i := range bt.idx {
				out[i] = placed{bt.part, off + int64(k)}
			}
		}
	}
}

// maxServerBatch bounds the key, value and header bytes of one batch
// produceViaServer sends (a single larger record goes alone), under
// Kafka's default max.message.bytes (1,048,588) with room for the batch
// header and the records' framing.
const maxServerBatch = 1000 << 10

// produceTopicLines reads stdin's lines and hands them to send, perBatch
// at a time; how says which way they went, for the summary.
func produceTopicLines(cmd *cobra.Command, topic string, verbose bool, perBatch int, how string, send func([]record.Record) ([]placed, error)) error {
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
		res, err := send(recs)
		if err != nil {
			return fmt.Errorf("%w; stored %d records%s before this call", err, total, how)
		}
		if verbose {
			for i, r := range res {
				key := "(null)"
				if recs[i].Key != nil {
					key = string(recs[i].Key)
				}
				fmt.Fprintf(out, "%s\t%s-%d\t%d\n", key, topic, r.partition, r.offset)
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
	fmt.Fprintf(cmd.ErrOrStderr(), "produced %d records to %s in %d calls%s\n", total, topic, calls, how)
	return nil
}

// appender is what produce appends with: a standalone *seglog.Log, or the
// store.Writer of a partition directory of a store.
type appender interface {
	Append(recs ...record.Record) (seglog.AppendInfo, error)
	AppendBatch(batch []byte) (seglog.AppendInfo, error)
	View() seglog.View
}

// openProduceLog opens the log produce appends to. A partition directory
// of a store is written through the store: the store is opened with its
// lock (refused, naming the holder, when another holds it) and the
// partition is appended to with the store's Writer, so its checkpoints
// are the log.dir's and no file of its own appears in the partition.
// opts' batch limit becomes the topic's. close closes the Log (or the
// store).
func openProduceLog(cmd *cobra.Command, dir string, opts *seglog.Options) (l appender, close func() error, err error) {
	logDir, topic, part, ok, err := partitionOfStore(dir)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		l, err := seglog.Open(dir, *opts)
		if err != nil {
			return nil, nil, err
		}
		return l, l.Close, nil
	}
	if err := refuseLogFlags(cmd, dir, logDir, topic, part, logShapingFlags...); err != nil {
		return nil, nil, err
	}
	s, err := openStoreWriter(cmd, logDir, false)
	if err != nil {
		return nil, nil, withAdvice(err, func(addr string) string {
			return fmt.Sprintf("produce through it: seglog produce %s --topic %s (keys pick the partition), or to this partition: kcat -P -b %s -t %s -p %d -K '\\t'",
				logDir, topic, addr, topic, part)
		})
	}
	w, err := s.Writer(topic, part)
	if err == nil {
		var info store.TopicInfo
		if info, err = s.DescribeTopic(topic); err == nil {
			opts.MaxBatchBytes = info.Config.MaxMessageBytes
		}
	}
	if err != nil {
		return nil, nil, errors.Join(err, s.Close())
	}
	return w, s.Close, nil
}
