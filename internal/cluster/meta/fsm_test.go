package meta

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
)

// applyAll feeds commands to f as raft would, at indexes from 1.
func applyAll(t *testing.T, f *FSM, cmds ...Command) []Result {
	t.Helper()
	var out []Result
	for _, c := range cmds {
		b, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f.Apply(&raft.Log{Index: f.State().Index() + 1, Type: raft.LogCommand, Data: b}).(Result))
	}
	return out
}

func TestSnapshotRestore(t *testing.T) {
	f := NewFSM()
	applyAll(t, f,
		&RegisterBroker{ID: 1, Host: "h1", Port: 9092, RaftAddr: "r1"},
		&RegisterBroker{ID: 2, Host: "h2", Port: 9092, RaftAddr: "r2"},
		&CreateTopic{Name: "a", ID: [16]byte{1}, Configs: map[string]string{"retention.ms": "1"}, Replicas: [][]int32{{1, 2}, {2, 1}}},
		&CreateTopic{Name: "b", ID: [16]byte{2}, Replicas: [][]int32{{2}}},
		&AllocateProducerIDs{Broker: 2},
	)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	// The snapshot is of the state when it was taken, whatever follows.
	applyAll(t, f, &DeleteTopic{Name: "a"})

	g := NewFSM()
	_, changed := g.Watch()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Error("Restore did not signal a change")
	}
	got := g.State()
	if got.Index() != 5 || len(got.TopicNames()) != 2 || got.NextProducerID() != ProducerIDBlockSize {
		t.Errorf("restored index %d topics %v next pid %d", got.Index(), got.TopicNames(), got.NextProducerID())
	}
	if !reflect.DeepEqual(got.Brokers(), f.State().Brokers()) {
		t.Errorf("brokers %v, want %v", got.Brokers(), f.State().Brokers())
	}
	ta, _ := got.Topic("a")
	if !reflect.DeepEqual(ta, Topic{Name: "a", ID: [16]byte{1}, Configs: map[string]string{"retention.ms": "1"}, Replicas: [][]int32{{1, 2}, {2, 1}}}) {
		t.Errorf("restored topic %+v", ta)
	}
	if !bytes.Equal(EncodeState(got), sink.buf.Bytes()) {
		t.Error("the restored state encodes differently")
	}
	// Both go on identically from there.
	applyAll(t, g, &DeleteTopic{Name: "a"})
	if !bytes.Equal(EncodeState(g.State()), EncodeState(f.State())) {
		t.Error("restored FSM diverged from the original")
	}

	for _, bad := range [][]byte{nil, []byte("nope"), sink.buf.Bytes()[:sink.buf.Len()-1], append(bytes.Clone(sink.buf.Bytes()), 0)} {
		if err := NewFSM().Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("restoring %d bytes: %v, want ErrBadEncoding", len(bad), err)
		}
	}
	newer := bytes.Clone(sink.buf.Bytes())
	newer[len(snapshotMagic)] = snapshotVersion + 1
	if err := NewFSM().Restore(io.NopCloser(bytes.NewReader(newer))); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("newer snapshot: %v, want ErrUnsupportedVersion", err)
	}
}

// FuzzState: DecodeState never panics and what it accepts re-encodes to
// the same bytes.
func FuzzState(f *testing.F) {
	f.Add(EncodeState(populated(f)))
	f.Add(EncodeState(emptyState()))
	f.Add(EncodeState(credentialState(f)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeState(b)
		if err != nil {
			return
		}
		if e := EncodeState(s); !bytes.Equal(e, b) {
			s2, err := DecodeState(e)
			if err != nil || !bytes.Equal(EncodeState(s2), e) {
				t.Fatalf("unstable: %x -> %x (%v)", b, e, err)
			}
		}
	})
}

type memSink struct {
	buf      bytes.Buffer
	canceled bool
}

func (s *memSink) Write(p []byte) (int, error) { return s.buf.Write(p) }
func (s *memSink) Close() error                { return nil }
func (s *memSink) ID() string                  { return "mem" }
func (s *memSink) Cancel() error               { s.canceled = true; return nil }

func TestApplyRefusalAndWatch(t *testing.T) {
	f := NewFSM()
	s0, ch := f.Watch()
	res := applyAll(t, f, &DeleteTopic{Name: "x"})
	if res[0].Err == nil || f.State() != s0 {
		t.Fatalf("refused command: %+v, state replaced", res[0])
	}
	select {
	case <-ch:
		t.Fatal("a refused command signalled a change")
	default:
	}
	// An entry this node cannot decode is refused too, and marks the
	// state (TestUnreadableEntry).
	r := f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: []byte{byte(kindDeleteTopic), 9}}).(Result)
	if !errors.Is(r.Err, ErrUnsupportedVersion) || !errors.Is(f.State().Unreadable(), ErrUnsupportedVersion) {
		t.Fatalf("newer entry: %+v", r)
	}
	applyAll(t, f, &RegisterBroker{ID: 1, Host: "h", Port: 1, RaftAddr: "r"})
	select {
	case <-ch:
	default:
		t.Fatal("no change signalled")
	}
	if len(s0.Brokers()) != 0 {
		t.Error("an old view saw a later command")
	}
}

// TestViewsAreCopies: what a reader gets cannot change what others see.
func TestViewsAreCopies(t *testing.T) {
	f := NewFSM()
	applyAll(t, f,
		&RegisterBroker{ID: 1, Host: "h1", Port: 9092, RaftAddr: "r1"},
		&CreateTopic{Name: "a", ID: [16]byte{1}, Configs: map[string]string{"retention.ms": "1"}, Replicas: [][]int32{{1}}},
	)
	s := f.State()
	tp, _ := s.Topic("a")
	tp.Configs["retention.ms"] = "2"
	tp.Replicas[0][0] = 9
	r, _ := s.Replicas("a", 0)
	r[0] = 8
	if again, _ := s.Topic("a"); again.Configs["retention.ms"] != "1" || again.Replicas[0][0] != 1 {
		t.Errorf("a caller's change reached the state: %+v", again)
	}
}
