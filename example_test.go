package seglog_test

import (
	"fmt"
	"io"
	"log"
	"os"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// Embedding seglog: open a log, append records, read them back, and hand a
// fetch's byte range to a writer.
func Example() {
	dir, err := os.MkdirTemp("", "seglog-example") //vfs:allow the example shows a program's own setup
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir) //vfs:allow the example cleans up after itself

	l, err := seglog.Open(dir, seglog.Options{
		Sync: seglog.SyncAlways, // Append returns once the batch is on disk
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
	// Output:
	// stored offsets 0..1
	// 0 order-1 {"qty":2}
	// 1 order-2 {"qty":5}
	// fetch sent 107 bytes holding offsets 0..1
}
