package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/seglog/seglog/layout"
)

// dumpQuarantine dumps path when it is a quarantine file (bytes recovery
// cut from a segment's .log and kept): what it is, then its batches as a
// .log's, starting with the damage recovery found at its first byte. It
// reports false, doing nothing, for any other file.
func dumpQuarantine(w io.Writer, path string, records bool, maxEntry int) (bool, error) {
	base, pos, ok := layout.ParseQuarantineName(filepath.Base(path))
	if !ok {
		return false, nil
	}
	f, err := fsckFS.Open(path)
	if err != nil {
		return true, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return true, err
	}
	src := layout.FileName(base, layout.LogSuffix)
	fmt.Fprintf(w, "Dumping %s\n", path)
	if pos == 0 {
		fmt.Fprintf(w, "Quarantine file: %d bytes of %s from its first byte, kept by recovery: damage there that valid batches follow, or the whole segment after an earlier one was cut (not part of the log). Positions are in this file and in %s.\n", size, src, src)
	} else {
		fmt.Fprintf(w, "Quarantine file: %d bytes of %s from byte %d, where recovery found damage, kept because valid batches follow it (not part of the log). Positions are in this file: add %d for positions in %s.\n",
			size, src, pos, pos, src)
	}
	return true, dumpLog(w, f, size, base, -1, records, maxEntry)
}

// noteQuarantines lists the quarantine files among names (a directory's
// listing) after a directory dump: they are not segments, so they are not
// dumped with them, but they hold batches someone should look at.
func noteQuarantines(w io.Writer, dir string, names []string) {
	for _, n := range names {
		if !layout.IsQuarantine(n) {
			continue
		}
		p := filepath.Join(dir, n)
		size := int64(-1)
		if fi, err := fsckFS.Stat(p); err == nil {
			size = fi.Size()
		}
		fmt.Fprintf(w, "\n%s: quarantine file (%d bytes), not part of the log; dump it with: seglog dump %s\n", p, size, p)
	}
}
