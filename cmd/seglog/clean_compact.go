package main

import (
	"fmt"
	"io"

	"github.com/seglog/seglog/cleaner"
)

// printCompacted writes the line seglog clean --compact ends with.
func printCompacted(w io.Writer, dir string, c cleaner.LogCompacted) {
	fmt.Fprintf(w, "%s: compacted %d segments into %d; removed %d records (%d superseded, %d tombstones, %d transaction markers, %d aborted, %d without a key), %d batches; %d bytes read, %d written; compacted up to offset %d\n",
		dir, c.SegmentsRead, c.SegmentsWritten, c.RecordsRemoved,
		c.RecordsRemoved-c.TombstonesRemoved-c.MarkersRemoved-c.AbortedRemoved-c.KeylessRemoved,
		c.TombstonesRemoved, c.MarkersRemoved, c.AbortedRemoved, c.KeylessRemoved,
		c.BatchesRemoved, c.BytesRead, c.BytesWritten, c.End)
}
