package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

func init() { register(newProduceCmd) }

// recordOverhead over-estimates the bytes a record adds to a batch beyond
// its key and value (length, attributes, deltas and key/value/header-count
// varints), so a batch cut by the estimate never exceeds --max-batch-bytes.
const recordOverhead = 1 + 5 + 1 + 10 + 5 + 5 + 5 + 5

func newProduceCmd() *cobra.Command {
	var (
		batch   int
		batches string
	)
	cmd := &cobra.Command{
		Use:   "produce DIR",
		Short: "Append records from stdin, or a file of producer batches, to the log in DIR",
		Long: `Append records to the log in DIR, creating it if needed.

Without --batches, every line of standard input becomes one record: the text
before the first TAB is the key and the rest the value; a line without a TAB
is a value with a null key ("\tvalue" has an empty, non-null key). Only the
newline is stripped, so any other byte, including a carriage return, is kept.
Records are appended --batch at a time (fewer when a batch would exceed
--max-batch-bytes), compressed with --compression, timestamped now.

With --batches FILE ("-" for standard input), FILE holds concatenated Kafka
RecordBatch v2 producer batches (base offset 0), as a producer sends them.
Each is checked and stored as a broker stores it: offsets assigned, leader
epoch stamped, its codec and records untouched. The first refused batch
stops the command with exit status 1 and a message naming its index (from
0) and byte position in FILE; the batches before it stay stored.

A one-line summary (records, batches, offsets) goes to standard error.`,
		Args: cobra.ExactArgs(1),
	}
	lf := bindLogFlags(cmd)
	cmd.Flags().IntVar(&batch, "batch", 100, "records per batch when reading lines from stdin")
	cmd.Flags().StringVar(&batches, "batches", "", `append the producer batches in FILE ("-" for stdin) instead of lines`)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := lf.options(cmd)
		if err != nil {
			return err
		}
		if batch < 1 {
			return fmt.Errorf("invalid --batch %d: must be at least 1", batch)
		}
		// The input is opened first, so a missing file leaves no new log
		// directory behind.
		var input io.Reader
		inName := "stdin"
		if cmd.Flags().Changed("batches") && batches != "-" {
			f, err := vfs.Default.Open(batches)
			if err != nil {
				return err
			}
			defer f.Close()
			size, err := f.Size()
			if err != nil {
				return err
			}
			input, inName = io.NewSectionReader(f, 0, size), batches
		} else {
			input = cmd.InOrStdin()
		}
		l, err := seglog.Open(args[0], opts)
		if err != nil {
			return err
		}
		var st produceStats
		st.first = l.EndOffset()
		if cmd.Flags().Changed("batches") {
			err = produceBatches(l, inName, input, opts.MaxBatchBytes, &st)
		} else {
			err = produceLines(l, input, batch, opts.MaxBatchBytes, &st)
		}
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		fmt.Fprintln(cmd.ErrOrStderr(), st.summary(l))
		return err
	}
	return withStoreTopic(cmd)
}

// produceStats counts what produce stored, for its summary line.
type produceStats struct {
	records, batches, bytes int64
	first                   int64 // the log's end offset before the first append
	last                    int64 // the last offset assigned
}

func (s *produceStats) add(info seglog.AppendInfo) {
	s.records += info.LastOffset - info.FirstOffset + 1
	s.batches++
	s.bytes += int64(info.Bytes)
	s.last = info.LastOffset
}

func (s *produceStats) summary(l *seglog.Log) string {
	if s.batches == 0 {
		return fmt.Sprintf("produced 0 records; log holds offsets [%d, %d)", l.StartOffset(), l.EndOffset())
	}
	return fmt.Sprintf("produced %d records in %d batches (%d bytes) at offsets %d..%d; log holds offsets [%d, %d)",
		s.records, s.batches, s.bytes, s.first, s.last, l.StartOffset(), l.EndOffset())
}

// produceLines appends stdin's lines as records, perBatch at a time, cutting
// a batch early when its estimated size would pass maxBatch.
func produceLines(l *seglog.Log, in io.Reader, perBatch, maxBatch int, st *produceStats) error {
	sc := bufio.NewScanner(in)
	// A line longer than a batch can never be stored, so it is refused
	// rather than buffered whole.
	sc.Buffer(make([]byte, 0, min(64<<10, maxBatch+1)), maxBatch+1)
	sc.Split(scanLinesKeepCR)

	var (
		p     pending
		size  = record.HeaderSize
		line  int64
		first int64 = 1 // line number of the batch's first record, for errors
	)
	flush := func() error {
		if len(p.lines) == 0 {
			return nil
		}
		info, err := l.Append(p.records()...)
		if err != nil {
			return fmt.Errorf("lines %d-%d: %w", first, line, err)
		}
		st.add(info)
		p.reset()
		size = record.HeaderSize
		return nil
	}
	for sc.Scan() {
		text := sc.Bytes()
		recSize := len(text) + recordOverhead
		if size+recSize > maxBatch && len(p.lines) > 0 {
			if err := flush(); err != nil {
				return err
			}
		}
		line++
		if len(p.lines) == 0 {
			first = line
		}
		if record.HeaderSize+recSize > maxBatch {
			return fmt.Errorf("line %d: a %d-byte record does not fit in a batch of --max-batch-bytes %d", line, len(text), maxBatch)
		}
		p.add(text)
		size += recSize
		if len(p.lines) == perBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: longer than --max-batch-bytes %d", line+1, maxBatch)
		}
		return fmt.Errorf("reading stdin: %w", err)
	}
	return flush()
}

// pending holds the lines of the batch being gathered. The scanner reuses
// its buffer, so lines are copied into one arena and recorded as spans; the
// records are built only at flush, once the arena has stopped moving.
type pending struct {
	arena []byte
	lines []span
	recs  []record.Record
}

// span locates one line in the arena; tab is -1 when it has no key.
type span struct{ start, tab, end int }

func (p *pending) add(text []byte) {
	start := len(p.arena)
	p.arena = append(p.arena, text...)
	tab := bytes.IndexByte(text, '\t')
	if tab >= 0 {
		tab += start
	}
	p.lines = append(p.lines, span{start, tab, len(p.arena)})
}

func (p *pending) records() []record.Record {
	p.recs = p.recs[:0]
	for _, s := range p.lines {
		line := p.arena[s.start:s.end:s.end]
		if s.tab < 0 {
			p.recs = append(p.recs, record.Record{Value: line})
			continue
		}
		k := s.tab - s.start
		p.recs = append(p.recs, record.Record{Key: line[:k:k], Value: line[k+1:]})
	}
	return p.recs
}

func (p *pending) reset() { p.arena, p.lines = p.arena[:0], p.lines[:0] }

// scanLinesKeepCR is bufio.ScanLines without its dropping of a trailing
// carriage return: the value's bytes are stored as given.
func scanLinesKeepCR(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// produceBatches appends the producer batches read from r (named name in
// errors) through AppendBatch.
func produceBatches(l *seglog.Log, name string, r io.Reader, maxBatch int, st *produceStats) error {
	fr := batchReader{r: bufio.NewReaderSize(r, 1<<16), max: maxBatch}
	for i := 0; ; i++ {
		pos := fr.pos
		b, err := fr.next()
		if err == io.EOF {
			return nil
		}
		if err == nil {
			var info seglog.AppendInfo
			if info, err = l.AppendBatch(b); err == nil {
				st.add(info)
				continue
			}
		}
		return fmt.Errorf("%s: batch %d at byte %d refused: %w", name, i, pos, err)
	}
}

// batchReader frames the concatenated batches of a stream. It never
// allocates more than max bytes, whatever a length field claims.
type batchReader struct {
	r   io.Reader
	max int
	pos int64 // stream position of the next batch
	buf []byte
}

// errTruncatedBatch: the stream ends inside a batch.
var errTruncatedBatch = errors.New("truncated batch")

// next returns the next batch, valid until the following call, or io.EOF
// at a clean end of the stream.
func (br *batchReader) next() (record.Batch, error) {
	var hdr [record.PeekSize]byte
	n, err := io.ReadFull(br.r, hdr[:])
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case err == io.ErrUnexpectedEOF:
		return nil, fmt.Errorf("%w: the input ends %d bytes into the %d-byte entry header", errTruncatedBatch, n, record.PeekSize)
	case err != nil:
		return nil, err
	}
	size, _, err := record.PeekEntry(hdr[:])
	if err != nil {
		return nil, err
	}
	if size > br.max {
		return nil, fmt.Errorf("%w: %d bytes, --max-batch-bytes %d", record.ErrTooLarge, size, br.max)
	}
	if cap(br.buf) < size {
		br.buf = make([]byte, size)
	}
	b := br.buf[:size]
	copy(b, hdr[:])
	if m, err := io.ReadFull(br.r, b[len(hdr):]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: the input ends %d bytes into a %d-byte batch", errTruncatedBatch, len(hdr)+m, size)
		}
		return nil, err
	}
	br.pos += int64(size)
	return record.Batch(b), nil
}
