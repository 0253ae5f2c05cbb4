package multiraft

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/seglog/seglog/internal/cluster/raftmux"
	"github.com/seglog/seglog/internal/testutil"
)

// gatedStorage is a MemoryStorage whose Append waits on gate while armed.
type gatedStorage struct {
	MemoryStorage
	gate atomic.Pointer[chan struct{}]
}

func (s *gatedStorage) Append(ents []*pb.Entry) error {
	if g := s.gate.Load(); g != nil {
		<-*g
	}
	return s.MemoryStorage.Append(ents)
}

// TestProposeAfterCtxWaitsForItsRound: a Propose whose ctx ends while the
// driver is persisting its entry returns only once the entry is in the log,
// so a caller that reads the log after the error (the broker rebuilding
// its idempotence state) sees it.
func TestProposeAfterCtxWaitsForItsRound(t *testing.T) {
	mux, err := raftmux.Listen("127.0.0.1:0", raftmux.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	n, err := New(Config{ID: 1, Mux: mux, Peers: map[uint64]string{}, Tick: testTick, Logger: QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	st := &gatedStorage{MemoryStorage: NewMemoryStorage()}
	if err := n.AddGroup(1, []uint64{1}, st, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the one node leads its group", func() bool {
		l, _, err := n.Leader(1)
		return err == nil && l == 1
	})
	gate := make(chan struct{})
	st.gate.Store(&gate)
	var once atomic.Bool
	release := func() {
		if once.CompareAndSwap(false, true) {
			st.gate.Store(nil)
			close(gate)
		}
	}
	defer release() // before n.Close, which waits for the driver
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := n.Propose(ctx, 1, []byte("late"))
		errc <- err
	}()
	testutil.WaitBlocked(t, "the driver persisting the proposal", "(*gatedStorage).Append(", 1)
	cancel()
	testutil.WaitBlocked(t, "Propose waiting for its round after its ctx ended", "(*Node).Propose(", 1)
	select {
	case err := <-errc:
		t.Fatalf("Propose returned %v while its entry was still being persisted", err)
	default:
	}
	release()
	err = <-errc
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Propose: %v", err)
	}
	last, _ := st.LastIndex()
	ents, err := st.Entries(last, last+1, 1<<20)
	if err != nil || len(ents) != 1 || string(ents[0].GetData()) != "late" {
		t.Fatalf("after Propose returned, the log's last entry is %v (%v), want the proposal", ents, err)
	}
}
