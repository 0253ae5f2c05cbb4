package store

import (
	"cmp"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// CleanerOffsetFile is Kafka's log.dir-level checkpoint of how far the
// compaction cleaner has cleaned each compacted partition: the store's
// cleaner writes it through each Log's Checkpointer, one line per
// partition, as a broker does.
const CleanerOffsetFile = "cleaner-offset-checkpoint"

// checkpointFiles are the log.dir-level checkpoints, one line per
// partition, as a broker keeps them.
var checkpointFiles = []string{layout.RecoveryPointFile, layout.LogStartOffsetFile, CleanerOffsetFile}

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
}

func loadCheckpoints(fsys vfs.FS, dir string, clean bool) (*dirCheckpoints, error) {
	d := &dirCheckpoints{fs: fsys, dir: dir, clean: clean, files: make(map[string]map[tp]int64)}
	for _, name := range checkpointFiles {
		m := make(map[tp]int64)
		entries, err := layout.ReadCheckpoint(fsys, filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
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
	return layout.WriteCheckpoint(d.fs, filepath.Join(d.dir, name), entries)
}

func (d *dirCheckpoints) get(name string, k tp) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	off, ok := d.files[name][k]
	return off, ok
}

func (d *dirCheckpoints) set(name string, k tp, off int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.files[name][k]; ok && old == off {
		return nil
	}
	d.files[name][k] = off
	return d.writeLocked(name)
}

// writeAll writes every file, so that a new log.dir has all three.
func (d *dirCheckpoints) writeAll() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range checkpointFiles {
		if err := d.writeLocked(name); err != nil {
			return err
		}
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

// partitionCheckpoints is one partition's view, the seglog.Checkpointer
// its Log is opened with.
type partitionCheckpoints struct {
	d *dirCheckpoints
	k tp
}

var _ seglog.Checkpointer = partitionCheckpoints{}

func (p partitionCheckpoints) Checkpoint(name string) (int64, bool, error) {
	off, ok := p.d.get(name, p.k)
	return off, ok, nil
}

func (p partitionCheckpoints) SetCheckpoint(name string, off int64) error {
	return p.d.set(name, p.k, off)
}

func (p partitionCheckpoints) CleanShutdown() bool { return p.d.clean }
