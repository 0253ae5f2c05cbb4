package multiraft

import (
	"context"
	"errors"
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
