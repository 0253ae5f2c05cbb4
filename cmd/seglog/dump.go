package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

func init() { register(newDumpCmd) }

func newDumpCmd() *cobra.Command {
	var records bool
	var maxEntry, oldMaxBatch int
	cmd := &cobra.Command{
		Use:   "dump PATH",
		Short: "print a segment file or a partition directory batch by batch, like Kafka's dump-log tool",
		Long: `Print the batches of a .log file (position, offsets, record count, size, codec,
CRC validity, timestamps, producer fields), the entries of an .index,
.timeindex or .txnindex file, or all of these for every segment of a
partition directory (its quarantine files are listed after them). A
quarantine file (<base>-<byte>.quarantine: bytes recovery cut from a .log
and kept) is printed as a .log, after a line saying where its bytes came
from; its first bytes are the damage recovery found. Damaged regions are shown at the byte positions fsck
reports. --records also prints every record. An entry larger than
--max-entry-bytes (the read limit, as fsck's) is not read and is shown as
not read, never as damage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("max-batch-bytes") {
				maxEntry = oldMaxBatch
			}
			return runDump(cmd.OutOrStdout(), args[0], records, maxEntry)
		},
	}
	cmd.Flags().BoolVar(&records, "records", false, "print every record of every batch")
	cmd.Flags().IntVar(&maxEntry, "max-entry-bytes", fsck.DefaultMaxEntryBytes, "read limit: largest entry read into memory; a larger entry the file holds is shown as not read (not damage)")
	// The old name of --max-entry-bytes, for scripts that use it. It is
	// not the Log's --max-batch-bytes (max.message.bytes), whose name it
	// shared with another meaning and default.
	cmd.Flags().IntVar(&oldMaxBatch, "max-batch-bytes", fsck.DefaultMaxEntryBytes, "old name of --max-entry-bytes")
	_ = cmd.Flags().MarkHidden("max-batch-bytes") // cannot fail: defined just above
	// An entry's size is a 32-bit field: a larger limit means nothing more.
	limitFlag(cmd, "max-entry-bytes", 1, math.MaxInt32)
	limitFlag(cmd, "max-batch-bytes", 1, math.MaxInt32)
	exclusive(cmd, "max-entry-bytes", "max-batch-bytes")
	return cmd
}

func runDump(w io.Writer, path string, records bool, maxBatch int) error {
	fi, err := fsckFS.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		if detail, ok := fsck.Leftover(path); ok {
			fmt.Fprintf(w, "(%s is a leftover: %s)\n", path, detail)
		}
		return dumpFile(w, path, -1, records, maxBatch)
	}
	// What the directory is comes from layout's one classification, as
	// for every command: a Kafka log.dir, or a directory holding only
	// files that are not a log's, is refused as consume refuses it; files
	// that are not a log's beside a log's are ignored, as Kafka ignores
	// them, and named at the end.
	contents, err := layout.ReadContents(fsckFS, path)
	if err != nil {
		return err
	}
	if contents.Kind() == layout.DirNotALog && len(contents.Partition) == 0 {
		return &seglog.NotALogError{Dir: path, Subdirs: contents.Subdirs, Files: contents.Strays}
	}
	// Segment by segment, each .log before its indexes, as Kafka's tool
	// lists them; then the leftovers of interrupted operations (.deleted,
	// .cleaned, .swap), which are not part of the log: each is dumped on
	// its own, as the leftover it is.
	order := map[string]int{layout.LogSuffix: 0, layout.IndexSuffix: 1, layout.TimeIndexSuffix: 2, layout.TxnIndexSuffix: 3}
	var files, leftovers []string
	for _, name := range contents.Partition {
		kind, _, ok := fsck.FileKind(name)
		if !ok || kind == layout.SnapshotSuffix {
			continue
		}
		if _, left := fsck.Leftover(name); left {
			leftovers = append(leftovers, name)
		} else {
			files = append(files, name)
		}
	}
	byBase := func(a, b string) int {
		ka, ba, _ := fsck.FileKind(a)
		kb, bb, _ := fsck.FileKind(b)
		if ba != bb {
			return cmp.Compare(ba, bb)
		}
		return cmp.Compare(order[ka], order[kb])
	}
	slices.SortStableFunc(files, byBase)
	slices.SortStableFunc(leftovers, byBase)
	// Each .log's batches must end below the next segment's base
	// offset, as fsck checks.
	next := map[string]int64{}
	prev := ""
	for _, name := range files {
		if kind, base, _ := fsck.FileKind(name); kind == layout.LogSuffix {
			if prev != "" {
				next[prev] = base
			}
			prev = name
		}
	}
	n := 0
	for _, name := range files {
		if n > 0 {
			fmt.Fprintln(w)
		}
		n++
		nextBase, ok := next[name]
		if !ok {
			nextBase = -1
		}
		if err := dumpFile(w, filepath.Join(path, name), nextBase, records, maxBatch); err != nil {
			return err
		}
	}
	for _, name := range leftovers {
		if n > 0 {
			fmt.Fprintln(w)
		}
		n++
		detail, _ := fsck.Leftover(name)
		fmt.Fprintf(w, "(%s is a leftover, not part of the log: %s)\n", name, detail)
		if err := dumpFile(w, filepath.Join(path, name), -1, records, maxBatch); err != nil {
			return err
		}
	}
	if n == 0 {
		fmt.Fprintf(w, "%s: no segment files\n", path)
	}
	if len(contents.Strays) > 0 {
		fmt.Fprintf(w, "(not a log's files, ignored as Kafka ignores them: %s)\n", strings.Join(contents.Strays, ", "))
	}
	if len(contents.Misnamed) > 0 {
		fmt.Fprintf(w, "(named like segment files but not one, which Kafka misreads and seglog refuses to open the log beside: %s)\n", strings.Join(contents.Misnamed, ", "))
	}
	noteQuarantines(w, path, contents.Shared)
	return nil
}

// dumpFile prints one segment-directory file; nextBase is the base offset
// of the segment after a .log, -1 if none is known.
func dumpFile(w io.Writer, path string, nextBase int64, records bool, maxBatch int) error {
	if done, err := dumpQuarantine(w, path, records, maxBatch); done {
		return err
	}
	kind, base, ok := fsck.FileKind(path)
	if !ok {
		return fmt.Errorf("dump: %s: not a .log, .index, .timeindex or .txnindex file (name must be a 20-digit base offset) nor a quarantine file", path)
	}
	fmt.Fprintf(w, "Dumping %s\n", path)
	if kind == layout.LogSuffix {
		f, err := fsckFS.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		size, err := f.Size()
		if err != nil {
			return err
		}
		return dumpLog(w, f, size, base, nextBase, records, maxBatch)
	}
	const maxIndex = 1 << 30
	data, err := vfs.ReadFileLimit(fsckFS, path, maxIndex)
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	switch kind {
	case layout.IndexSuffix, layout.TimeIndexSuffix:
		ents, zeros, partial := fsck.DecodeIndex(data, base, kind == layout.TimeIndexSuffix)
		for _, e := range ents {
			if kind == layout.IndexSuffix {
				fmt.Fprintf(w, "offset: %d position: %d\n", e.Offset, e.Position)
			} else {
				fmt.Fprintf(w, "timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
			}
		}
		if zeros > 0 {
			fmt.Fprintf(w, "(%d zero-filled entries follow: preallocated space)\n", zeros)
		}
		if partial > 0 {
			fmt.Fprintf(w, "(%d bytes of a partial entry at byte %d)\n", partial, int64(len(data)-partial))
		}
	case layout.TxnIndexSuffix:
		ents, partial := fsck.DecodeTxnIndex(data)
		for _, e := range ents {
			fmt.Fprintf(w, "version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
				e.Version, e.ProducerID, e.FirstOffset, e.LastOffset, e.LastStable)
		}
		if partial > 0 {
			fmt.Fprintf(w, "(%d bytes of a partial entry at byte %d)\n", partial, int64(len(data)-partial))
		}
	default:
		fmt.Fprintf(w, "(%s files are not dumped)\n", kind)
	}
	return nil
}

// dumpLog prints a .log batch by batch with segment.Scanner, the scanner
// fsck uses, so the positions are the ones fsck reports.
func dumpLog(w io.Writer, f io.ReaderAt, size, base, nextBase int64, records bool, maxBatch int) error {
	sc := segment.NewScanner(f, size, maxBatch)
	sc.SetMinOffset(base)
	var it record.Iterator
	for {
		e, ok, err := sc.Next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if e.OverLimit() {
			fmt.Fprintf(w, "position: %d not read (%s, %d bytes): %v\n", e.Pos, e.Kind, e.Size, e.Err)
			continue
		}
		if e.Damaged() {
			fmt.Fprintf(w, "position: %d damaged (%s, %d bytes): %v\n", e.Pos, e.Kind, e.Size, e.Err)
			continue
		}
		if nextBase >= 0 && e.LastOffset() >= nextBase {
			fmt.Fprintf(w, "position: %d damaged (%s, %d bytes): batch offsets [%d, %d] reach the next segment's base offset %d\n",
				e.Pos, fsck.KindOffsetRange, e.Size, e.BaseOffset(), e.LastOffset(), nextBase)
			continue
		}
		sc.SetMinOffset(e.LastOffset() + 1)
		if e.Magic != record.CurrentMagic {
			fmt.Fprintf(w, "offset: %d position: %d size: %d magic: %d isvalid: true\n", e.BaseOffset(), e.Pos, e.Size, e.Magic)
			continue
		}
		b := e.Batch
		horizon := "none"
		if b.HasDeleteHorizon() {
			horizon = fmt.Sprint(b.BaseTimestamp())
		}
		fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d baseTimestamp: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: true\n",
			b.BaseOffset(), b.LastOffset(), b.NumRecords(), b.BaseSequence(), b.LastSequence(), b.ProducerID(), b.ProducerEpoch(),
			b.PartitionLeaderEpoch(), b.IsTransactional(), b.IsControl(), horizon, e.Pos, b.BaseTimestamp(), b.TimestampType(), b.MaxTimestamp(),
			e.Size, e.Magic, b.Codec(), b.CRC())
		if records {
			dumpRecords(w, b, &it)
		}
	}
}

func dumpRecords(w io.Writer, b record.Batch, it *record.Iterator) {
	if err := it.Reset(b); err != nil {
		fmt.Fprintf(w, "| error: %v\n", err)
		return
	}
	seq := b.BaseSequence()
	for it.Next() {
		r := it.Record()
		var hk []string
		for _, h := range r.Headers {
			hk = append(hk, h.Key)
		}
		s := int64(-1)
		if seq >= 0 {
			s = (int64(seq) + r.Offset - b.BaseOffset()) % (1 << 31)
		}
		fmt.Fprintf(w, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
			r.Offset, b.TimestampType(), r.Timestamp, dumpSize(r.Key), dumpSize(r.Value), s, strings.Join(hk, ","))
		if b.IsControl() {
			if m, err := record.ParseMarker(r); err == nil {
				fmt.Fprintf(w, " endTxnMarker: %v coordinatorEpoch: %d\n", m.Type, m.CoordinatorEpoch)
				continue
			}
			if _, typ, err := record.ParseControlKey(r.Key); err == nil {
				fmt.Fprintf(w, " controlType: %v\n", typ)
				continue
			}
		}
		fmt.Fprintf(w, " key: %s payload: %s\n", dumpQuoted(r.Key), dumpQuoted(r.Value))
	}
	if err := it.Err(); err != nil {
		fmt.Fprintf(w, "| error: %v\n", err)
	}
}

func dumpSize(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

func dumpQuoted(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%q", b)
}
