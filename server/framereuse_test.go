package server

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceFramesReused: a connection reads each request into a frame
// from the server's pool, where each Produce's frame goes back once its
// record sets are stored, before the answer. Pipelined produces of
// growing and shrinking sizes, with other requests between them, to a
// topic the OS flushes and to one synced per append (whose group commit
// copies batches while other connections' appends wait), must store every
// batch exactly as sent and answer with the topic names sent: a frame
// reused while anything still referred to it would show up as a record
// overwritten by a later request's bytes.
func TestProduceFramesReused(t *testing.T) {
	ts := startServer(t, "", Options{})
	synced := store.DefaultTopicConfig()
	synced.FlushMessages = 1
	topics := map[string]store.TopicConfig{"os-flushed-topic": store.DefaultTopicConfig(), "s": synced}
	for name, cfg := range topics {
		if err := ts.st.CreateTopic(name, 1, cfg); err != nil {
			t.Fatal(err)
		}
	}
	const conns, perConn = 3, 30
	sizes := []int{1, 400, 3, 2000, 40, 1, 900}
	var wg sync.WaitGroup
	for ci := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dialRaw(t, ts.addr)
			var reqs []kmsg.Request
			var corrs []int32
			for i := range perConn {
				topic := "os-flushed-topic"
				if (i+ci)%2 == 1 {
					topic = "s"
				}
				n := sizes[(i+ci)%len(sizes)]
				req := produceReq(9, -1, topic, 0, makeBatch(t, record.None, -1, 0, 0, n, fmt.Sprintf("c%d-r%d", ci, i)))
				reqs, corrs = append(reqs, req), append(corrs, c.send(req))
				if i%7 == 3 {
					md := kmsg.NewPtrMetadataRequest()
					md.SetVersion(9)
					reqs, corrs = append(reqs, md), append(corrs, c.send(md))
				}
			}
			for i, req := range reqs {
				resp := c.recv(req, corrs[i])
				pr, ok := resp.(*kmsg.ProduceResponse)
				if !ok {
					continue
				}
				sent := req.(*kmsg.ProduceRequest).Topics[0].Topic
				if got := pr.Topics[0].Topic; got != sent {
					t.Errorf("conn %d request %d: answered for topic %q, sent %q", ci, i, got, sent)
				}
				if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
					t.Errorf("conn %d request %d: error %d", ci, i, code)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Every value names its connection, request and record: each must be
	// there once, whole, in its request's order.
	want := map[string]int{}
	for ci := range conns {
		for i := range perConn {
			for j := range sizes[(i+ci)%len(sizes)] {
				want[fmt.Sprintf("c%d-r%d-%d", ci, i, j)]++
			}
		}
	}
	got := 0
	for name := range topics {
		l, err := ts.st.Log(name, 0)
		if err != nil {
			t.Fatal(err)
		}
		for rec, err := range l.Records(0) {
			if err != nil {
				t.Fatal(err)
			}
			v := string(rec.Value)
			if want[v] != 1 || !bytes.Equal(rec.Key, []byte("k")) {
				t.Fatalf("%s offset %d: record %q=%q was not sent once (or was stored twice)", name, rec.Offset, rec.Key, v)
			}
			want[v]--
			got++
		}
	}
	for v, n := range want {
		if n != 0 {
			t.Fatalf("record %q never stored (%d records stored)", v, got)
		}
	}
}

// TestProduceFramesPooled: a producer that sends its next request when the
// last one is answered finds the last one's frame in the pool, so its
// requests are not read into fresh memory one by one. The frame goes back
// before the answer is written; given back after it, the client's next
// request can arrive first, which 200 requests show in most runs (18 of
// 20 when tried).
func TestProduceFramesPooled(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("p", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	const requests = 200
	before := ts.srv.framesMade.Load()
	for i := range requests {
		req := produceReq(9, -1, "p", 0, makeBatch(t, record.None, -1, 0, 0, 2000, fmt.Sprintf("r%03d", i)))
		resp := c.recv(req, c.send(req)).(*kmsg.ProduceResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("request %d: error %d", i, code)
		}
	}
	if made := ts.srv.framesMade.Load() - before; made > 1 {
		t.Fatalf("%d of %d produce requests were read into fresh frames", made, requests)
	}
}
