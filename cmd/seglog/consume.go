package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

func init() { register(newConsumeCmd) }

func newConsumeCmd() *cobra.Command {
	var (
		from   int64
		limit  int64
		asJSON bool
		raw    bool
	)
	cmd := &cobra.Command{
		Use:   "consume DIR",
		Short: "Print the records of the log in DIR, one per line",
		Long: `Print the records of the log in DIR, one per line, from --from (default:
the log's start offset) to its end, or --max records. Control records
(transaction markers) are not printed; records of aborted transactions are.
Opening the log runs recovery as any Open does: after an unclean shutdown a
torn tail is truncated (and logged to standard error).

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
output is a file, a pipe or a socket (copied otherwise). --max does not apply.`,
		Args: cobra.ExactArgs(1),
	}
	lf := bindLogFlags(cmd)
	cmd.Flags().Int64Var(&from, "from", 0, "first offset to print (default: the log's start offset)")
	cmd.Flags().Int64Var(&limit, "max", -1, "print at most N records (negative: no limit)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record")
	cmd.Flags().BoolVar(&raw, "raw", false, "write the stored batches, byte for byte, through the zero-copy path")
	cmd.MarkFlagsMutuallyExclusive("json", "raw")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts, err := lf.options(cmd)
		if err != nil {
			return err
		}
		dir := args[0]
		// Open creates a missing directory; reading one that is not there
		// is a mistake to report, not an empty log to make.
		if fi, err := vfs.Default.Stat(dir); err != nil {
			return err
		} else if !fi.IsDir() {
			return fmt.Errorf("%s: not a directory", dir)
		}
		l, err := seglog.Open(dir, opts)
		if err != nil {
			return err
		}
		if !cmd.Flags().Changed("from") {
			from = l.StartOffset()
		}
		if raw {
			err = consumeRaw(l, cmd.OutOrStdout(), from)
		} else {
			w := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
			err = consume(l, w, from, limit, asJSON)
			if ferr := w.Flush(); err == nil {
				err = ferr
			}
		}
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return withStoreTopic(cmd)
}

// consume writes up to limit records (all if negative) from offset from.
func consume(l *seglog.Log, w *bufio.Writer, from, limit int64, asJSON bool) error {
	if limit == 0 {
		return nil
	}
	var line []byte
	n := int64(0)
	for r, err := range l.Records(from) {
		if err != nil {
			return err
		}
		if asJSON {
			line = appendJSONRecord(line[:0], r)
		} else {
			line = appendTextRecord(line[:0], r)
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
		if n++; n == limit {
			break
		}
	}
	return nil
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
