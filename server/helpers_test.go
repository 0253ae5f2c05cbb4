package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/storelog"
	"github.com/seglog/seglog/store"
)

type testServer struct {
	t    testing.TB
	dir  string
	st   *store.Store
	srv  *Server
	addr string
	done chan error
}

// startServer serves a store in dir (a new temporary one when dir is
// empty) on a loopback port.
func startServer(t testing.TB, dir string, cfg Options) *testServer {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	// Few offsets partitions: creating Kafka's 50 costs a second of syncs
	// per test server on a busy machine.
	st, err := store.Open(dir, store.Options{OffsetsPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, dir: dir, st: st, srv: srv, addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ln) }()
	t.Cleanup(func() { ts.stop() })
	return ts
}

// stop shuts the server down and closes the store; it may be called twice.
func (ts *testServer) stop() {
	if ts.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		ts.t.Errorf("shutdown: %v", err)
	}
	if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
		ts.t.Errorf("serve returned %v", err)
	}
	if err := ts.st.Close(); err != nil {
		ts.t.Errorf("closing the store: %v", err)
	}
	ts.srv = nil
}

func (ts *testServer) client(opts ...kgo.Opt) *kgo.Client {
	ts.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ts.addr)}, opts...)...)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(cl.Close)
	return cl
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var seglogReadAll = seglog.ReadOptions{}

// ownedLog returns the store's own Log of a partition, which its users
// (the server among them) only see through a seglog.View: for tests that
// must roll or truncate it under the server. It is reached the way seglog
// clean reaches it, and pinned open until the test ends.
func ownedLog(t testing.TB, st *store.Store, topic string, partition int32) *seglog.Log {
	t.Helper()
	l, release, err := storelog.Acquire(st, topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return l
}
