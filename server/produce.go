package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// produce stores each partition's batch as it arrived. acks 1 and -1 are
// answered after the append returns, which under the topic's durability
// (flush.messages=1: SyncAlways) is after the batch is on disk: on one node
// "all in-sync replicas" is this one, so -1 means exactly what the topic's
// durability says (and a min.insync.replicas above 1 refuses it:
// checkMinInsync). acks 0 is handled the same and the caller sends no
// response.
func (s *Server) produce(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	var whole int16
	switch {
	case req.Version < 3:
		// Advertised so librdkafka compresses (it reads the Produce range's
		// minimum), refused when used, as Kafka does (KAFKA-18659).
		whole = kerr.UnsupportedVersion.Code
	case req.TransactionID != nil:
		whole = kerr.TransactionalIDAuthorizationFailed.Code
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		whole = kerr.InvalidRequiredAcks.Code
	}
	stored := false
	var ctx context.Context
	if s.cluster != nil {
		// One bound for the whole request, as Kafka's timeout is the
		// request's.
		var cancel context.CancelFunc
		ctx, cancel = s.produceContext(req.TimeoutMillis)
		defer cancel()
	}
	var replicating sync.WaitGroup
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		// Sized once: the replicating goroutines write their answers in
		// place.
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(t.Partitions))
		for i := range t.Partitions {
			p := &t.Partitions[i]
			rt.Partitions = append(rt.Partitions, kmsg.NewProduceResponseTopicPartition())
			rp := &rt.Partitions[len(rt.Partitions)-1]
			rp.Partition = p.Partition
			switch {
			case whole != 0:
				rp.ErrorCode = whole
			case s.cluster != nil:
				// The partitions are replicated at once, each waiting for
				// its own replicas, as Kafka's delayed produce waits for
				// all of them together: one after another, a request's
				// wait would be the sum of its partitions' round trips.
				replicating.Add(1)
				go func() {
					defer replicating.Done()
					s.replicatePartition(ctx, req.Version, req.Acks, t.Topic, p, rp)
				}()
			default:
				s.producePartition(req.Version, req.Acks, t.Topic, p, rp)
				stored = stored || rp.ErrorCode == 0
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	replicating.Wait()
	if req.Acks != 0 {
		// An acks=0 request gets no answer to carry hints.
		s.leaderHints(ctx, resp)
	}
	s.metrics.produced(req, resp)
	if stored {
		s.notify.wake()
	}
	return resp
}

func (s *Server) producePartition(version, acks int16, topic string, p *kmsg.ProduceRequestTopicPartition, rp *kmsg.ProduceResponseTopicPartition) {
	if topic == store.OffsetsTopic {
		// The group coordinator's own log: clients may not write it.
		rp.ErrorCode = kerr.InvalidTopicException.Code
		return
	}
	w, err := s.partitionWriter(topic, p.Partition)
	if err != nil {
		rp.ErrorCode = s.openErrorCode(topic, p.Partition, err)
		return
	}
	l := w.View()
	if acks == -1 {
		if rp.ErrorCode = s.checkMinInsync(topic); rp.ErrorCode != 0 {
			return
		}
	}
	rp.ErrorCode = checkProduceBatch(version, p.Records)
	if rp.ErrorCode != 0 {
		return
	}
	b := record.Batch(p.Records)
	if cfg, err := s.st.TopicConfigOf(topic); err == nil {
		if rp.ErrorCode = keylessCode(cfg, b); rp.ErrorCode != 0 {
			return
		}
	}
	if b.ProducerID() < 0 {
		info, err := w.AppendBatch(b)
		s.answerAppend(l, info, err, rp)
		return
	}
	pp := s.pids.partition(topic, p.Partition, l)
	pp.lockLoaded()
	defer pp.mu.Unlock()
	v := pp.check(b)
	switch {
	case v.code != 0:
		rp.ErrorCode = v.code
		rp.LogStartOffset = l.StartOffset()
		return
	case v.duplicate:
		// The retry of a batch already stored: its original offset, no
		// error, nothing appended (Kafka's duplicate handling).
		rp.BaseOffset = v.dupOffset
		rp.LogStartOffset = l.StartOffset()
		return
	}
	pid, epoch, first, last := b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.LastSequence()
	info, err := w.AppendBatch(b)
	if err == nil {
		pp.record(pid, epoch, first, last, info.FirstOffset, info.LastOffset, b.MaxTimestamp())
		s.snapshotOnRoll(l, pp)
	}
	s.answerAppend(l, info, err, rp)
}

// keylessCode is Kafka's refusal of a batch holding a record without a
// key on a topic that compacts (LogValidator: "Compacted topic cannot
// accept message without key"): INVALID_RECORD for the whole batch, which
// is not stored. Accepted, the record would be acknowledged and then
// dropped by the next compaction round. A batch whose records do not
// decode is left to the log's own checks, which say what is wrong.
func keylessCode(cfg store.TopicConfig, b record.Batch) int16 {
	if cfg.CleanupPolicy == cleaner.Delete {
		return 0
	}
	var it record.Iterator
	if it.Reset(b) != nil {
		return 0
	}
	for it.Next() {
		if it.Record().Key == nil {
			return kerr.InvalidRecord.Code
		}
	}
	return 0
}

// checkMinInsync is Kafka's check before an acks=all append: a single
// node is its partitions' one in-sync replica, so a topic whose
// min.insync.replicas is above 1 takes no acks=all write here
// (NOT_ENOUGH_REPLICAS, which tells the client nothing was stored), as
// Kafka's broker answers for a topic of replication factor 1.
func (s *Server) checkMinInsync(topic string) int16 {
	cfg, err := s.st.TopicConfigOf(topic)
	if err != nil {
		return errCode(err)
	}
	if cfg.MinInsyncReplicas > 1 {
		return kerr.NotEnoughReplicas.Code
	}
	return 0
}

// snapshotOnRoll writes a producer snapshot when the log has rolled since
// the last look (pp.mu held). It is named by the log end, which is at or
// after the batch just recorded: idempotent appends are serialized by
// pp.mu, so the state holds every idempotent batch below that offset.
func (s *Server) snapshotOnRoll(l seglog.View, pp *partProducers) {
	n := l.NumSegments()
	rolled := n > pp.segments
	pp.segments = n
	if !rolled {
		return
	}
	if err := writeSnapshot(l, pp); err != nil {
		s.logger.Warn("server: writing a producer snapshot", "dir", l.Dir(), "err", err)
	}
}

// openErrorCode is errCode for a partition that could not be opened,
// logging the error when the client is told KAFKA_STORAGE_ERROR: the
// client learns only the code, and the operator must learn from the log
// what the disk said (a full disk leaves a new topic's directory without
// its first segment, and every produce to it fails so).
func (s *Server) openErrorCode(topic string, partition int32, err error) int16 {
	code := errCode(err)
	if code == kerr.KafkaStorageError.Code {
		s.errs.Error(fmt.Sprintf("%s/%d", topic, partition), "server: opening a partition failed", "topic", topic, "partition", partition, "err", err)
	}
	return code
}

func (s *Server) answerAppend(l seglog.View, info seglog.AppendInfo, err error, rp *kmsg.ProduceResponseTopicPartition) {
	if err != nil {
		rp.ErrorCode = appendErrorCode(err)
		if rp.ErrorCode == kerr.KafkaStorageError.Code {
			s.errs.Error(l.Dir(), "server: append failed", "dir", l.Dir(), "err", err)
		}
		return
	}
	rp.BaseOffset = info.FirstOffset
	rp.LogStartOffset = l.StartOffset()
}

// checkProduceBatch applies the checks Kafka makes of a Produce's record
// set before the log's own (CRC, framing, producer rules): exactly one
// magic-2 batch, zstd only from v7, no transactions.
func checkProduceBatch(version int16, recs []byte) int16 {
	if len(recs) == 0 {
		return kerr.InvalidRecord.Code
	}
	if len(recs) < record.HeaderSize {
		return kerr.CorruptMessage.Code
	}
	b := record.Batch(recs)
	switch {
	case b.Magic() != 2:
		return kerr.UnsupportedForMessageFormat.Code
	case b.BatchLength() < 0 || int64(b.BatchLength())+record.LogOverhead > int64(len(recs)):
		return kerr.CorruptMessage.Code
	case b.Size() < len(recs):
		// "…only allowed to contain exactly one record batch per partition"
		return kerr.InvalidRecord.Code
	case b.Codec() == record.Zstd && version < 7:
		return kerr.UnsupportedCompressionType.Code
	case b.IsTransactional():
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	return 0
}

// appendErrorCode maps AppendBatch's error to Kafka's code. A batch the
// log refused for its contents (seglog.ErrCorruptBatch) is the client's
// fault: INVALID_RECORD for a producer rule, as Kafka's
// InvalidRecordException, else CORRUPT_MESSAGE; anything else is the
// log's, as for every other request (logErrorCode), so damage on disk is
// never blamed on the client.
func appendErrorCode(err error) int16 {
	switch {
	case errors.Is(err, record.ErrInvalidProducerBatch):
		return kerr.InvalidRecord.Code
	case errors.Is(err, record.ErrTooLarge), errors.Is(err, record.ErrDecompressLimit):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, seglog.ErrCorruptBatch):
		return kerr.CorruptMessage.Code
	}
	return logErrorCode(err)
}

// initProducerID hands an idempotent producer its id and epoch. A producer
// that presents its id and epoch (v3+, after an error it could not recover
// from: KIP-360) keeps its id with the epoch bumped. Transactions are not
// supported: a transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
// which clients treat as fatal rather than retrying.
func (s *Server) initProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < 1<<15-1 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return resp
	}
	if s.cluster == nil {
		resp.ProducerID, resp.ProducerEpoch = newProducerID(), 0
		return resp
	}
	// In a cluster, ids come from the controller's blocks, unique across
	// nodes. A failure is COORDINATOR_NOT_AVAILABLE, which every client
	// retries for this request.
	ctx, cancel := adminContext(ctx, 0)
	defer cancel()
	id, err := s.cluster.AllocateProducerID(ctx)
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		s.logger.Warn("server: allocating a producer id", "err", err)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}

// notifier wakes parked fetches when anything is appended.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed at the next wake. Take it before looking
// at the logs, so an append in between is not missed.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *notifier) wake() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}
