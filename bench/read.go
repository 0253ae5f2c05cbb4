package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/sendfile"
	"github.com/seglog/seglog/vfs"
)

// ReadConfig is the read workload: a log of LogBytes is written (untimed),
// then each round reads all of it from offset 0 with Log.Read of
// FetchBytes at a time, as a consumer's fetches would, and sends every
// slice with Slice.WriteTo to a loopback TCP peer.
type ReadConfig struct {
	// Options configures the Log. Sync and Compression apply to the setup
	// writes.
	Options seglog.Options
	// RecordSize and Batch shape the batches written. Defaults 1024, 100.
	RecordSize, Batch int
	// LogBytes is the size of the log read in each round. Default 256 MiB.
	LogBytes int64
	// FetchBytes is the maxBytes of each Read (Kafka's
	// max.partition.fetch.bytes). Default 1 MiB.
	FetchBytes int
	// Rounds is the number of timed passes of each side. Default 5.
	Rounds int
}

func (c *ReadConfig) setDefaults() error {
	return warmLogDefaults(&c.Options, &c.RecordSize, &c.Batch, &c.LogBytes, &c.FetchBytes, &c.Rounds)
}

// warmLogDefaults fills in the defaults the read and scan workloads share
// (1 KiB records, batches of 100, a 256 MiB log, 1 MiB fetches, 5 rounds,
// a discarding logger) and refuses negative values.
func warmLogDefaults(opts *seglog.Options, recordSize, batch *int, logBytes *int64, fetchBytes, rounds *int) error {
	if *recordSize == 0 {
		*recordSize = 1024
	}
	if *batch == 0 {
		*batch = 100
	}
	if *logBytes == 0 {
		*logBytes = 256 << 20
	}
	if *fetchBytes == 0 {
		*fetchBytes = 1 << 20
	}
	if *rounds == 0 {
		*rounds = 5
	}
	if *recordSize < 0 || *batch < 0 || *logBytes < 0 || *fetchBytes < 0 || *rounds < 0 {
		return invalid("negative size, batch, log bytes, fetch bytes or rounds")
	}
	return setLogger(opts)
}

// fetch is one Read's result, kept so the baseline sends the same ranges.
type fetch struct {
	file        string
	pos, n      int64
	first, last int64
}

// RunRead runs the read workload against sendfile(2) of the same file
// ranges with no log logic.
func RunRead(ctx context.Context, env Env, cfg ReadConfig) (*Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	w, err := openFilled(ctx, env, "read", cfg.Options, cfg.RecordSize, cfg.Batch, cfg.LogBytes)
	if err != nil {
		return nil, err
	}
	defer w.close()
	l, r := w.l, w.r

	// The fetches a consumer reading from 0 makes; the baseline sends the
	// same ranges.
	var fetches []fetch
	var wire, records int64
	for off := l.StartOffset(); off < l.EndOffset(); {
		sl, err := l.Read(off, cfg.FetchBytes, seglog.ReadOptions{})
		if err != nil {
			return nil, err
		}
		fetches = append(fetches, fetch{sl.File(), sl.Position(), sl.Len(), sl.FirstOffset(), sl.LastOffset()})
		wire += sl.Len()
		records += sl.LastOffset() - sl.FirstOffset() + 1
		off = sl.LastOffset() + 1
		sl.Close()
	}
	files := map[string]vfs.File{}
	for _, f := range fetches {
		if files[f.file] == nil {
			fh, err := fs.Open(f.file)
			if err != nil {
				return nil, err
			}
			defer fh.Close()
			files[f.file] = fh
		}
	}

	peer, err := newPeer(cfg.Options.MaxBatchBytes)
	if err != nil {
		return nil, err
	}
	defer peer.close()

	res := &Result{
		Workload: "read", RecordBytes: cfg.RecordSize, Batch: cfg.Batch, Writers: 1,
		Sync: cfg.Options.Sync.String(), Compression: cfg.Options.Compression.String(),
		Baseline: fmt.Sprintf("sendfile(2) of the same %d file ranges to the same loopback peer, no log logic", len(fetches)),
	}
	r.begin(fmt.Sprintf("read %d MiB in %d fetches", wire>>20, len(fetches)), 2*int64(cfg.Rounds+1)*records, false)
	defer r.end()
	engLat, baseLat := newRecorder(), newRecorder()
	var sums [2]uint32
	pass := func(baseline bool, round int) (roundStat, error) {
		verify := round < 0
		if err := peer.expect(wire, verify); err != nil {
			return roundStat{}, err
		}
		lat := newRecorder()
		var st roundStat
		var err error
		st.wall, st.cpu, err = timed(func() error {
			for _, f := range fetches {
				t := time.Now()
				if baseline {
					_, err = sendfile.Copy(peer.conn, files[f.file], f.pos, f.n)
				} else {
					var sl *seglog.Slice
					if sl, err = l.Read(f.first, cfg.FetchBytes, seglog.ReadOptions{}); err == nil {
						if sl.Len() != f.n || sl.LastOffset() != f.last {
							err = verifyErr("Read(%d) gave %d bytes to offset %d, setup saw %d bytes to %d", f.first, sl.Len(), sl.LastOffset(), f.n, f.last)
						} else {
							_, err = sl.WriteTo(peer.conn)
						}
						sl.Close()
					}
				}
				lat.record(time.Since(t))
				if err != nil {
					return err
				}
				r.add(f.last-f.first+1, f.n)
			}
			// The pass ends when the peer has every byte.
			return peer.wait()
		})
		if err != nil {
			return st, err
		}
		st.records, st.bytes, st.stored = records, wire, wire
		if verify {
			i := 0
			if baseline {
				i = 1
			}
			sums[i] = peer.sum
			if !baseline {
				if peer.records != records {
					return st, verifyErr("peer parsed %d records, sent %d", peer.records, records)
				}
				res.Verified += peer.records
			}
		} else if baseline {
			baseLat.merge(lat)
		} else {
			engLat.merge(lat)
		}
		return st, nil
	}
	a, b, err := r.interleave(ctx, cfg.Rounds,
		func(round int) (roundStat, error) { return pass(false, round) },
		func(round int) (roundStat, error) {
			st, err := pass(true, round)
			if err == nil && round < 0 && sums[0] != sums[1] {
				err = verifyErr("engine and sendfile sent different bytes (CRC-32C %08x vs %08x)", sums[0], sums[1])
			}
			return st, err
		})
	if err != nil {
		return nil, err
	}
	summarize(res, a, b)
	res.Latency, res.BaselineLatency = engLat.summary(), baseLat.summary()
	res.Samples = r.takeSamples()
	return res, nil
}

// peer is the receiving end of a loopback TCP connection: it drains what
// the workload sends, and in a verifying pass parses every batch.
type peer struct {
	ln       net.Listener
	conn     *net.TCPConn // the sending side
	in       net.Conn     // the receiving side
	maxBatch int
	buf      []byte
	done     chan error

	// Results of the last verifying pass.
	records int64
	sum     uint32
}

func newPeer(maxBatch int) (*peer, error) {
	if maxBatch <= 0 {
		maxBatch = seglog.DefaultMaxBatchBytes
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &peer{ln: ln, maxBatch: maxBatch, buf: make([]byte, 256<<10)}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, err
	}
	p.conn = c.(*net.TCPConn)
	if p.in = <-accepted; p.in == nil {
		c.Close()
		ln.Close()
		return nil, errors.New("bench: loopback accept failed")
	}
	return p, nil
}

// expect starts draining n bytes in the background.
func (p *peer) expect(n int64, verify bool) error {
	p.done = make(chan error, 1)
	go func() {
		if verify {
			p.done <- p.parse(n)
		} else {
			p.done <- p.drain(n)
		}
	}()
	return nil
}

// wait blocks until the bytes announced by expect have arrived.
func (p *peer) wait() error { return <-p.done }

func (p *peer) drain(n int64) error {
	for n > 0 {
		k, err := p.in.Read(p.buf[:min(int64(len(p.buf)), n)])
		n -= int64(k)
		if err != nil {
			return err
		}
	}
	return nil
}

// parse reads n bytes as a stream of batches, checking each one's framing
// and CRC and that offsets follow on.
func (p *peer) parse(n int64) error {
	p.records, p.sum = 0, 0
	br := bufio.NewReaderSize(io.LimitReader(p.in, n), 256<<10)
	table := crc32.MakeTable(crc32.Castagnoli)
	var batch []byte
	next := int64(-1)
	var pos int64
	for pos < n {
		hdr := make([]byte, record.LogOverhead)
		if _, err := io.ReadFull(br, hdr); err != nil {
			return verifyErr("stream position %d: %v", pos, err)
		}
		length := int64(binary.BigEndian.Uint32(hdr[8:]))
		size := length + record.LogOverhead
		if size < record.HeaderSize || size > int64(p.maxBatch) {
			return verifyErr("stream position %d: batch length %d", pos, length)
		}
		batch = append(batch[:0], hdr...)
		batch = append(batch, make([]byte, length)...)
		if _, err := io.ReadFull(br, batch[record.LogOverhead:]); err != nil {
			return verifyErr("stream position %d: %v", pos, err)
		}
		b := record.Batch(batch)
		if err := b.Validate(); err != nil {
			return verifyErr("stream position %d: %v", pos, err)
		}
		if next >= 0 && b.BaseOffset() != next {
			return verifyErr("stream position %d: batch at offset %d, want %d", pos, b.BaseOffset(), next)
		}
		next = b.NextOffset()
		p.records += int64(b.NumRecords())
		p.sum = crc32.Update(p.sum, table, batch)
		pos += size
	}
	return nil
}

func (p *peer) close() {
	p.conn.Close()
	p.in.Close()
	p.ln.Close()
}

func setLogger(o *seglog.Options) error {
	if o.Logger == nil {
		o.Logger = discardLogger
	}
	return o.Validate()
}
