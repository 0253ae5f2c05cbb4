package server

import (
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog"
)

// fetchPart is one partition of a fetch answer: its fields and the slice
// of the segment file its records are sent from (nil for none).
type fetchPart struct {
	partition int32
	code      int16
	hwm       int64
	logStart  int64
	slice     *seglog.Slice
}

type fetchTopic struct {
	name  string
	parts []fetchPart
}

// fetchAnswer is a read for a Fetch: every partition's slice, pinned
// (retention may remove a segment meanwhile; its file stays readable
// until the slice is closed).
type fetchAnswer struct {
	topics []fetchTopic
	bytes  int64
	errors bool
}

func (a *fetchAnswer) close() {
	for _, t := range a.topics {
		for _, p := range t.parts {
			if p.slice != nil {
				p.slice.Close()
			}
		}
	}
}

// fetch answers a Fetch: it reads, and while fewer than MinBytes are
// available, no partition has an error and MaxWait has not passed, it parks
// until something is appended (long polling). Server shutdown or the
// connection's end answer at once with what there is.
func (c *conn) fetch(corr int32, req *kmsg.FetchRequest) error {
	// The topics the ACLs refused: answered with the rest, and at once
	// when nothing else was asked for.
	denied := c.fetchDenied
	c.fetchDenied = nil
	if req.Version >= 7 && req.SessionID != 0 {
		// We never hand out fetch sessions, so an incremental fetch names
		// one we do not know; the client starts over with a full fetch.
		return c.writeFetch(corr, req.Version, kerr.FetchSessionIDNotFound.Code, nil)
	}
	c.fetchMaxBytes(req)
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	var timer *time.Timer
	for {
		woken := c.s.notify.wait()
		a := c.s.readFetch(req)
		if a.errors && c.s.awaitFetchLeaders(c.ctx, a) {
			a.close()
			a = c.s.readFetch(req)
		}
		if a.errors || a.bytes >= int64(req.MinBytes) || !time.Now().Before(deadline) || c.ctx.Err() != nil ||
			(len(req.Topics) == 0 && len(denied) > 0) {
			defer a.close()
			f, ms, throttled := c.fetchQuota(encodeFetch(corr, req.Version, 0, append(a.topics, denied...)), corr, req.Version, 0)
			if !throttled {
				c.s.metrics.fetched(a.topics)
			}
			return c.sendFetch(f, req.Version, ms)
		}
		a.close()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
			defer timer.Stop()
			c.s.metrics.parkedFetches.Add(1)
			defer c.s.metrics.parkedFetches.Add(-1)
		}
		parked := c.s.quota.clk.Now()
		select {
		case <-woken:
		case <-timer.C:
			// Read once more below and answer whatever it finds.
			deadline = time.Now()
		case <-c.ctx.Done():
		}
		// Waiting is not handling: request_percentage leaves it out.
		c.quota.parked += c.s.quota.clk.Now().Sub(parked)
	}
}

// readFetch reads every requested partition as Kafka's readFromLog does:
// a running response limit of MaxBytes, each partition limited to the
// smaller of its PartitionMaxBytes and what is left; only the first
// partition that has data may exceed its limit, to send its first batch
// whole (KIP-74), so a consumer always makes progress.
func (s *Server) readFetch(req *kmsg.FetchRequest) *fetchAnswer {
	a := &fetchAnswer{}
	left := int64(req.MaxBytes)
	if left <= 0 {
		left = math.MaxInt32
	}
	first := true
	for _, t := range req.Topics {
		ft := fetchTopic{name: t.Topic}
		for _, p := range t.Partitions {
			fp := fetchPart{partition: p.Partition, hwm: -1, logStart: -1}
			s.readPartition(t.Topic, &p, &fp, left, first)
			if fp.code != 0 {
				a.errors = true
			}
			if fp.slice != nil {
				first = false
				left -= fp.slice.Len()
				a.bytes += fp.slice.Len()
			}
			ft.parts = append(ft.parts, fp)
		}
		a.topics = append(a.topics, ft)
	}
	return a
}

func (s *Server) readPartition(topic string, p *kmsg.FetchRequestTopicPartition, fp *fetchPart, left int64, first bool) {
	var st PartitionState
	if s.cluster != nil {
		// Leadership first: a node that does not replicate the partition
		// at all is not its leader either (NOT_LEADER_OR_FOLLOWER).
		var code int16
		if st, code = s.leaderState(topic, p.Partition, p.CurrentLeaderEpoch); code != 0 {
			fp.code = code
			return
		}
	}
	l, err := s.partitionLog(topic, p.Partition)
	if err != nil {
		fp.code = s.openErrorCode(topic, p.Partition, err)
		return
	}
	// The high watermark is the log end on one node, which is every
	// replica; in a cluster it is the Cluster's commit point. With no
	// transactions, the last stable offset equals it (a read_committed
	// consumer such as librdkafka's default drops what lies above the
	// LSO).
	end, start := l.EndOffset(), l.StartOffset()
	hwm := end
	if s.cluster != nil {
		hwm = min(max(st.HighWatermark, start), end)
	}
	fp.hwm, fp.logStart = hwm, start
	// An offset between the high watermark and the log end is not out of
	// range: it is written and not yet committed, and the fetch parks
	// until the high watermark passes it.
	if p.FetchOffset < start || p.FetchOffset > end {
		fp.code = kerr.OffsetOutOfRange.Code
		return
	}
	limit := min(int64(max(p.PartitionMaxBytes, 0)), left)
	if p.FetchOffset >= hwm || (limit <= 0 && !first) {
		return
	}
	sl, err := l.Read(p.FetchOffset, int(max(limit, 0)), seglog.ReadOptions{UpperBound: hwm, Bounded: true})
	if err != nil {
		switch {
		case errors.Is(err, seglog.ErrOffsetOutOfRange):
			fp.code = kerr.OffsetOutOfRange.Code
		case errors.Is(err, seglog.ErrMissingData):
			// Offsets the log should hold are not in its files: the
			// partition's storage is at fault, as Kafka says of a log
			// directory it cannot read. The partition is never answered
			// with the batches after the gap; franz-go takes this error
			// as retriable and stays at the offset (reporting it with
			// KeepRetryableFetchErrors).
			fp.code = kerr.KafkaStorageError.Code
		default:
			fp.code = errCode(err)
		}
		return
	}
	if sl.Len() == 0 || (!first && sl.Len() > limit) {
		// Read sends a first batch whole whatever the limit; only the
		// response's first partition with data may.
		sl.Close()
		return
	}
	fp.slice = sl
}
