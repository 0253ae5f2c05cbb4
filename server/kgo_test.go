package server

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// produceRecords produces n records to topic and returns them as produced.
func produceRecords(t *testing.T, cl *kgo.Client, topic string, n int, tag string) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i%97)),
			Value:   bytes.Repeat([]byte(fmt.Sprintf("%s-%d;", tag, i)), 1+i%13),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(tag)}}})
	}
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return recs
}

// consumeAll reads n records of topic from the start.
func consumeAll(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, err)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", tp, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// sameRecords checks that got holds exactly want, per partition in order.
func sameRecords(t *testing.T, want, got []*kgo.Record) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	type key struct {
		p   int32
		off int64
	}
	byPos := make(map[key]*kgo.Record)
	for _, r := range want {
		byPos[key{r.Partition, r.Offset}] = r
	}
	for _, r := range got {
		w := byPos[key{r.Partition, r.Offset}]
		if w == nil {
			t.Fatalf("record at %d/%d was not produced", r.Partition, r.Offset)
		}
		if !bytes.Equal(w.Key, r.Key) || !bytes.Equal(w.Value, r.Value) || len(r.Headers) != 1 ||
			string(r.Headers[0].Value) != string(w.Headers[0].Value) || !w.Timestamp.Equal(r.Timestamp) {
			t.Fatalf("record %d/%d differs: got key %q value %q, want key %q value %q", r.Partition, r.Offset, r.Key, r.Value, w.Key, w.Value)
		}
	}
}

func TestKgoProduceConsumeEveryCodec(t *testing.T) {
	ts := startServer(t, "", Options{NumPartitions: 3})
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		want  record.Codec
	}{
		{"none", kgo.NoCompression(), record.None},
		{"gzip", kgo.GzipCompression(), record.Gzip},
		{"snappy", kgo.SnappyCompression(), record.Snappy},
		{"lz4", kgo.Lz4Compression(), record.LZ4},
		{"zstd", kgo.ZstdCompression(), record.Zstd},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "codec-" + c.name
			cl := ts.client(kgo.ProducerBatchCompression(c.codec), kgo.AllowAutoTopicCreation())
			want := produceRecords(t, cl, topic, 300, c.name)
			got := consumeAll(t, ts.addr, topic, len(want))
			sameRecords(t, want, got)
			// The batches are stored as they arrived: with the codec the
			// producer chose.
			checkStoredCodec(t, ts.st, topic, c.want)
		})
	}
}

func checkStoredCodec(t *testing.T, st *store.Store, topic string, want record.Codec) {
	t.Helper()
	n, err := st.Partitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	batches := 0
	for p := range int32(n) {
		for _, b := range storedBatches(t, st, topic, p) {
			if b.Codec() != want {
				t.Fatalf("%s-%d: stored batch at %d has codec %v, want %v", topic, p, b.BaseOffset(), b.Codec(), want)
			}
			batches++
		}
	}
	if batches == 0 {
		t.Fatalf("%s: no batches stored", topic)
	}
}

// storedBatches reads a partition's batches from its log.
func storedBatches(t *testing.T, st *store.Store, topic string, p int32) []record.Batch {
	t.Helper()
	l, err := st.Log(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Batch
	for off := l.StartOffset(); off < l.EndOffset(); {
		sl, err := l.Read(off, 1<<30, seglogReadAll)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, sl.Len())
		if _, err := sl.ReadAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		next := sl.LastOffset() + 1
		sl.Close()
		for len(buf) >= record.HeaderSize {
			b := record.Batch(buf[:record.Batch(buf).Size()])
			out = append(out, b)
			buf = buf[b.Size():]
		}
		off = next
	}
	return out
}
