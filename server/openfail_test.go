package server

import (
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/errlog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOpenFailureIsLogged: a partition whose Log cannot be opened (its
// first segment not created: the disk was full when the topic was made)
// answers Produce and Fetch with KAFKA_STORAGE_ERROR, and the server logs
// what the disk said, naming the partition; the client learns only the
// code. Once the disk has room the partition opens and takes the batch.
func TestOpenFailureIsLogged(t *testing.T) {
	var full atomic.Bool
	full.Store(true)
	fs := vfs.Inject(vfs.Default, vfs.InjectorFunc(func(op vfs.Op) error {
		if full.Load() && op.Kind == vfs.OpCreate && strings.Contains(op.Path, "nospace-0") {
			return syscall.ENOSPC
		}
		return nil
	}))
	st, err := store.Open(t.TempDir(), store.Options{FS: fs, OffsetsPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	var logs testutil.LockedBuffer
	srv, err := New(st, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The log's clock: a client retrying at its backoff makes one line
	// every errlog.Every, not one per request.
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC).UnixNano())
	srv.errs = errlog.New(srv.logger, func() time.Time { return time.Unix(0, now.Load()) })
	ts := &testServer{t: t, st: st, srv: srv, addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ln) }()
	t.Cleanup(ts.stop)
	if err := st.CreateTopic("nospace", 1, store.DefaultTopicConfig()); err != nil {
		t.Logf("creating the topic on a full disk: %v", err)
	}
	if _, err := st.Partitions("nospace"); err != nil {
		t.Fatalf("the store did not keep the topic whose first segment it could not create (%v): this test's premise", err)
	}

	c := dialRaw(t, ts.addr)
	if got := produceOne(t, c, 7, "nospace", makeBatch(t, record.None, -1, -1, -1, 1, "a")); got.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to a partition that cannot open: code %d, want KAFKA_STORAGE_ERROR", got.ErrorCode)
	}
	for _, want := range []string{"opening a partition failed", "topic=nospace", "partition=0", "no space left on device"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("the server's log says %q, want it to hold %q", logs.String(), want)
		}
	}

	lines := func() int { return strings.Count(logs.String(), "opening a partition failed") }
	for range 5 {
		if got := produceOne(t, c, 7, "nospace", makeBatch(t, record.None, -1, -1, -1, 1, "a")); got.ErrorCode != kerr.KafkaStorageError.Code {
			t.Fatalf("a retry: code %d, want KAFKA_STORAGE_ERROR", got.ErrorCode)
		}
	}
	if n := lines(); n != 1 {
		t.Fatalf("six failed produces within %v logged %d lines, want 1:\n%s", errlog.Every, n, logs.String())
	}
	now.Add(int64(errlog.Every))
	if got := produceOne(t, c, 7, "nospace", makeBatch(t, record.None, -1, -1, -1, 1, "a")); got.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("a retry: code %d, want KAFKA_STORAGE_ERROR", got.ErrorCode)
	}
	if n := lines(); n != 2 || !strings.Contains(logs.String(), "repeated=5") {
		t.Fatalf("a failure %v after the first logged %d lines in all, want 2, the second saying repeated=5:\n%s", errlog.Every, n, logs.String())
	}

	fr := c.do(fetchReq(11, 0, "nospace", map[int32]int64{0: 0})).(*kmsg.FetchResponse)
	if code := fr.Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch from a partition that cannot open: code %d, want KAFKA_STORAGE_ERROR", code)
	}

	full.Store(false)
	if got := produceOne(t, c, 7, "nospace", makeBatch(t, record.None, -1, -1, -1, 1, "b")); got.ErrorCode != 0 || got.BaseOffset != 0 {
		t.Fatalf("produce once the disk has room: code %d at %d, want offset 0", got.ErrorCode, got.BaseOffset)
	}
}
