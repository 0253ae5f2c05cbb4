package server

import (
	"context"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestIdempotence(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, Options{})
	if err := ts.st.CreateTopic("i", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.SetVersion(4)
	init.ProducerID, init.ProducerEpoch = -1, -1
	ip := c.do(init).(*kmsg.InitProducerIDResponse)
	if ip.ErrorCode != 0 || ip.ProducerID <= 0 || ip.ProducerEpoch != 0 {
		t.Fatalf("init producer id: %+v", ip)
	}
	pid := ip.ProducerID
	b0 := makeBatch(t, record.LZ4, pid, 0, 0, 3, "a")  // seq 0-2
	b3 := makeBatch(t, record.None, pid, 0, 3, 2, "b") // seq 3-4
	steps := []struct {
		name string
		b    []byte
		code int16
		off  int64
	}{
		{"first", b0, 0, 0},
		{"duplicate of the last", b0, 0, 0},
		{"next", b3, 0, 3},
		{"duplicate of an earlier one", b0, 0, 0},
		{"gap", makeBatch(t, record.None, pid, 0, 10, 1, "c"), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"new epoch not at 0", makeBatch(t, record.None, pid, 1, 5, 1, "d"), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"new epoch", makeBatch(t, record.None, pid, 1, 0, 1, "e"), 0, 5},
		{"old epoch", makeBatch(t, record.None, pid, 0, 5, 1, "f"), kerr.InvalidProducerEpoch.Code, -1},
		{"unknown producer at any sequence", makeBatch(t, record.None, pid+1, 0, 7, 1, "g"), 0, 6},
	}
	run := func(steps []struct {
		name string
		b    []byte
		code int16
		off  int64
	}) {
		t.Helper()
		for _, s := range steps {
			rp := produceOne(t, c, 9, "i", append([]byte(nil), s.b...))
			if rp.ErrorCode != s.code || (s.code == 0 && rp.BaseOffset != s.off) {
				t.Fatalf("%s: error %d offset %d, want error %d offset %d", s.name, rp.ErrorCode, rp.BaseOffset, s.code, s.off)
			}
		}
	}
	run(steps)
	l, _ := ts.st.Log("i", 0)
	if l.EndOffset() != 7 {
		t.Fatalf("log end %d, want 7: duplicates or refused batches were stored", l.EndOffset())
	}

	// A produce whose connection dropped before the answer is retried on
	// a new connection, and stored once.
	lost := makeBatch(t, record.None, pid, 1, 1, 2, "lost")
	b, _ := c.frame(produceReq(9, -1, "i", 0, append([]byte(nil), lost...)))
	if _, err := c.nc.Write(b); err != nil {
		t.Fatal(err)
	}
	c.nc.Close()
	c = dialRaw(t, ts.addr)
	testutil.WaitFor(t, "the log holds 9 records", func() bool { return l.EndOffset() == 9 })
	if rp := produceOne(t, c, 9, "i", append([]byte(nil), lost...)); rp.ErrorCode != 0 || rp.BaseOffset != 7 {
		t.Fatalf("retry after a dropped connection: error %d offset %d", rp.ErrorCode, rp.BaseOffset)
	}

	// After a restart the state comes back from the log: the same
	// duplicates and fences hold.
	ts.stop()
	ts = startServer(t, dir, Options{})
	c = dialRaw(t, ts.addr)
	run(steps[6:8:8])
	if rp := produceOne(t, c, 9, "i", append([]byte(nil), lost...)); rp.ErrorCode != 0 || rp.BaseOffset != 7 {
		t.Fatalf("retry after a restart: error %d offset %d", rp.ErrorCode, rp.BaseOffset)
	}
	if rp := produceOne(t, c, 9, "i", makeBatch(t, record.None, pid, 1, 9, 1, "gap")); rp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after a restart: error %d", rp.ErrorCode)
	}
	l, _ = ts.st.Log("i", 0)
	if l.EndOffset() != 9 {
		t.Fatalf("log end %d after the restart, want 9", l.EndOffset())
	}
	// KIP-360: a producer presenting its id and epoch gets the epoch bumped.
	init.ProducerID, init.ProducerEpoch = pid, 1
	if ip := c.do(init).(*kmsg.InitProducerIDResponse); ip.ProducerID != pid || ip.ProducerEpoch != 2 {
		t.Fatalf("epoch bump: %+v", ip)
	}
	init.TransactionalID = kmsg.StringPtr("tx")
	if ip := c.do(init).(*kmsg.InitProducerIDResponse); ip.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional id: error %d", ip.ErrorCode)
	}
}

// TestKgoRestartAndOffsets: kgo's idempotent producer (its default) writes,
// the server restarts, the producer continues, and consumers starting at
// the start, the end and a time each read exactly what they should.
func TestKgoRestartAndOffsets(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, Options{NumPartitions: 2})
	cl := ts.client(kgo.AllowAutoTopicCreation())
	first := produceRecords(t, cl, "r", 200, "one")
	cl.Close()
	ts.stop()
	// Every record of the first run was stamped before now. mid is the
	// next millisecond (the unit of record timestamps), which none of them
	// can share; the second run begins once the clock has reached it.
	mid := time.Now().Truncate(time.Millisecond).Add(time.Millisecond)
	time.Sleep(time.Until(mid))
	ts = startServer(t, dir, Options{NumPartitions: 2})
	cl = ts.client()
	second := produceRecords(t, cl, "r", 100, "two")
	sameRecords(t, append(first, second...), consumeAll(t, ts.addr, "r", 300))
	sameRecords(t, second, consumeAll(t, ts.addr, "r", 100, kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(mid.UnixMilli()))))

	// From the end: only what is produced after the consumer started.
	end, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumeTopics("r"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		t.Fatal(err)
	}
	defer end.Close()
	ctx := testCtx(t)
	// The consumer resolves "the end" at some point after it starts;
	// produce until it reads something, and check it never reads a record
	// from before it started.
	var got []*kgo.Record
	for len(got) == 0 {
		produceRecords(t, cl, "r", 1, "three")
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		got = append(got, end.PollFetches(pctx).Records()...)
		cancel()
		if ctx.Err() != nil {
			t.Fatal("the consumer at the end read nothing")
		}
	}
	for _, r := range got {
		if string(r.Headers[0].Value) != "three" {
			t.Fatalf("consumer at the end read an old record: %q", r.Value)
		}
	}
}
