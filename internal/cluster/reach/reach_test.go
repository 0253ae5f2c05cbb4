package reach

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
)

// TestWarnRateLimited: a voter failing is reported once it has failed
// for WarnAfter, with its id, address and last error, then at most every
// Every; reaching it again is logged once, and only after a Warn.
func TestWarnRateLimited(t *testing.T) {
	now := time.Unix(1000, 0)
	rec := &testutil.LogRecords{}
	tr := New(Config{Logger: slog.New(rec), Peers: map[uint64]string{2: "h2:1", 3: "h3:1"}, now: func() time.Time { return now }})
	refused := errors.New("dial tcp h2:1: connect: connection refused")
	step := func(d time.Duration) { now = now.Add(d) }

	tr.Failed(2, "h2:1", refused)
	step(4 * time.Second)
	tr.Failed(2, "h2:1", refused)
	if got := rec.Take(); len(got) != 0 {
		t.Fatalf("after 4 s of failures: %q, want nothing yet", got)
	}
	step(time.Second)
	tr.Failed(2, "h2:1", refused)
	got := rec.Take()
	if len(got) != 1 || !strings.HasPrefix(got[0], "WARN ") || !strings.Contains(got[0], "voter=2 addr=h2:1") ||
		!strings.Contains(got[0], "connection refused") || !strings.Contains(got[0], "last_reached=never") {
		t.Fatalf("after 5 s of failures: %q, want one Warn naming voter 2, its address and the error", got)
	}
	for range 29 {
		step(time.Second)
		tr.Failed(2, "h2:1", refused)
	}
	if got := rec.Take(); len(got) != 0 {
		t.Fatalf("within 30 s of the Warn: %q, want nothing", got)
	}
	step(time.Second)
	tr.Failed(2, "h2:1", io.EOF)
	if got := rec.Take(); len(got) != 1 || !strings.Contains(got[0], "err=EOF") {
		t.Fatalf("30 s after the Warn: %q, want one more naming the last error", got)
	}

	tr.Reached(2, "h2:1")
	if got := rec.Take(); len(got) != 1 || !strings.HasPrefix(got[0], "INFO ") || !strings.Contains(got[0], "voter=2") {
		t.Fatalf("reached again: %q, want one Info", got)
	}
	tr.Reached(2, "h2:1")
	// A peer never reported unreachable is not announced as reached.
	tr.Failed(3, "h3:1", refused)
	tr.Reached(3, "h3:1")
	if got := rec.Take(); len(got) != 0 {
		t.Fatalf("reached without a Warn before: %q, want nothing", got)
	}

	// Failing again at once: a new run of failures, but within Every of
	// the last Warn, so no second Warn yet.
	step(time.Second)
	tr.Failed(2, "h2:1", refused)
	step(6 * time.Second)
	tr.Failed(2, "h2:1", refused)
	if got := rec.Take(); len(got) != 0 {
		t.Fatalf("failing again within Every of the last Warn: %q, want nothing", got)
	}

	ps := tr.Peers()
	if len(ps) != 2 || ps[0].ID != 2 || ps[0].Err != refused || !ps[0].Since.Equal(now.Add(-6*time.Second)) || ps[0].Reached.IsZero() ||
		ps[1].ID != 3 || ps[1].Err != nil || !ps[1].Tried() {
		t.Fatalf("Peers = %+v", ps)
	}
}

// TestClosedIgnored: this node's own closing is nobody's failure.
func TestClosedIgnored(t *testing.T) {
	tr := New(Config{Peers: map[uint64]string{2: "h2:1"}})
	tr.Failed(2, "h2:1", fmt.Errorf("dial: %w", net.ErrClosed))
	if ps := tr.Peers(); ps[0].Tried() {
		t.Fatalf("Peers = %+v after a closed error, want nothing recorded", ps)
	}
	var nilTracker *Tracker
	nilTracker.Failed(2, "h2:1", io.EOF)
	nilTracker.Reached(2, "h2:1")
}

func TestHungUp(t *testing.T) {
	if err := HungUp(io.EOF); !errors.Is(err, ErrHungUp) || !strings.Contains(err.Error(), "EOF") {
		t.Errorf("HungUp(EOF) = %v", err)
	}
	other := errors.New("i/o timeout")
	if err := HungUp(other); err != other {
		t.Errorf("HungUp(%v) = %v, want it unchanged", other, err)
	}
}

// TestConnectedIsNotAnswered: a connection held (the partition driver's,
// which no peer answers on) ends a run of failures but does not count as
// the voter answering; after an answer it takes nothing away.
func TestConnectedIsNotAnswered(t *testing.T) {
	tr := New(Config{Peers: map[uint64]string{2: "h2:1"}})
	tr.Failed(2, "h2:1", io.EOF)
	tr.Connected(2, "h2:1")
	if p := tr.Peers()[0]; p.Err != nil || p.Reached.IsZero() || p.Answered {
		t.Fatalf("after Connected: %+v, want reached, not answered", p)
	}
	tr.Reached(2, "h2:1")
	tr.Connected(2, "h2:1")
	if p := tr.Peers()[0]; !p.Answered {
		t.Fatalf("Connected after Reached: %+v, want still answered", p)
	}
}

// TestWarnWrongNode: a voter whose address answers as another node is
// running and reachable: the Warn says the address is another node's,
// not "is it running".
func TestWarnWrongNode(t *testing.T) {
	now := time.Unix(1000, 0)
	rec := &testutil.LogRecords{}
	tr := New(Config{Logger: slog.New(rec), Peers: map[uint64]string{2: "h3:1"}, now: func() time.Time { return now }})
	wrong := &WrongNodeError{Want: "2", Got: "3"}
	tr.Failed(2, "h3:1", wrong)
	now = now.Add(DefaultWarnAfter)
	tr.Failed(2, "h3:1", wrong)
	got := rec.Take()
	if len(got) != 1 || !strings.Contains(got[0], "is another node's") || strings.Contains(got[0], "is it running") ||
		!strings.Contains(got[0], "answered as node 3, not node 2") {
		t.Fatalf("a voter's address answering as node 3: %q, want one Warn saying the address is another node's", got)
	}
}
