package multiraft

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/seglog/seglog/internal/testutil"
)

// ownStorage is a MemoryStorage that records what Proposed said and, of
// each Append, which entries the last Proposed call named by their Data.
type ownStorage struct {
	MemoryStorage
	mu       sync.Mutex
	last     []*pb.Entry
	proposed []string // the Data of every entry Proposed named
	matched  []string // entries Appended with the very Data Proposed named
	other    []string // non-empty entries Appended without it
}

func (s *ownStorage) Proposed(ents []*pb.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = ents
	for _, e := range ents {
		s.proposed = append(s.proposed, string(e.GetData()))
	}
}

func (s *ownStorage) Append(ents []*pb.Entry) error {
	s.mu.Lock()
	for _, e := range ents {
		d := e.GetData()
		if len(d) == 0 {
			continue
		}
		own := false
		for _, o := range s.last {
			if od := o.GetData(); o.GetIndex() == e.GetIndex() && len(od) == len(d) && &od[0] == &d[0] {
				own = true
			}
		}
		if own {
			s.matched = append(s.matched, string(d))
		} else {
			s.other = append(s.other, string(d))
		}
	}
	s.last = nil
	s.mu.Unlock()
	return s.MemoryStorage.Append(ents)
}

// TestProposedNamesTheProposals: before the Append that stores them, the
// driver names to an OwnProposals Storage exactly the entries made of
// Propose's data (the very buffers Append is then given), and nothing
// else: not the leader's empty entry.
func TestProposedNamesTheProposals(t *testing.T) {
	n := soloNode(t)
	st := &ownStorage{MemoryStorage: NewMemoryStorage()}
	if err := n.AddGroup(1, []uint64{1}, st, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the one node leads its group", func() bool {
		l, _, err := n.Leader(1)
		return err == nil && l == 1
	})
	want := []string{"a", "bb", "ccc", "dddd"}
	var wg sync.WaitGroup
	for _, d := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := n.Propose(context.Background(), 1, []byte(d)); err != nil {
				t.Errorf("Propose(%q): %v", d, err)
			}
		}()
	}
	wg.Wait()
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.proposed) != len(want) || len(st.matched) != len(want) || len(st.other) != 0 {
		t.Fatalf("Proposed named %q; Append got %q as named and %q not named; want each of %q named and appended once",
			st.proposed, st.matched, st.other, want)
	}
	for _, d := range want {
		if !slices.Contains(st.matched, d) || !slices.Contains(st.proposed, d) {
			t.Fatalf("%q: Proposed named %q, Append matched %q", d, st.proposed, st.matched)
		}
	}
}

// wrapped is a connection with NetConn, as raftmux's are.
type wrapped struct {
	net.Conn
	inner net.Conn
}

func (w wrapped) NetConn() net.Conn { return w.inner }

// TestVectorWriterUnwraps: the sender writes a round's buffers to the
// connection under a wrapper that has one (so that net.Buffers can use
// writev), and to the connection itself otherwise.
func TestVectorWriterUnwraps(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if w := vectorWriter(wrapped{Conn: a, inner: b}); w != b {
		t.Fatalf("vectorWriter of a wrapper: %v, want its NetConn", w)
	}
	if w := vectorWriter(a); w != a {
		t.Fatalf("vectorWriter of a plain connection: %v, want it", w)
	}
}
