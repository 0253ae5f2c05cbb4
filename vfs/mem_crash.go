package vfs

import (
	"math"
	"math/rand/v2"
	"slices"
)

// CrashOptions chooses how much unsynced state a simulated power loss keeps.
// The zero value keeps none: exactly what was synced survives.
type CrashOptions struct {
	// Rand drives every random choice; with the same seed and the same
	// history the crash is the same. Nil disables the choices below.
	Rand *rand.Rand
	// KeepUnsynced is the probability, per file whose current contents run
	// past its synced contents, that a random prefix (possibly empty,
	// possibly all) of those unsynced bytes survives: a torn tail. Unsynced
	// stores below the synced length are always lost.
	KeepUnsynced float64
	// KeepUnsyncedStores is the probability, per file with unsynced stores
	// below its synced length (writes into a preallocated range, or over
	// old bytes), that a random prefix of the changed range survives
	// instead of none of it: a torn write inside the file, as when the
	// first of its dirty pages reached the disk. Without it such stores
	// are always lost. A mapped file keeps none either way.
	KeepUnsyncedStores float64
	// KeepUnsyncedEntries is the probability, per directory, that its
	// current entries survive instead of those of its last SyncDir, as when
	// the filesystem's journal happened to commit them.
	KeepUnsyncedEntries float64
	// HoleUnsynced is the probability, per file whose current contents
	// run past its synced contents and that KeepUnsynced did not pick,
	// that the file comes back at its current size with holes: each
	// 4 KiB page of the unsynced bytes independently holds what was
	// written or zeros, as when the journal committed the new size and
	// writeback reached some pages and not others (unsynced early pages
	// lost, later ones on disk). A mapped file keeps none either way.
	HoleUnsynced float64
}

// holePage is the unit in which HoleUnsynced keeps or loses unsynced
// bytes: a page of the page cache.
const holePage = 4096

// CrashClone returns a new MemFS holding what would be on disk if the
// machine lost power now: every directory with the entries of its last
// SyncDir, every file with the contents of its last Sync (empty if it was
// never synced). Open files, mappings and locks do not carry over; m itself
// is unchanged and stays usable.
func (m *MemFS) CrashClone() *MemFS { return m.CrashCloneWith(CrashOptions{}) }

// CrashCloneWith is CrashClone with some unsynced state kept at random, as
// o describes.
func (m *MemFS) CrashCloneWith(o CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	c.now.Store(m.now.Load())
	c.tick.Store(m.tick.Load())
	cr := crasher{o: o, memo: make(map[*memNode]*memNode)}
	c.root = cr.dir(m.root)
	return c
}

// crasher copies a MemFS tree as a power loss leaves it.
type crasher struct {
	o    CrashOptions
	memo map[*memNode]*memNode // so one inode under two names stays one inode
}

func (cr *crasher) chance(p float64) bool {
	return cr.o.Rand != nil && p > 0 && cr.o.Rand.Float64() < p
}

func (cr *crasher) dir(d *memNode) *memNode {
	if c, ok := cr.memo[d]; ok {
		return c
	}
	c := newDirNode(d.dirTime)
	cr.memo[d] = c
	view := d.durable
	if cr.chance(cr.o.KeepUnsyncedEntries) {
		view = d.entries
	}
	// Sorted, so the random draws happen in the same order every time.
	names := make([]string, 0, len(view))
	for name := range view {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n := view[name]
		var cn *memNode
		if n.dir {
			cn = cr.dir(n)
		} else {
			cn = cr.file(n)
		}
		c.entries[name] = cn
		c.durable[name] = cn
	}
	return c
}

func (cr *crasher) file(n *memNode) *memNode {
	if c, ok := cr.memo[n]; ok {
		return c
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	data := append([]byte(nil), n.synced...)
	// Stores since the last Sync below the synced length: all of
	// [n.dirty, end) is changed or unchanged bytes, so any prefix of it is
	// what a disk that wrote the first dirty pages in order would hold.
	if end := min(len(n.data), len(n.synced)); n.dirty < end && n.maps == 0 && cr.chance(cr.o.KeepUnsyncedStores) {
		k := cr.o.Rand.IntN(end - n.dirty + 1)
		copy(data[n.dirty:], n.data[n.dirty:n.dirty+k])
	}
	// A mapped file keeps none of its unsynced bytes: a
	// store through the mapping may be under way (nothing orders it with
	// this copy), and what a power loss keeps of a mapping's dirty pages
	// is anyone's guess anyway.
	if extra := len(n.data) - len(n.synced); extra > 0 && n.maps == 0 && cr.chance(cr.o.KeepUnsynced) {
		k := cr.o.Rand.IntN(extra + 1)
		data = append(data, n.data[len(n.synced):len(n.synced)+k]...)
	} else if extra > 0 && n.maps == 0 && cr.chance(cr.o.HoleUnsynced) {
		data = append(data, make([]byte, extra)...)
		for p := len(n.synced); p < len(n.data); {
			end := min((p/holePage+1)*holePage, len(n.data))
			if cr.o.Rand.IntN(2) == 0 {
				copy(data[p:end], n.data[p:end])
			}
			p = end
		}
	}
	c := &memNode{
		data:    data,
		nonzero: len(data),
		synced:  append([]byte(nil), data...),
		dirty:   math.MaxInt,
		modTime: n.modTime,
	}
	cr.memo[n] = c
	return c
}
