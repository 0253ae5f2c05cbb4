package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const corpusDir = "../testdata/kafka-client"

// corpusBatches returns the real client's produce batches of every codec.
func corpusBatches(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, c := range record.Codecs {
		data, err := vfs.ReadFileLimit(vfs.Default, filepath.Join(corpusDir, c.String()+".batches"), 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) >= record.HeaderSize {
			n := record.Batch(data).Size()
			if n > len(data) || n < record.HeaderSize {
				t.Fatalf("corpus %s: bad entry", c)
			}
			out = append(out, data[:n])
			data = data[n:]
		}
	}
	return out
}

// TestHostileBatches sends damaged copies of the real client's batches:
// each gets an error response, the connection stays usable and nothing is
// stored.
func TestHostileBatches(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("h", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	batches := corpusBatches(t)
	tried := 0
	for i, b := range batches {
		if i%7 != 0 { // a sample keeps the test short
			continue
		}
		var variants [][]byte
		for _, pos := range []int{0, 7, 8, 11, 16, 17, 21, 22, 40, 57, 60, 61, len(b) / 2, len(b) - 1} {
			if pos >= len(b) {
				continue
			}
			m := bytes.Clone(b)
			m[pos] ^= 0x5a
			variants = append(variants, m)
		}
		variants = append(variants, b[:len(b)-1], b[:record.HeaderSize-1], append(bytes.Clone(b), 0))
		huge := bytes.Clone(b)
		binary.BigEndian.PutUint32(huge[8:], 1<<30)
		variants = append(variants, huge)
		for j, m := range variants {
			rp := produceOne(t, c, 9, "h", m)
			if rp.ErrorCode == 0 {
				t.Fatalf("batch %d variant %d was accepted", i, j)
			}
			tried++
		}
	}
	l, _ := ts.st.Log("h", 0)
	if l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("damaged batches changed the log: end %d, %d bytes", l.EndOffset(), l.Size())
	}
	// The intact batches are accepted, each as it was sent.
	for _, b := range batches[:3] {
		if rp := produceOne(t, c, 9, "h", bytes.Clone(b)); rp.ErrorCode != 0 {
			t.Fatalf("intact corpus batch refused: %d", rp.ErrorCode)
		}
	}
	t.Logf("%d damaged batches refused", tried)
}

// TestHostileFrames sends malformed frames, lengths, unknown keys and
// versions no response can be encoded for: each closes its connection
// without a response, and the server goes on serving others with the log
// unchanged. (A version we do not serve that kmsg can answer gets
// UNSUPPORTED_VERSION: TestUnservedKeysAndVersions.)
func TestHostileFrames(t *testing.T) {
	ts := startServer(t, "", Options{MaxRequestBytes: 64 << 10})
	if err := ts.st.CreateTopic("h", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	frame := func(key, version int16, body []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(8+2+len(body)))
		b = binary.BigEndian.AppendUint16(b, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 1)
		b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
		return append(b, body...)
	}
	sized := func(size uint32, rest []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, size), rest...)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("h")}}
	mdBody := md.AppendTo(nil)
	cases := map[string][]byte{
		"size below a header":        sized(4, []byte{0, 3, 0, 1}),
		"negative size":              sized(0xffffffff, nil),
		"size over the limit":        sized(1<<20, make([]byte, 100)),
		"unknown key":                frame(999, 0, nil),
		"metadata v14 (beyond kmsg)": frame(3, 14, mdBody),
		"client id overruns":         append(sized(10, []byte{0, 3, 0, 1, 0, 0, 0, 1}), 0x7f, 0xff),
		"bad flexible tags":          frame(3, 12, []byte{0x05, 0x01, 0xff}),
		"truncated body":             frame(3, 12, append([]byte{0}, mdBody[:len(mdBody)/2]...)),
		"huge array length":          frame(3, 4, []byte{0x7f, 0xff, 0xff, 0xff, 1}),
		"produce garbage":            frame(0, 9, bytes.Repeat([]byte{0xff}, 200)),
	}
	for name, b := range cases {
		c := dialRaw(t, ts.addr)
		if _, err := c.nc.Write(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.expectClosed()
	}
	// A frame that claims more than it sends allocates only what arrives;
	// the server drops the connection when the client goes.
	c := dialRaw(t, ts.addr)
	c.nc.Write(sized(60<<10, []byte{0, 3}))
	c.nc.Close()

	c = dialRaw(t, ts.addr)
	resp := c.do(md).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("server unhealthy after hostile frames: %+v", resp.Topics)
	}
	l, _ := ts.st.Log("h", 0)
	if l.EndOffset() != 0 {
		t.Fatalf("log changed: end %d", l.EndOffset())
	}
}

// TestShutdownAnswersParkedFetch: Shutdown answers a parked fetch at once,
// closes the connections, and returns; the store then closes cleanly.
func TestShutdownAnswersParkedFetch(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("s", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	req := fetchReq(12, 600_000, "s", map[int32]int64{0: 0})
	corr := c.send(req)
	idle := dialRaw(t, ts.addr)
	// Make sure the fetch is being answered before shutting down.
	testutil.WaitFor(t, "a connection is answering the fetch", func() bool {
		ts.srv.mu.Lock()
		defer ts.srv.mu.Unlock()
		for cn := range ts.srv.conns {
			cn.mu.Lock()
			busy := cn.busy
			cn.mu.Unlock()
			if busy {
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	resp := c.recv(req, corr).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("parked fetch answered with error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
	c.expectClosed()
	idle.expectClosed()
	if _, err := net.Dial("tcp", ts.addr); err == nil {
		t.Fatal("still accepting connections")
	}
	if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("serve: %v", err)
	}
	ts.done <- ErrServerClosed // for the cleanup's stop
}

// TestFetchOfTruncatedSliceFails: a record set the log was truncated under
// after the fetch read it is not sent short (that would break the
// framing): the write fails, and the connection is closed.
func TestFetchOfTruncatedSliceFails(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("t", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	for i := range 3 {
		produceOne(t, c, 9, "t", makeBatch(t, record.None, -1, 0, 0, 10, fmt.Sprint(i)))
	}
	a := ts.srv.readFetch(fetchReq(12, 0, "t", map[int32]int64{0: 0}))
	defer a.close()
	if a.bytes == 0 {
		t.Fatal("nothing read")
	}
	if err := ownedLog(t, ts.st, "t", 0).TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	err := encodeFetch(1, 12, 0, a.topics).writeTo(io.Discard)
	if !errors.Is(err, seglog.ErrSliceTruncated) {
		t.Fatalf("write after truncation: %v, want ErrSliceTruncated", err)
	}
}

// TestPipelinedAfterFailureEnds: requests pipelined behind one that
// closes the connection do not keep it half alive. A parked fetch holds
// the answering goroutine while the reader queues an unknown key (which
// closes the connection) and reads on; when the queue's request fails,
// the reader, which may be handing over the next, ends too.
func TestPipelinedAfterFailureEnds(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("p", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	fetch := fetchReq(12, 300, "p", map[int32]int64{0: 0})
	corr := c.send(fetch)
	unknown := binary.BigEndian.AppendUint32(nil, 10)
	unknown = append(unknown, 0x03, 0xe7, 0, 0, 0, 0, 0, 9, 0xff, 0xff) // api key 999
	c.nc.Write(unknown)
	for range 3 {
		c.send(kmsg.NewPtrApiVersionsRequest())
	}
	c.recv(fetch, corr)
	c.expectClosed()
	testutil.WaitFor(t, "the server ends the connection", func() bool {
		return ts.srv.metrics.connsOpen.Load() == 0
	})
}
