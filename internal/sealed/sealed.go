// Package sealed is the seam between a seglog.Log and package compaction,
// which rewrites the Log's sealed segments: a Run of segments held while
// they are rewritten, and the hook through which compaction reaches the
// Log's swap. Neither is part of the root's exported API.
//
// The interface the rewrite needs is compaction's own (its log type, the
// consumer's, as pebble writes them); the root satisfies it with an
// unexported type and hands it over through LogOf. The import graph stays
// acyclic: compaction imports the root and this package, the root imports
// this package and segment, and nothing here imports either of them.
package sealed

import (
	"iter"
	"time"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// LogOf returns the view of a *seglog.Log through which package compaction
// rewrites it: a value with the methods of compaction's log interface.
// Package seglog sets it when it is initialized. It is typed any at both
// ends because seglog imports this package (so it cannot name *seglog.Log)
// and the interface belongs to compaction (grpc-go hands its internals
// across packages the same way).
var LogOf func(log any) any

// Run is a run of consecutive sealed segments of a log, each held by a
// reference so that they can be read while retention or truncation change
// the log. It is what a compaction reads and what the log's swap replaces.
// A Log makes it; the rest of its fields are the Log's to check.
type Run struct {
	// FS is the log's filesystem, for the segments' modification times.
	FS vfs.FS
	// Segs are the segments, in offset order.
	Segs []*segment.Segment
	// Next is each segment's next offset when the run was acquired.
	Next []int64
	// Gen is the number of truncations the log had done when the run was
	// acquired.
	Gen uint64
	// Through is the end of the offsets the rewrite depends on beyond the
	// run itself (DependsThrough).
	Through int64
	// Own says Release drops the references (false for a Sub view).
	Own bool
}

// Info describes one segment of a run.
type Info struct {
	BaseOffset, NextOffset, Size int64
	// Modified is the .log's modification time (zero if it cannot be
	// read).
	Modified time.Time
}

// Len is the number of segments in the run.
func (r *Run) Len() int { return len(r.Segs) }

// Sub is the view of segments [i, j) of the run, sharing its references:
// release only the run it came from.
func (r *Run) Sub(i, j int) *Run {
	return &Run{FS: r.FS, Segs: r.Segs[i:j], Next: r.Next[i:j], Gen: r.Gen}
}

// Info describes segment i.
func (r *Run) Info(i int) Info {
	s := r.Segs[i]
	info := Info{BaseOffset: s.BaseOffset(), NextOffset: s.NextOffset(), Size: s.Size()}
	if fi, err := r.FS.Stat(s.LogPath()); err == nil {
		info.Modified = fi.ModTime()
	}
	return info
}

// Batches yields the v2 batches of segment i, CRC-checked, from its start
// (segment.Segment.Batches: a batch is valid only inside the loop body).
// Legacy v0/v1 entries are skipped.
func (r *Run) Batches(i int) iter.Seq2[record.Batch, error] {
	s := r.Segs[i]
	return s.Batches(0, s.Size())
}

// DependsThrough tells the swap that the rewrite was decided from the
// records below upTo, not only the run's own (a compaction round maps keys
// beyond the segments it rewrites): it refuses the swap if a truncation
// since the run was acquired cut any of them. The check is made under the
// lock truncation takes, which a caller's own check cannot be.
func (r *Run) DependsThrough(upTo int64) { r.Through = upTo }

// Release drops the run's references.
func (r *Run) Release() {
	if !r.Own {
		return
	}
	for _, s := range r.Segs {
		s.Release()
	}
	r.Segs = nil
}
