package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// BenchmarkKgoProduce produces 1 KiB records with kgo (idempotent,
// acks=all, no compression) to 12 partitions of an in-process server.
func BenchmarkKgoProduce(b *testing.B) {
	ts := startServer(b, b.TempDir(), Options{NumPartitions: 12})
	defer ts.stop()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("bench"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	value := make([]byte, 1024)
	b.SetBytes(1024)
	b.ResetTimer()
	var wg sync.WaitGroup
	for range b.N {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
}

// BenchmarkRawProduce sends hand-made Produce v7 requests (acks=all), each
// one batch of 64 records of 1 KiB built once for each of 12 partitions,
// on one connection, one request at a time: the server's produce path
// (read, decode, check, append) with next to no client cost, for its
// profile (go test -bench RawProduce -cpuprofile).
func BenchmarkRawProduce(b *testing.B) {
	ts := startServer(b, b.TempDir(), Options{})
	defer ts.stop()
	if err := ts.st.CreateTopic("bench", 12, store.DefaultTopicConfig()); err != nil {
		b.Fatal(err)
	}
	bld := record.NewBuilder(record.None)
	value := make([]byte, 1024)
	for i := range 64 {
		if err := bld.Add(record.Record{Offset: int64(i), Value: value}); err != nil {
			b.Fatal(err)
		}
	}
	built, err := bld.Build()
	if err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = -1, 30_000
	rt := kmsg.ProduceRequestTopic{Topic: "bench"}
	for p := range int32(12) {
		rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: built})
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	frame := []byte{0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0xff, 0xff}
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	resp := make([]byte, 0, 4096)
	b.SetBytes(12 * 64 * 1024)
	for b.Loop() {
		if _, err := nc.Write(frame); err != nil {
			b.Fatal(err)
		}
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			b.Fatal(err)
		}
		resp = resp[:binary.BigEndian.Uint32(hdr[:])]
		if _, err := io.ReadFull(r, resp); err != nil {
			b.Fatal(err)
		}
		pr := kmsg.NewPtrProduceResponse()
		pr.SetVersion(7)
		if err := pr.ReadFrom(resp[4:]); err != nil {
			b.Fatal(err)
		}
		if c := pr.Topics[0].Partitions[0].ErrorCode; c != 0 {
			b.Fatalf("produce: error %d", c)
		}
	}
}
