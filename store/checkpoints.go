package store

import (
	"cmp"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/seglog/seglog/internal/embed"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// checkpointFiles are the log.dir-level checkpoints, one line per
// partition, as a broker keeps them. The store's cleaner writes
// layout.CleanerOffsetFile, how far it has cleaned each compacted
// partition, through each Log's Checkpointer.
var checkpointFiles = []string{layout.RecoveryPointFile, layout.LogStartOffsetFile, layout.CleanerOffsetFile}

type tp struct {
	topic string
	part  int32
}

// dirCheckpoints holds the log.dir's checkpoint files in memory and
// rewrites a whole file, atomically, whenever one partition's line
// changes. mu serializes the rewrites so they land in order.
type dirCheckpoints struct {
	fs    vfs.FS
	dir   string
	clean bool // the log.dir's clean-shutdown marker existed at open

	mu    sync.Mutex
	files map[string]map[tp]int64
	// dirty marks files whose lines changed in memory only (a raised
	// recovery point, below); written marks when each was last written.
	dirty   map[string]bool
	written map[string]time.Time
	// missing marks the files loadCheckpoints did not find.
	missing map[string]bool
}

// recoveryPointInterval is the least time between two rewrites of a file
// for lines that may wait in memory (a raised recovery point): they are
// written by the first change that comes later, or by Close. Kafka writes
// the file on a timer, log.flush.offset.checkpoint.interval.ms, 60 s by
// default.
const recoveryPointInterval = time.Second

func loadCheckpoints(fsys vfs.FS, dir string, clean bool) (*dirCheckpoints, error) {
	d := &dirCheckpoints{fs: fsys, dir: dir, clean: clean, files: make(map[string]map[tp]int64),
		dirty: make(map[string]bool), written: make(map[string]time.Time), missing: make(map[string]bool)}
	for _, name := range checkpointFiles {
		m := make(map[tp]int64)
		entries, err := layout.ReadCheckpoint(fsys, filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		d.missing[name] = err != nil
		for _, e := range entries {
			m[tp{e.Topic, e.Partition}] = e.Offset
		}
		d.files[name] = m
	}
	return d, nil
}

// writeLocked rewrites one file from memory, lines sorted by topic and
// partition.
func (d *dirCheckpoints) writeLocked(name string) error {
	m := d.files[name]
	entries := make([]layout.CheckpointEntry, 0, len(m))
	for k, off := range m {
		entries = append(entries, layout.CheckpointEntry{Topic: k.topic, Partition: k.part, Offset: off})
	}
	slices.SortFunc(entries, func(a, b layout.CheckpointEntry) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	if err := layout.WriteCheckpoint(d.fs, filepath.Join(d.dir, name), entries); err != nil {
		return err
	}
	d.dirty[name] = false
	d.written[name] = time.Now()
	return nil
}

func (d *dirCheckpoints) get(name string, k tp) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	off, ok := d.files[name][k]
	return off, ok
}

// set records one partition's line. The file is rewritten before set
// returns, except when the file as it stands is already safe: a recovery
// point that rises (or appears) may stay in memory for up to
// recoveryPointInterval, because an older, lower one only makes recovery
// scan more after a crash; a log start of 0 for a new line says what no
// line says. With many partitions, rewriting the whole file for each of
// these would cost O(partitions) per roll, sync and close.
func (d *dirCheckpoints) set(name string, k tp, off int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, had := d.files[name][k]
	if had && old == off {
		return nil
	}
	d.files[name][k] = off
	lazy := (name == layout.RecoveryPointFile && (!had || off > old)) ||
		(name == layout.LogStartOffsetFile && !had && off == 0)
	if lazy {
		d.dirty[name] = true
		if time.Since(d.written[name]) < recoveryPointInterval {
			return nil
		}
	}
	return d.writeLocked(name)
}

// flush writes the files with lines changed only in memory.
func (d *dirCheckpoints) flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range checkpointFiles {
		if d.dirty[name] {
			if err := d.writeLocked(name); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeMissing writes the files the log.dir did not have, so that a new
// log.dir has all three. The others already say what memory holds (each
// change since they were read rewrote its file): rewriting them would
// cost every Open three fsyncs, a rename each and as many directory syncs
// for nothing.
func (d *dirCheckpoints) writeMissing() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range checkpointFiles {
		if !d.missing[name] {
			continue
		}
		if err := d.writeLocked(name); err != nil {
			return err
		}
		d.missing[name] = false
	}
	return nil
}

// drop forgets partitions (a deleted topic's, or partitions beyond a
// topic's count) in every file.
func (d *dirCheckpoints) drop(keep func(tp) bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range checkpointFiles {
		changed := false
		for k := range d.files[name] {
			if !keep(k) {
				delete(d.files[name], k)
				changed = true
			}
		}
		if changed {
			if err := d.writeLocked(name); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitionCheckpoints is one partition's view, the embed.Checkpointer
// its Log is opened with.
type partitionCheckpoints struct {
	d *dirCheckpoints
	k tp
	// unclean: the partition's last close failed, so the log.dir's
	// clean-shutdown state does not speak for it.
	unclean bool
}

var _ embed.Checkpointer = partitionCheckpoints{}

func (p partitionCheckpoints) Checkpoint(name string) (int64, bool, error) {
	off, ok := p.d.get(name, p.k)
	return off, ok, nil
}

func (p partitionCheckpoints) SetCheckpoint(name string, off int64) error {
	return p.d.set(name, p.k, off)
}

func (p partitionCheckpoints) CleanShutdown() bool { return p.d.clean && !p.unclean }
