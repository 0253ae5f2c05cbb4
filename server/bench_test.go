package server

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkKgoProduce produces 1 KiB records with kgo (idempotent,
// acks=all, no compression) to 12 partitions of an in-process server.
func BenchmarkKgoProduce(b *testing.B) {
	ts := startServer(&testing.T{}, b.TempDir(), Config{NumPartitions: 12})
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
