package meta

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// FSM is the metadata state machine, a raft.FSM. raft calls Apply,
// Snapshot and Restore from its own goroutines; any goroutine may call
// State and Watch. The current State is immutable once published, so a
// reader holds a consistent view for as long as it likes and never sees
// a map an Apply is changing.
type FSM struct {
	mu      sync.Mutex
	state   *State
	changed chan struct{} // closed when state is replaced
}

// NewFSM returns an FSM holding the empty state.
func NewFSM() *FSM {
	return &FSM{state: emptyState(), changed: make(chan struct{})}
}

// State returns the current state.
func (f *FSM) State() *State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// Watch returns the current state and a channel closed when it is
// replaced (by an applied command or a restored snapshot). Taking both
// at once means no change falls between reading the state and starting
// to wait: the server's loop is s, ch := Watch(); act on s; <-ch.
func (f *FSM) Watch() (*State, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state, f.changed
}

func (f *FSM) publish(s *State) {
	f.mu.Lock()
	f.state = s
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// Apply decodes and applies one committed entry, answering a Result
// (raft hands it to the proposer's ApplyFuture.Response). A command that
// does not decode (a newer node's command, damage) or that its checks
// refuse changes nothing, on every node alike, and its Result.Err says
// why.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return Result{Index: l.Index}
	}
	c, err := Decode(l.Data)
	if err != nil {
		if errors.Is(err, ErrUnknownCommand) || errors.Is(err, ErrUnsupportedVersion) {
			f.markUnreadable(l.Index, err)
		}
		return Result{Index: l.Index, Err: err}
	}
	// raft calls Apply from one goroutine, so the state read here is the
	// one the new state replaces.
	next, res, err := f.State().apply(l.Index, c)
	if err == nil {
		f.publish(next)
	}
	return res
}

// markUnreadable publishes the state with the entry at index recorded as
// the first this build cannot read (State.Unreadable), if none is yet.
func (f *FSM) markUnreadable(index uint64, err error) {
	s := f.State()
	if s.unreadable != nil {
		return
	}
	n := s.next()
	n.index = index
	n.unreadable = fmt.Errorf("%w: entry %d: %w; run this node on the build the others run", ErrNewerMetadata, index, err)
	f.publish(n)
}

// Snapshot returns the current state for raft to persist; as it is
// immutable, Persist may encode it while Apply goes on. A state past an
// entry this build could not read is refused: a snapshot would drop the
// entry from the log for good, and the build that reads it replays it.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	s := f.State()
	if err := s.Unreadable(); err != nil {
		return nil, err
	}
	return snapshot{s}, nil
}

// Restore replaces the state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, MaxSnapshotBytes+1))
	if err != nil {
		return fmt.Errorf("metadata snapshot: %w", err)
	}
	s, err := DecodeState(b)
	if err != nil {
		return err
	}
	f.publish(s)
	return nil
}

type snapshot struct{ s *State }

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(EncodeState(s.s)); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshot) Release() {}
