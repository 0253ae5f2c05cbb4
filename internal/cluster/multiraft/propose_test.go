package multiraft

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
)

// TestProposeAfterCtxWaitsForItsRound: a Propose whose ctx ends while the
// driver is persisting its entry returns only once the entry is in the log,
// so a caller that reads the log after the error (the broker rebuilding
// its idempotence state) sees it.
func TestProposeAfterCtxWaitsForItsRound(t *testing.T) {
	n := soloNode(t)
	st := &gatedStorage{MemoryStorage: NewMemoryStorage()}
	if err := n.AddGroup(1, []uint64{1}, st, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the one node leads its group", func() bool {
		l, _, err := n.Leader(1)
		return err == nil && l == 1
	})
	release := gate(st)
	defer release() // before n.Close (a cleanup), which waits for the driver
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
	err := <-errc
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Propose: %v", err)
	}
	last, _ := st.LastIndex()
	ents, err := st.Entries(last, last+1, 1<<20)
	if err != nil || len(ents) != 1 || string(ents[0].GetData()) != "late" {
		t.Fatalf("after Propose returned, the log's last entry is %v (%v), want the proposal", ents, err)
	}
}

// TestProposeLetsGoOfData: once Propose returns, whatever its answer,
// the driver never reads its data again, so a caller may reuse the buffer
// (the broker's request frames). Proposals race the node's Close, and each
// caller overwrites its buffer the moment Propose returns: under -race, a
// read of it by the driver after that is reported; without, an entry
// found with the overwritten bytes fails the test.
func TestProposeLetsGoOfData(t *testing.T) {
	n := soloNode(t)
	st := NewMemoryStorage()
	if err := n.AddGroup(1, []uint64{1}, st, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the one node leads its group", func() bool {
		l, _, err := n.Leader(1)
		return err == nil && l == 1
	})
	const proposers = 16
	var closed atomic.Int32
	done := make(chan struct{})
	for i := range proposers {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := 0; ; j++ {
				data := []byte{'p', byte(i), byte(j)}
				_, err := n.Propose(context.Background(), 1, data)
				data[0] = 'X' // the caller's again
				if errors.Is(err, ErrClosed) {
					closed.Add(1)
					return
				}
			}
		}()
	}
	testutil.WaitFor(t, "proposals committing", func() bool {
		last, _ := st.LastIndex()
		return last > 50
	})
	n.Close()
	for range proposers {
		<-done
	}
	if closed.Load() != proposers {
		t.Fatalf("%d of %d proposers saw ErrClosed", closed.Load(), proposers)
	}
	first, _ := st.FirstIndex()
	last, _ := st.LastIndex()
	ents, err := st.Entries(first, last+1, ^uint64(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if d := e.GetData(); len(d) > 0 && d[0] != 'p' {
			t.Fatalf("entry %d holds %q: read after its Propose returned", e.GetIndex(), d)
		}
	}
}
