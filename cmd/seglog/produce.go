package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"time"

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
		linger  time.Duration
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
--max-batch-bytes, or --linger after the batch's first line when stdin is
a pipe or terminal that has nothing more yet), compressed with --compression, timestamped now. A line too long
for a batch stops the command with exit status 1 once every line before it
is stored; the message names the line and the lines stored.

SIGINT or SIGTERM stops the reading: every complete line read, and every
line already waiting in the pipe, is stored first; then the command exits
with status 130 (SIGINT) or 143 (SIGTERM) and says what it stored. A second
signal ends it at once.

With --batches FILE ("-" for standard input), FILE holds concatenated Kafka
RecordBatch v2 producer batches (base offset 0), as a producer sends them.
Each is checked and stored as a broker stores it: offsets assigned, leader
epoch stamped, its codec and records untouched (so --batch, --linger and
--compression do not apply). The first refused batch
stops the command with exit status 1 and a message naming its index (from
0) and byte position in FILE; the batches before it stay stored.

A one-line summary (records, batches, offsets) goes to standard error.`,
		Args: cobra.ExactArgs(1),
	}
	lf := bindLogFlags(cmd)
	lf.bindPreallocate(cmd)
	cmd.Flags().IntVar(&batch, "batch", 100, "records per batch when reading lines from stdin")
	cmd.Flags().DurationVar(&linger, "linger", 5*time.Millisecond,
		"store a partial batch at most this long after its first line was read from a pipe or terminal (Kafka's linger.ms); 0: after every read")
	cmd.Flags().StringVar(&batches, "batches", "", `append the producer batches in FILE ("-" for stdin) instead of lines`)
	// A batch's record count is a 32-bit field.
	limitFlag(cmd, "batch", 1, math.MaxInt32)
	limitDuration(cmd, "linger", 0, math.MaxInt64)
	// Producer batches are stored as they come, batched and compressed.
	notWith(cmd, "batches", "batch", "linger", "compression")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := lf.options(cmd)
		if err != nil {
			return err
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
		// Signals are watched from before the log is opened, so that no
		// line is read while SIGINT would still kill the process.
		in := newInput(input)
		defer in.Close()
		l, closeLog, err := openProduceLog(cmd, args[0], &opts)
		if err != nil {
			return err
		}
		var st produceStats
		st.first = l.View().EndOffset()
		if cmd.Flags().Changed("batches") {
			err = produceBatches(l, inName, in, opts.MaxBatchBytes, &st)
		} else {
			err = produceLines(l, in, batch, opts.MaxBatchBytes, linger, &st)
		}
		if cerr := closeLog(); err == nil {
			err = cerr
		}
		fmt.Fprintln(cmd.ErrOrStderr(), st.summary(l.View()))
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

func (s *produceStats) summary(l seglog.View) string {
	if s.batches == 0 {
		return fmt.Sprintf("produced 0 records; log holds offsets [%d, %d)", l.StartOffset(), l.EndOffset())
	}
	return fmt.Sprintf("produced %d records in %d batches (%d bytes) at offsets %d..%d; log holds offsets [%d, %d)",
		s.records, s.batches, s.bytes, s.first, s.last, l.StartOffset(), l.EndOffset())
}

// produceLines appends the input's lines as records, perBatch at a time,
// cutting a batch early when its estimated size would pass maxBatch. When
// the input can keep us waiting, a partial batch is stored linger after its
// first line was read (0: as soon as a read is done), as a Kafka producer's
// linger.ms does. Every
// way out stores every complete line read before it, and the error says
// which lines are stored.
func produceLines(l appender, in *input, perBatch, maxBatch int, linger time.Duration, st *produceStats) error {
	lp := lineProducer{l: l, perBatch: perBatch, maxBatch: maxBatch, st: st,
		maxLine: maxBatch - record.HeaderSize - recordOverhead, size: record.HeaderSize}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var (
		lingerC  <-chan time.Time
		armedFor int64 // the first line of the batch the timer waits for
	)
	for {
		data, ev, err := in.next(lingerC)
		switch ev {
		case evData:
			if err := lp.feed(data); err != nil {
				return err
			}
			switch {
			case len(lp.p.lines) == 0 || in.pump == nil:
				// Nothing waits, or reading never waits: batches fill.
			case linger == 0:
				if err := lp.flush(); err != nil {
					return err
				}
			case lingerC == nil || armedFor != lp.first:
				// The batch's first line starts its wait.
				timer.Reset(linger)
				lingerC, armedFor = timer.C, lp.first
			}
			if len(lp.p.lines) == 0 && lingerC != nil {
				timer.Stop()
				lingerC = nil
			}
		case evLinger:
			lingerC = nil
			if err := lp.flush(); err != nil {
				return err
			}
		case evSignal:
			if err := lp.flush(); err != nil {
				return err
			}
			msg := fmt.Sprintf("interrupted by %s: stored %s", signalName(in.signaled()), lp.storedAll())
			if len(lp.partial) > 0 {
				msg += fmt.Sprintf("; line %d, %d bytes without its newline yet, was not stored", lp.line+1, len(lp.partial))
			}
			return signalExit(in.signaled(), errors.New(msg))
		case evEnd:
			if err != io.EOF {
				if ferr := lp.flush(); ferr != nil {
					return ferr
				}
				return fmt.Errorf("reading stdin: %w; stored %s, nothing from line %d on", err, lp.storedAll(), lp.line+1)
			}
			// A last line without a newline is a line.
			if len(lp.partial) > 0 {
				if err := lp.add(lp.partial); err != nil {
					return err
				}
				lp.partial = lp.partial[:0]
			}
			return lp.flush()
		}
	}
}

// lineProducer splits the input into lines and appends them as batches.
type lineProducer struct {
	l                  appender
	perBatch, maxBatch int
	maxLine            int // the longest line a batch of maxBatch holds
	st                 *produceStats
	p                  pending
	size               int    // estimated size of the pending batch
	line               int64  // lines taken so far
	first              int64  // line number of the pending batch's first line
	partial            []byte // the line being read, until its newline comes
}

// feed takes the input's next bytes.
func (lp *lineProducer) feed(data []byte) error {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if len(lp.partial)+len(data) > lp.maxLine {
				return lp.tooLong()
			}
			lp.partial = append(lp.partial, data...)
			return nil
		}
		text := data[:i]
		if len(lp.partial)+len(text) > lp.maxLine {
			return lp.tooLong()
		}
		if len(lp.partial) > 0 {
			lp.partial = append(lp.partial, text...)
			text = lp.partial
		}
		if err := lp.add(text); err != nil {
			return err
		}
		lp.partial = lp.partial[:0]
		data = data[i+1:]
	}
	return nil
}

// tooLong refuses the line being read, after storing every line before
// it. It is not buffered whole: it could never be stored.
func (lp *lineProducer) tooLong() error {
	if err := lp.flush(); err != nil {
		return err
	}
	return fmt.Errorf("line %d: longer than the %d bytes a record can have in a batch of --max-batch-bytes %d; stored %s, nothing from line %d on",
		lp.line+1, max(lp.maxLine, 0), lp.maxBatch, lp.storedAll(), lp.line+1)
}

// add appends one line to the pending batch, storing the batch first if
// the line would take it past maxBatch, and after if it is full.
func (lp *lineProducer) add(text []byte) error {
	recSize := len(text) + recordOverhead
	if lp.size+recSize > lp.maxBatch && len(lp.p.lines) > 0 {
		if err := lp.flush(); err != nil {
			return err
		}
	}
	lp.line++
	if len(lp.p.lines) == 0 {
		lp.first = lp.line
	}
	lp.p.add(text)
	lp.size += recSize
	if len(lp.p.lines) == lp.perBatch {
		return lp.flush()
	}
	return nil
}

// flush stores the pending batch.
func (lp *lineProducer) flush() error {
	if len(lp.p.lines) == 0 {
		return nil
	}
	last := lp.first + int64(len(lp.p.lines)) - 1
	info, err := lp.l.Append(lp.p.records()...)
	if err != nil {
		return fmt.Errorf("lines %d-%d: %w; stored %s, nothing from line %d on", lp.first, last, err, lp.storedBefore(lp.first), lp.first)
	}
	lp.st.add(info)
	lp.p.reset()
	lp.size = record.HeaderSize
	return nil
}

// storedAll says which lines are stored once every line taken is.
func (lp *lineProducer) storedAll() string { return lp.storedBefore(lp.line + 1) }

// storedBefore says that the lines before line next are stored.
func (lp *lineProducer) storedBefore(next int64) string {
	switch next {
	case 1:
		return "no lines"
	case 2:
		return "line 1 (1 record)"
	}
	return fmt.Sprintf("lines 1-%d (%d records)", next-1, next-1)
}

// signalExit makes err exit as a shell reports a process ended by sig
// (128 + its number: 130 for SIGINT, 143 for SIGTERM).
func signalExit(sig os.Signal, err error) error {
	code := 1
	if s, ok := sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	return &exitError{code: code, err: err}
}

// signalName names sig as kill(1) does.
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
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

// produceBatches appends the producer batches read from r (named name in
// errors) through AppendBatch.
func produceBatches(l appender, name string, r *input, maxBatch int, st *produceStats) error {
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
		if errors.Is(err, errInterrupted) {
			return signalExit(r.signaled(), fmt.Errorf("interrupted by %s: stored the %d batches before byte %d of %s (%d records), nothing from there on",
				signalName(r.signaled()), i, pos, name, st.records))
		}
		return fmt.Errorf("%s: batch %d at byte %d refused: %w; stored the %d batches before it", name, i, pos, err, i)
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
