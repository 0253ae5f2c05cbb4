package seglog_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// Embedding seglog: open a log, append records, read them back, hand a
// fetch's byte range to a writer, apply retention by time, and truncate
// as a replica does. README.md's "Embedding" shows the same steps.
func Example() {
	dir, err := os.MkdirTemp("", "seglog-example") //vfs:allow the example shows a program's own setup
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir) //vfs:allow the example cleans up after itself

	l, err := seglog.Open(dir, seglog.Options{
		LogConfig: seglog.LogConfig{Sync: seglog.SyncAlways}, // Append returns once the batch is on disk
	})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	info, err := l.Append(
		record.Record{Key: []byte("order-1"), Value: []byte(`{"qty":2}`), Timestamp: 1700000000000},
		record.Record{Key: []byte("order-2"), Value: []byte(`{"qty":5}`), Timestamp: 1700000000001},
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stored offsets %d..%d\n", info.FirstOffset, info.LastOffset)

	for r, err := range l.Records(0) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d %s %s\n", r.Offset, r.Key, r.Value)
	}

	// A fetch from offset 1: whole stored batches, no bytes copied. WriteTo
	// uses sendfile(2) when the writer is a socket, a pipe or a file.
	s, err := l.Read(1, 1<<20, seglog.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	n, err := s.WriteTo(io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("fetch sent %d bytes holding offsets %d..%d\n", n, s.FirstOffset(), s.LastOffset())

	// Retention: the records stamped before a cutoff go. OffsetForTime
	// gives the first record stamped at or after it, and DeleteBefore makes
	// that the log's start; when every record is older, the start moves to
	// the end and all of them go.
	cutoff := int64(1700000000001)
	start, err := l.OffsetForTime(cutoff)
	if errors.Is(err, seglog.ErrTimestampNotFound) {
		start = l.EndOffset()
	} else if err != nil {
		log.Fatal(err)
	}
	if _, err := l.DeleteBefore(start); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("after retention: offsets %d..%d\n", l.StartOffset(), l.EndOffset()-1)

	// A replica whose log diverged from its new leader's removes every
	// record from the leader's end offset on: here a record the leader
	// never had, appended as offset 2, goes again.
	if _, err := l.Append(record.Record{Key: []byte("order-3"), Value: []byte(`{"qty":1}`), Timestamp: 1700000000002}); err != nil {
		log.Fatal(err)
	}
	leaderEnd := int64(2)
	if err := l.TruncateTo(leaderEnd); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("after truncation: offsets %d..%d, next append gets %d\n", l.StartOffset(), l.EndOffset()-1, l.EndOffset())
	// Output:
	// stored offsets 0..1
	// 0 order-1 {"qty":2}
	// 1 order-2 {"qty":5}
	// fetch sent 107 bytes holding offsets 0..1
	// after retention: offsets 1..1
	// after truncation: offsets 1..1, next append gets 2
}
