package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

func init() { register(newConsumeCmd) }

func newConsumeCmd() *cobra.Command {
	var (
		from   int64
		limit  int64
		asJSON bool
		raw    bool
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "consume DIR",
		Short: "Print the records of the log in DIR, one per line",
		Long: `Print the records of the log in DIR, one per line, from --from (default:
the log's start offset) to its end, or --max records. A negative --from
counts back from the end: --from -10 prints the last 10 offsets, as kcat's
-o -10 does. With --follow it does not stop at the end but waits for more,
as tail -f does, until SIGINT or SIGTERM, after which it exits with status
0 (a follower of a store's topic with --group commits what it printed
first). Control records (transaction markers) are not printed; records of
aborted transactions are.

The log is opened read-only: consume writes nothing to DIR (no recovery, no
index, checkpoint or lock file), needs only read permission, and works beside
a producer writing the log. What it does not print is said on stderr:

  exit 0  every record printed; or a torn tail at the end of the last
          segment (bytes holding no valid batch, which a crash leaves and a
          writable open cuts) not printed, with a warning naming the file
          and byte range
  exit 3  the records before damage at the end of the last segment printed,
          but valid batches follow the damage: not printed, named on stderr
          (file, bytes, batches, records, offsets); a writable open keeps
          them in a quarantine file that seglog dump reads
  exit 1  nothing more printed: damage below the recovery point, in a log
          closed cleanly, or in a segment before the last; a log-start
          checkpoint beyond the end; or another error (file and byte given)

With --follow the end is never reached, so no end-of-log warning is given.

The default format is tab-separated:

  OFFSET	TIMESTAMP_MS	KEY	VALUE	[HEADER...]

where KEY and VALUE are Go-quoted strings ("a\tb", "\xff") or null, and each
HEADER is "key"="value" (or "key"=null).

With --json every line is one object, keys in this order:

  {"offset":N,"timestamp":MS,"key":B64|null,"value":B64|null,"headers":[{"key":"...","value":B64|null}]}

with key, value and header values in standard base64, null for null, and
"headers" always present ([] when there are none).

With --raw the stored batches themselves are written, from the one holding
--from to the end of the log, exactly as they are on disk: what a Kafka fetch
would put on the wire. They go through Log.Read and sendfile(2) when standard
output is a file, a pipe or a socket (copied otherwise). --max N then counts
batches, the unit written: at most N, the first the one holding --from.
--follow does not apply.

consume never jumps over missing data. When offsets are absent from a log
that was never compacted (a segment deleted or emptied) or an offset index
points past the end of its .log, it prints (or with --raw writes) everything
before the gap, then reports "data missing: offsets X–Y" and exits with
status 3; seglog fsck tells more. The gaps compaction leaves in a compacted
log (one with a cleaner-offset checkpoint) are read past, as Kafka does.`,
		Args: cobra.ExactArgs(1),
	}
	rf := bindReadFlags(cmd)
	cmd.Flags().Int64Var(&from, "from", 0, "first offset to print (default: the log's start offset); -N: the last N offsets")
	cmd.Flags().Int64Var(&limit, "max", -1, "print at most N records (with --raw: write at most N batches; negative: no limit)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record")
	cmd.Flags().BoolVar(&raw, "raw", false, "write the stored batches, byte for byte, through the zero-copy path")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "at the end, wait for records appended later (until SIGINT or SIGTERM)")
	anyValue(cmd, "from", "max") // negative: from the end, no limit
	exclusive(cmd, "json", "raw")
	exclusive(cmd, "follow", "raw")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := rf.options(cmd)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		if follow {
			// From before the open, so that once the log is open a
			// signal stops the follower cleanly.
			var stop context.CancelFunc
			ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
		}
		l, err := seglog.Open(args[0], opts)
		if err != nil {
			return err
		}
		switch {
		case !cmd.Flags().Changed("from"):
			from = l.StartOffset()
		case from < 0:
			// The log start bounds it: "the last N" of a shorter log is
			// all of it, as with kcat.
			from = max(l.StartOffset(), l.EndOffset()+from)
		}
		if raw {
			err = consumeRaw(l, cmd.OutOrStdout(), from, limit)
		} else {
			err = consumeRecords(ctx, l, cmd.OutOrStdout(), from, limit, asJSON, follow)
		}
		if err == nil && !follow && (limit < 0 || from+limit >= l.EndOffset()) {
			err = reportUnserved(l, cmd.ErrOrStderr())
		}
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		return err
	}
	cmd = withStoreTopic(cmd)
	read := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return missingDataExit(read(cmd, args))
	}
	return cmd
}

// exitMissingData is consume's exit status when it stopped at missing data
// after printing the records before it.
const exitMissingData = 3

// missingDataExit gives a read that stopped at missing data its own exit
// status, so a script can tell a log with a hole from a failed command.
// An error that already carries a status (a signal's) keeps it.
func missingDataExit(err error) error {
	var ee *exitError
	if !errors.Is(err, seglog.ErrMissingData) || errors.As(err, &ee) {
		return err
	}
	return &exitError{code: exitMissingData, err: err}
}

// consumeRecords writes up to limit records (all if negative) from offset
// from, then stops at the end of the log or, when following, waits for
// more until ctx is done.
func consumeRecords(ctx context.Context, l *seglog.Log, out io.Writer, from, limit int64, asJSON, follow bool) error {
	if limit == 0 {
		return nil
	}
	records := l.Follow(ctx, from)
	if !follow {
		// Without --follow consume stops at the end the log had when it
		// was opened, so it need not look for more there.
		if err := checkRange(l, from); err != nil || from == l.EndOffset() {
			return err
		}
		records = l.Records(from)
	}
	w := newRecordWriter(out, follow)
	var line []byte
	n := int64(0)
	err := func() error {
		for r, err := range records {
			if err != nil {
				return err
			}
			if asJSON {
				line = appendJSONRecord(line[:0], r)
			} else {
				line = appendTextRecord(line[:0], r)
			}
			line = append(line, '\n')
			// A follower shows each record once it has caught up with
			// the end, not when the buffer happens to fill.
			caughtUp := follow && r.Offset+1 >= l.EndOffset()
			if err := w.write(line, caughtUp); err != nil {
				return err
			}
			if n++; n == limit {
				break
			}
		}
		return nil
	}()
	if ferr := w.close(); err == nil {
		err = ferr
	}
	return err
}

// checkRange refuses an offset outside [StartOffset, EndOffset], as Records
// and Read do.
func checkRange(l *seglog.Log, from int64) error {
	if start, end := l.StartOffset(), l.EndOffset(); from < start || from > end {
		return fmt.Errorf("%w: %d not in [%d, %d]", seglog.ErrOffsetOutOfRange, from, start, end)
	}
	return nil
}

// recordWriter buffers consume's output. When following it also flushes
// on its own a moment after a write, so that a record is shown even when
// it is not the last offset (a transaction marker may follow it).
type recordWriter struct {
	mu    sync.Mutex
	w     *bufio.Writer
	err   error
	dirty bool
	stop  chan struct{}
	done  chan struct{}
}

// followFlush is how soon a follower's output is flushed after a write
// that did not flush it.
const followFlush = 100 * time.Millisecond

func newRecordWriter(out io.Writer, follow bool) *recordWriter {
	rw := &recordWriter{w: bufio.NewWriterSize(out, 64<<10)}
	if follow {
		rw.stop, rw.done = make(chan struct{}), make(chan struct{})
		go rw.flushLoop()
	}
	return rw
}

func (rw *recordWriter) flushLoop() {
	defer close(rw.done)
	t := time.NewTicker(followFlush)
	defer t.Stop()
	for {
		select {
		case <-rw.stop:
			return
		case <-t.C:
			rw.mu.Lock()
			if rw.dirty && rw.err == nil {
				rw.err = rw.w.Flush()
				rw.dirty = false
			}
			rw.mu.Unlock()
		}
	}
}

func (rw *recordWriter) write(line []byte, flush bool) error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if rw.err != nil {
		return rw.err
	}
	if _, rw.err = rw.w.Write(line); rw.err != nil {
		return rw.err
	}
	rw.dirty = true
	if flush {
		rw.err = rw.w.Flush()
		rw.dirty = false
	}
	return rw.err
}

// close flushes what is buffered and stops the flushing goroutine.
func (rw *recordWriter) close() error {
	if rw.stop != nil {
		close(rw.stop)
		<-rw.done
	}
	if rw.err != nil {
		return rw.err
	}
	return rw.w.Flush()
}

// appendJSONRecord appends r in the --json format of DESIGN.md. It is
// written by hand because the key order is part of the format.
func appendJSONRecord(b []byte, r record.Record) []byte {
	b = append(b, `{"offset":`...)
	b = strconv.AppendInt(b, r.Offset, 10)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, r.Timestamp, 10)
	b = append(b, `,"key":`...)
	b = appendB64(b, r.Key)
	b = append(b, `,"value":`...)
	b = appendB64(b, r.Value)
	b = append(b, `,"headers":[`...)
	for i, h := range r.Headers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = appendJSONString(b, h.Key)
		b = append(b, `,"value":`...)
		b = appendB64(b, h.Value)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendB64 appends v as a JSON string of standard base64, or null.
func appendB64(b, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD (as
// encoding/json does), everything else as is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// appendTextRecord appends r in the readable tab-separated format.
func appendTextRecord(b []byte, r record.Record) []byte {
	b = strconv.AppendInt(b, r.Offset, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, r.Timestamp, 10)
	b = append(b, '\t')
	b = appendQuoted(b, r.Key)
	b = append(b, '\t')
	b = appendQuoted(b, r.Value)
	for _, h := range r.Headers {
		b = append(b, '\t')
		b = strconv.AppendQuote(b, h.Key)
		b = append(b, '=')
		b = appendQuoted(b, h.Value)
	}
	return b
}

func appendQuoted(b, v []byte) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendQuote(b, string(v))
}
