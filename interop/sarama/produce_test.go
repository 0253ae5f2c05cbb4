package sarama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// newConfig is sarama's default configuration (protocol version 2.8, its
// default timeouts) with a client id; the tests change only what the
// feature under test needs.
func newConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "seglog-interop-sarama"
	cfg.Producer.Return.Successes = true
	return cfg
}

// rec is one record as written and as read back.
type rec struct {
	Key, Value []byte
	Headers    [][2][]byte
}

func (r rec) String() string {
	return fmt.Sprintf("key %q value %q headers %q", r.Key, r.Value, r.Headers)
}

func (r rec) equal(o rec) bool {
	if !bytes.Equal(r.Key, o.Key) || !bytes.Equal(r.Value, o.Value) || len(r.Headers) != len(o.Headers) {
		return false
	}
	for i := range r.Headers {
		if !bytes.Equal(r.Headers[i][0], o.Headers[i][0]) || !bytes.Equal(r.Headers[i][1], o.Headers[i][1]) {
			return false
		}
	}
	return true
}

// records makes n records whose keys, values and headers differ from each
// other and from every other test's (tag), with bytes that no text
// encoding would keep (0x00, 0xff), a null key and an empty value among
// them, and values compressible enough that a codec shrinks a batch.
func records(tag string, n int) []rec {
	out := make([]rec, n)
	for i := range out {
		r := rec{
			Key:   []byte(fmt.Sprintf("%s-key-%d", tag, i%7)),
			Value: append([]byte(fmt.Sprintf("%s value %d \x00\xff ", tag, i)), bytes.Repeat([]byte{byte(i)}, i%50)...),
		}
		switch i % 10 {
		case 3:
			r.Key = nil
		case 4:
			r.Value = []byte{}
		case 5:
			r.Headers = [][2][]byte{{[]byte("h"), []byte{0, byte(i), 0xff}}, {[]byte("trace"), []byte(tag)}}
		}
		out[i] = r
	}
	return out
}

func producerMessage(topic string, partition int32, r rec) *sarama.ProducerMessage {
	m := &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.ByteEncoder(r.Value)}
	if r.Key != nil {
		m.Key = sarama.ByteEncoder(r.Key)
	}
	for _, h := range r.Headers {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: h[0], Value: h[1]})
	}
	return m
}

func fromConsumer(m *sarama.ConsumerMessage) rec {
	r := rec{Key: m.Key, Value: m.Value}
	if r.Value == nil {
		r.Value = []byte{}
	}
	for _, h := range m.Headers {
		r.Headers = append(r.Headers, [2][]byte{h.Key, h.Value})
	}
	return r
}

// produce sends want to topic's partition with a sync producer, in batches
// of 50 (SendMessages), so that each batch holds many records.
func produce(t *testing.T, cfg *sarama.Config, addr, topic string, partition int32, want []rec) {
	t.Helper()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			p.Close()
		}
	}()
	for start := 0; start < len(want); start += 50 {
		var msgs []*sarama.ProducerMessage
		for _, r := range want[start:min(start+50, len(want))] {
			msgs = append(msgs, producerMessage(topic, partition, r))
		}
		if err := p.SendMessages(msgs); err != nil {
			t.Fatalf("SendMessages to %s: %v", topic, err)
		}
		for i, m := range msgs {
			if m.Offset != int64(start+i) {
				t.Fatalf("record %d of %s stored at offset %d", start+i, topic, m.Offset)
			}
		}
	}
	closed = true
	if err := p.Close(); err != nil {
		t.Fatalf("closing the producer: %v", err)
	}
}

// consumeSarama reads n records of topic's partition from the start with
// sarama's consumer.
func consumeSarama(t *testing.T, addr, topic string, partition int32, n int) []rec {
	t.Helper()
	c, err := sarama.NewConsumer([]string{addr}, newConfig())
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, partition, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("ConsumePartition %s/%d: %v", topic, partition, err)
	}
	defer pc.Close()
	var got []rec
	timeout := time.After(time.Minute)
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			if m.Offset != int64(len(got)) {
				t.Fatalf("%s/%d: record at offset %d, want %d", topic, partition, m.Offset, len(got))
			}
			got = append(got, fromConsumer(m))
		case err := <-pc.Errors():
			t.Fatalf("consuming %s/%d: %v", topic, partition, err)
		case <-timeout:
			t.Fatalf("%s/%d: %d of %d records read in a minute", topic, partition, len(got), n)
		}
	}
	return got
}

// consumeCLI reads a partition's records with `seglog consume --json`,
// which opens the log read-only beside the running server: a reader that
// shares no code with sarama. It returns the records and their offsets.
func consumeCLI(t *testing.T, dir, topic string, partition int32) ([]rec, []int64) {
	t.Helper()
	out := seglog(t, "consume", "--json", filepath.Join(dir, fmt.Sprintf("%s-%d", topic, partition)))
	var got []rec
	var offsets []int64
	for line := range strings.Lines(out) {
		var j struct {
			Offset  int64
			Key     []byte
			Value   []byte
			Headers []struct {
				Key   string
				Value []byte
			}
		}
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatalf("seglog consume line %q: %v", line, err)
		}
		r := rec{Key: j.Key, Value: j.Value}
		if r.Value == nil {
			r.Value = []byte{}
		}
		for _, h := range j.Headers {
			r.Headers = append(r.Headers, [2][]byte{[]byte(h.Key), h.Value})
		}
		got = append(got, r)
		offsets = append(offsets, j.Offset)
	}
	return got, offsets
}

func sameRecords(t *testing.T, who string, got, want []rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", who, len(got), len(want))
	}
	for i := range want {
		if !got[i].equal(want[i]) {
			t.Fatalf("%s: record %d is %v, want %v", who, i, got[i], want[i])
		}
	}
}

// batch is one batch as `seglog dump` prints it.
type batch struct {
	codec                    string
	producerID, baseSequence int64
	count                    int64
}

var dumpLine = regexp.MustCompile(`count: (\d+) baseSequence: (-?\d+) .*producerId: (-?\d+) .*compresscodec: (\S+)`)

// dump lists the batches of a partition with `seglog dump`.
func dump(t *testing.T, dir, topic string, partition int32) []batch {
	t.Helper()
	var out []batch
	for line := range strings.Lines(seglog(t, "dump", filepath.Join(dir, fmt.Sprintf("%s-%d", topic, partition)))) {
		m := dumpLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		count, _ := strconv.ParseInt(m[1], 10, 64)
		seq, _ := strconv.ParseInt(m[2], 10, 64)
		pid, _ := strconv.ParseInt(m[3], 10, 64)
		out = append(out, batch{codec: m[4], producerID: pid, baseSequence: seq, count: count})
	}
	if len(out) == 0 {
		t.Fatalf("seglog dump of %s-%d shows no batch", topic, partition)
	}
	return out
}

// TestProduceEveryCodec: sarama's producer with each codec it has stores
// batches carrying that codec, and sarama's consumer and seglog consume
// read every record back byte for byte.
func TestProduceEveryCodec(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir)
	codecs := map[string]sarama.CompressionCodec{
		"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
		"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
	}
	for _, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(name, func(t *testing.T) {
			topic := "sarama-" + name
			want := records(topic, 200)
			cfg := newConfig()
			cfg.Producer.Compression = codecs[name]
			produce(t, cfg, srv.addr, topic, 0, want)
			sameRecords(t, "sarama consumer", consumeSarama(t, srv.addr, topic, 0, len(want)), want)
			got, _ := consumeCLI(t, dir, topic, 0)
			sameRecords(t, "seglog consume", got, want)
			batches := dump(t, dir, topic, 0)
			for _, b := range batches {
				if b.codec != name {
					t.Fatalf("a batch of %s is stored with codec %s, want %s", topic, b.codec, name)
				}
			}
			if len(batches) >= len(want) {
				t.Fatalf("%d records in %d batches: the codec was never tried on a batch of many", len(want), len(batches))
			}
		})
	}
	srv.stop()
	fsckClean(t, dir)
}

// TestIdempotentProducer: sarama's idempotent producer (InitProducerId,
// then sequences) stores batches carrying its producer id with sequences
// from 0 and no gap, each record once; a second producer after a server
// restart gets another producer id and appends after the first's records.
func TestIdempotentProducer(t *testing.T) {
	dir := t.TempDir()
	topic := "sarama-idempotent"
	want := records(topic, 300)
	for round := range 2 {
		srv := startServer(t, dir)
		cfg := newConfig()
		cfg.Producer.Idempotent = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Compression = sarama.CompressionZSTD
		half := want[round*150 : (round+1)*150]
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		p, err := sarama.NewSyncProducer([]string{srv.addr}, cfg)
		if err != nil {
			t.Fatalf("NewSyncProducer (idempotent): %v", err)
		}
		for start := 0; start < len(half); start += 50 {
			var msgs []*sarama.ProducerMessage
			for _, r := range half[start : start+50] {
				msgs = append(msgs, producerMessage(topic, 0, r))
			}
			if err := p.SendMessages(msgs); err != nil {
				t.Fatalf("round %d: SendMessages: %v", round, err)
			}
		}
		if err := p.Close(); err != nil {
			t.Fatalf("closing the idempotent producer: %v", err)
		}
		got, offsets := consumeCLI(t, dir, topic, 0)
		sameRecords(t, fmt.Sprintf("seglog consume after round %d", round), got, want[:(round+1)*150])
		for i, o := range offsets {
			if o != int64(i) {
				t.Fatalf("record %d at offset %d", i, o)
			}
		}
		srv.stop()
	}
	// Each producer (one per round: a new InitProducerId) numbers its
	// batches from sequence 0, with no gap.
	next := map[int64]int64{}
	for _, b := range dump(t, dir, topic, 0) {
		if b.producerID < 0 {
			t.Fatalf("a batch has no producer id: %+v", b)
		}
		if b.baseSequence != next[b.producerID] {
			t.Fatalf("producer %d: batch at sequence %d, want %d", b.producerID, b.baseSequence, next[b.producerID])
		}
		next[b.producerID] += b.count
	}
	if len(next) != 2 {
		t.Errorf("%d producer ids in the log, want 2 (one per producer): %v", len(next), next)
	}
	fsckClean(t, dir)
}
