package benchserve

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/record"
)

// rawProduceTopic is the topic the raw producer writes, apart from the
// one the kgo consumers read.
const rawProduceTopic = "bench-raw"

// rawProduceConns and rawProduceInFlight shape the raw producer: its
// partitions are split over rawProduceConns connections (so the server
// appends on as many goroutines), each keeping rawProduceInFlight
// requests pipelined.
const (
	rawProduceConns    = 4
	rawProduceInFlight = 4
)

// benchRawProduce writes cfg.Records records of value to rawProduceTopic
// with hand-made Produce requests (v7, acks=all, no idempotence): one batch
// of cfg.Batch records per partition per request, built once and sent
// again and again, so the client costs almost nothing and what is measured
// is the server's produce path (read the request, decode it, check each
// batch's CRC and records, assign offsets, append). It returns the records
// per second and, with cpu, the server's CPU seconds per GB, and its own.
func benchRawProduce(ctx context.Context, addr string, cfg Config, value []byte, cpu func() (time.Duration, error)) (recsSec, cpuPerGB, clientPerGB float64, err error) {
	b := record.NewBuilder(record.None)
	for i := range cfg.Batch {
		if err := b.Add(record.Record{Offset: int64(i), Value: value}); err != nil {
			return 0, 0, 0, err
		}
	}
	built, err := b.Build()
	if err != nil {
		return 0, 0, 0, err
	}
	batch := append([]byte(nil), built...)
	perRequest := cfg.Partitions * cfg.Batch
	requests := max(1, cfg.Records/perRequest)
	conns := min(rawProduceConns, cfg.Partitions)
	// Each connection's request covers its share of the partitions.
	reqs := make([][]byte, conns)
	for c := range conns {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(7)
		req.Acks, req.TimeoutMillis = -1, 30_000
		rt := kmsg.ProduceRequestTopic{Topic: rawProduceTopic}
		for p := c; p < cfg.Partitions; p += conns {
			rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: int32(p), Records: batch})
		}
		req.Topics = []kmsg.ProduceRequestTopic{rt}
		reqs[c] = req.AppendTo(nil)
	}
	// The topic is created by a Metadata request (Kafka auto-creates on
	// those, not on Produce), and one request is sent before the timed
	// part.
	if err := createByMetadata(ctx, addr, rawProduceTopic, cfg.Partitions); err != nil {
		return 0, 0, 0, err
	}
	ends := &partitionEnds{batch: int64(cfg.Batch), end: map[int32]int64{}}
	if err := rawProduceConn(ctx, addr, reqs[0], 1, ends); err != nil {
		return 0, 0, 0, err
	}
	var cpu0 time.Duration
	if cpu != nil {
		if cpu0, err = cpu(); err != nil {
			return 0, 0, 0, err
		}
	}
	self0 := bench.CPUTime()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, conns)
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[c] = rawProduceConn(ctx, addr, reqs[c], requests, ends)
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	self := bench.CPUTime() - self0
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, err
	}
	// Every batch was stored, at the offsets the server answered: each
	// partition ends after all of them (conn 0's also after the first).
	for p := range int32(cfg.Partitions) {
		want := int64(requests * cfg.Batch)
		if int(p)%conns == 0 {
			want += int64(cfg.Batch)
		}
		if got := ends.end[p]; got != want {
			return 0, 0, 0, fmt.Errorf("raw produce: partition %d ends at %d, want %d", p, got, want)
		}
	}
	n := float64(requests * perRequest)
	recsSec = n / el
	clientPerGB = self.Seconds() / (n * float64(len(value)) / 1e9)
	if cpu != nil {
		cpu1, err := cpu()
		if err != nil {
			return 0, 0, 0, err
		}
		cpuPerGB = (cpu1 - cpu0).Seconds() / (n * float64(len(value)) / 1e9)
	}
	return recsSec, cpuPerGB, clientPerGB, nil
}

// createByMetadata asks addr for topic's metadata with auto-creation on,
// and checks that it has partitions partitions.
func createByMetadata(ctx context.Context, addr, topic string, partitions int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("raw produce: metadata: %w", err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != partitions {
		return fmt.Errorf("raw produce: topic %s not created as asked (%d partitions): %+v", topic, partitions, resp.Topics)
	}
	return nil
}

// rawProduceConn sends body (a ProduceRequest v7 without its header) n
// times on a new connection, rawProduceInFlight at a time, and checks
// that every response is free of errors.
func rawProduceConn(ctx context.Context, addr string, body []byte, n int, ends *partitionEnds) error {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	readErr := make(chan error, 1)
	credits := make(chan struct{}, rawProduceInFlight)
	go func() {
		readErr <- readProduceResponses(bufio.NewReaderSize(nc, 64<<10), n, credits, ends)
	}()
	frame := make([]byte, 0, 14+len(body))
	for i := range n {
		select {
		case credits <- struct{}{}:
		case err := <-readErr:
			if err == nil {
				err = fmt.Errorf("raw produce: the reader stopped early")
			}
			return err
		}
		frame = frame[:0]
		frame = append(frame, 0, 0, 0, 0)
		frame = binary.BigEndian.AppendUint16(frame, 0) // Produce
		frame = binary.BigEndian.AppendUint16(frame, 7)
		frame = binary.BigEndian.AppendUint32(frame, uint32(i+1))
		frame = binary.BigEndian.AppendUint16(frame, 0xffff) // no client id
		frame = append(frame, body...)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		if _, err := nc.Write(frame); err != nil {
			return err
		}
	}
	return <-readErr
}

// partitionEnds is, per partition, the end of the last batch the server
// acknowledged (its base offset plus the batch's records).
type partitionEnds struct {
	batch int64
	mu    sync.Mutex
	end   map[int32]int64
}

// readProduceResponses reads n Produce v7 responses, freeing a credit for
// each, and fails on the first partition error or on offsets that do not
// follow the ones before.
func readProduceResponses(r io.Reader, n int, credits <-chan struct{}, ends *partitionEnds) error {
	var buf []byte
	for range n {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		size := int(binary.BigEndian.Uint32(hdr[:]))
		if size < 4 || size > 1<<20 {
			return fmt.Errorf("raw produce: response of %d bytes", size)
		}
		if cap(buf) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(7)
		if err := resp.ReadFrom(buf[4:]); err != nil {
			return fmt.Errorf("raw produce: %w", err)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return fmt.Errorf("raw produce: partition %d: error %d", p.Partition, p.ErrorCode)
				}
				ends.mu.Lock()
				prev := ends.end[p.Partition]
				ends.end[p.Partition] = p.BaseOffset + ends.batch
				ends.mu.Unlock()
				if p.BaseOffset != prev {
					return fmt.Errorf("raw produce: partition %d: batch stored at %d, the one before ended at %d", p.Partition, p.BaseOffset, prev)
				}
			}
		}
		<-credits
	}
	return nil
}
