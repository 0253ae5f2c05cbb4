package benchserve

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/record"
)

// benchRawFetch reads every partition of topic bench from offset 0 to its
// high watermark, cfg.ConsumeRounds times, with hand-made Fetch requests
// (v11) on one connection, and counts the whole batches received without
// decoding them: what the server can deliver when the client is not the
// bottleneck. It returns MB/s of batch bytes and, with cpu, the server's
// CPU seconds per GB.
func benchRawFetch(ctx context.Context, addr string, cfg Config, cpu func() (time.Duration, error)) (mbs, cpuPerGB float64, err error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	var cpu0 time.Duration
	if cpu != nil {
		if cpu0, err = cpu(); err != nil {
			return 0, 0, err
		}
	}
	start := time.Now()
	var total int64
	var buf, frame []byte
	var corr int32
	for range cfg.ConsumeRounds {
		offsets := make([]int64, cfg.Partitions)
		hwm := make([]int64, cfg.Partitions)
		for i := range hwm {
			hwm[i] = -1
		}
		for done := false; !done; {
			req := kmsg.NewPtrFetchRequest()
			req.SetVersion(11)
			req.ReplicaID, req.SessionEpoch = -1, -1
			req.MaxBytes = 50 << 20
			rt := kmsg.FetchRequestTopic{Topic: "bench"}
			for p := range int32(cfg.Partitions) {
				rt.Partitions = append(rt.Partitions, kmsg.FetchRequestTopicPartition{
					Partition: p, FetchOffset: offsets[p], PartitionMaxBytes: 8 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1})
			}
			req.Topics = []kmsg.FetchRequestTopic{rt}
			corr++
			buf = append(buf[:0], 0, 0, 0, 0)
			buf = binary.BigEndian.AppendUint16(buf, 1)
			buf = binary.BigEndian.AppendUint16(buf, 11)
			buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
			buf = binary.BigEndian.AppendUint16(buf, 0xffff)
			buf = req.AppendTo(buf)
			binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
			if _, err := nc.Write(buf); err != nil {
				return 0, 0, err
			}
			var hdr [4]byte
			if _, err := io.ReadFull(nc, hdr[:]); err != nil {
				return 0, 0, err
			}
			n := int(binary.BigEndian.Uint32(hdr[:]))
			if cap(frame) < n {
				frame = make([]byte, n)
			}
			frame = frame[:n]
			if _, err := io.ReadFull(nc, frame); err != nil {
				return 0, 0, err
			}
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(11)
			if len(frame) < 4 {
				return 0, 0, fmt.Errorf("raw fetch: short response")
			}
			if err := resp.UnsafeReadFrom(frame[4:]); err != nil {
				return 0, 0, fmt.Errorf("raw fetch: %w", err)
			}
			if len(resp.Topics) != 1 {
				return 0, 0, fmt.Errorf("raw fetch: %d topics in the answer", len(resp.Topics))
			}
			done = true
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 {
					return 0, 0, fmt.Errorf("raw fetch: partition %d: error %d", p.Partition, p.ErrorCode)
				}
				hwm[p.Partition] = p.HighWatermark
				for b := p.RecordBatches; len(b) >= record.HeaderSize; {
					size := record.Batch(b).Size()
					if size > len(b) || size < record.HeaderSize {
						break // a partial batch ends the set
					}
					offsets[p.Partition] = record.Batch(b).NextOffset()
					total += int64(size)
					b = b[size:]
				}
				if offsets[p.Partition] < hwm[p.Partition] {
					done = false
				}
			}
		}
	}
	el := time.Since(start).Seconds()
	mbs = float64(total) / el / 1e6
	if cpu != nil {
		cpu1, err := cpu()
		if err != nil {
			return 0, 0, err
		}
		cpuPerGB = (cpu1 - cpu0).Seconds() / (float64(total) / 1e9)
	}
	return mbs, cpuPerGB, nil
}
