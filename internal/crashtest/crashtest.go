// Package crashtest holds the crash campaigns' recorder: a vfs.Injector
// that, once armed, clones an in-memory filesystem as a power loss would
// leave it at each filesystem operation, together with what the workload
// had in flight or acknowledged at that moment. The root, store and
// raftlog campaigns reopen every clone and check it against that state.
//
// Half the clones (the even-numbered operations) are torn: besides what
// was synced they keep random unsynced bytes and directory entries; the
// other half keep only what was synced.
package crashtest

import (
	"math/rand/v2"
	"sync"

	"github.com/seglog/seglog/vfs"
)

// Options says which operations a Recorder clones and how it tears them.
type Options struct {
	// Rand draws which operations are cloned (with Chance) and seeds each
	// torn clone. A campaign seeds it from its scenario seed, so the seed
	// replays the same images.
	Rand *rand.Rand
	// TornStream is the PCG stream of each torn clone's own randomness
	// (its seed is drawn from Rand). Each campaign keeps the stream it
	// always used, so seeds from older failure reports still replay.
	TornStream uint64
	// Chance, when above zero, is the probability that an operation is
	// cloned (a draw from Rand per operation): a campaign whose clones
	// are costly samples them. Zero clones every operation.
	Chance float64
	// KeepUnsynced is vfs.CrashOptions.KeepUnsynced for torn clones; they
	// keep each unsynced directory entry with probability one half.
	KeepUnsynced float64
}

// Point is one crash image and the state it is checked against.
type Point[S any] struct {
	FS *vfs.MemFS
	// N numbers the operation among those seen armed (1 is the first).
	N int64
	// Op is the filesystem operation about to run when the power failed.
	Op vfs.Op
	// Torn says the image kept random unsynced state.
	Torn bool
	// State is the workload's state when the image was taken.
	State S
}

// Recorder is a vfs.Injector that records a Point at the operations it
// clones while armed; it never fails an operation. S is the workload's
// state (for example the number of the op in flight, or a history of what
// was acknowledged), which the workload updates with Set or With so that
// each Point sees it as it stood at its operation.
type Recorder[S any] struct {
	mem  *vfs.MemFS
	opts Options
	copy func(S) S

	mu     sync.Mutex
	armed  bool
	n      int64
	state  S
	points []Point[S]
}

// New returns a disarmed Recorder cloning mem, whose FS the workload must
// reach through vfs.Inject(mem, recorder). copy, when not nil, deep-copies
// the state into each Point (for a state holding maps or slices).
func New[S any](mem *vfs.MemFS, state S, copy func(S) S, opts Options) *Recorder[S] {
	if copy == nil {
		copy = func(s S) S { return s }
	}
	return &Recorder[S]{mem: mem, opts: opts, copy: copy, state: state}
}

// Inject implements vfs.Injector.
func (r *Recorder[S]) Inject(op vfs.Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.armed {
		return nil
	}
	r.n++
	if r.opts.Chance > 0 && r.opts.Rand.Float64() >= r.opts.Chance {
		return nil
	}
	torn := r.n%2 == 0
	var fs *vfs.MemFS
	if torn {
		fs = r.mem.CrashCloneWith(vfs.CrashOptions{
			Rand:                rand.New(rand.NewPCG(r.opts.Rand.Uint64(), r.opts.TornStream)),
			KeepUnsynced:        r.opts.KeepUnsynced,
			KeepUnsyncedEntries: 0.5,
		})
	} else {
		fs = r.mem.CrashClone()
	}
	r.points = append(r.points, Point[S]{FS: fs, N: r.n, Op: op, Torn: torn, State: r.copy(r.state)})
	return nil
}

// Arm starts (true) or stops (false) recording.
func (r *Recorder[S]) Arm(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = on
}

// Set replaces the state that later Points record.
func (r *Recorder[S]) Set(s S) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = s
}

// With calls f with the state under the recorder's lock, so no Point sees
// the state half-updated.
func (r *Recorder[S]) With(f func(s *S)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.state)
}

// State returns a copy of the current state.
func (r *Recorder[S]) State() S {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.copy(r.state)
}

// Take returns the Points recorded since the last Take and forgets them
// (a campaign checks and drops its images as it goes, to bound memory).
func (r *Recorder[S]) Take() []Point[S] {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.points
	r.points = nil
	return p
}
