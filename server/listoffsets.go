package server

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog"
)

// Special ListOffsets timestamps.
const (
	tsLatest          = -1
	tsEarliest        = -2
	tsMaxTimestamp    = -3 // v7+
	tsEarliestLocal   = -4 // tiered storage: local equals all here
	tsLatestTiered    = -5
	tsEarliestPending = -6
)

// specMinVersion is the first ListOffsets version that carries each
// special timestamp (Kafka's ReplicaManager.timestampMinSupportedVersion;
// seglog still serves v0, which knows -1 and -2).
var specMinVersion = map[int64]int16{
	tsLatest:          0,
	tsEarliest:        0,
	tsMaxTimestamp:    7,
	tsEarliestLocal:   8,
	tsLatestTiered:    9,
	tsEarliestPending: 11,
}

// listOffsets answers the log start (-2, and -4, the earliest local
// offset: everything is local), the high watermark (-1, which is also the
// last stable offset: there are no transactions), the offset and
// timestamp of the record with the largest timestamp (-3), -1 for the
// latest tiered offset and the earliest offset pending upload (-5 and -6:
// nothing is tiered, as Kafka answers without tiered storage), and the
// first offset at or after a time. A special timestamp the request's
// version does not carry, or a negative one that is none of these, is
// UNSUPPORTED_VERSION for its partition, as Kafka answers.
func (s *Server) listOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch = -1
			var off, ts int64
			var err error
			// In a cluster only the leader answers, with its epoch, and
			// "latest" is the high watermark.
			hw, code := int64(-1), int16(0)
			if s.cluster != nil {
				var st PartitionState
				if st, code = s.leaderState(t.Topic, p.Partition, p.CurrentLeaderEpoch); code == 0 {
					hw, rp.LeaderEpoch = st.HighWatermark, st.LeaderEpoch
				}
			}
			if first, ok := specMinVersion[p.Timestamp]; p.Timestamp < 0 && (!ok || req.Version < first) {
				code = kerr.UnsupportedVersion.Code
			}
			if code != 0 {
				err = kerr.ErrorForCode(code)
				rp.ErrorCode = code
			} else if off, ts, err = s.lookupOffset(t.Topic, p.Partition, p.Timestamp, hw); err != nil {
				rp.ErrorCode = errCode(err)
			}
			if err != nil {
				off, ts = -1, -1
			}
			rp.Offset, rp.Timestamp = off, ts
			if req.Version == 0 {
				rp.OldStyleOffsets = []int64{}
				if err == nil && off >= 0 {
					rp.OldStyleOffsets = []int64{off}
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// lookupOffset answers one partition of a ListOffsets. hw is the
// cluster's high watermark, -1 on a single node (the log end): in a
// cluster "latest" is the high watermark, and a record at or above it is
// not yet a consumer's to find.
func (s *Server) lookupOffset(topic string, partition int32, ts, hw int64) (offset, timestamp int64, err error) {
	l, err := s.partitionLog(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	if hw < 0 {
		hw = l.EndOffset()
	}
	hw = min(max(hw, l.StartOffset()), l.EndOffset())
	offset, timestamp, err = s.lookupLogOffset(l, ts, hw)
	if s.cluster != nil && err == nil && offset >= hw && (ts >= 0 || ts == tsMaxTimestamp) {
		// Found only above the high watermark: not found, for now.
		return -1, -1, nil
	}
	return offset, timestamp, err
}

func (s *Server) lookupLogOffset(l seglog.View, ts, hw int64) (offset, timestamp int64, err error) {
	switch ts {
	case tsEarliest, tsEarliestLocal:
		return l.StartOffset(), -1, nil
	case tsLatest:
		return hw, -1, nil
	case tsLatestTiered, tsEarliestPending:
		// Kafka without tiered storage: nothing is tiered, offset -1.
		return -1, -1, nil
	case tsMaxTimestamp:
		return maxTimestampOffset(l)
	}
	off, err := l.OffsetForTime(ts)
	if errors.Is(err, seglog.ErrTimestampNotFound) {
		return -1, -1, nil
	}
	if err != nil {
		return 0, 0, err
	}
	for r, err := range l.Records(off) {
		if err != nil {
			return 0, 0, err
		}
		return r.Offset, r.Timestamp, nil
	}
	return off, ts, nil
}

// maxTimestampOffset finds the first record carrying the log's largest
// timestamp: the segment whose largest timestamp is the log's is scanned.
// An empty log answers -1, -1, as Kafka does.
func maxTimestampOffset(l seglog.View) (int64, int64, error) {
	segs := l.Segments()
	best := -1
	for i, sg := range segs {
		if sg.NextOffset > sg.BaseOffset && (best < 0 || sg.LargestTimestamp > segs[best].LargestTimestamp) {
			best = i
		}
	}
	if best < 0 || segs[best].LargestTimestamp < 0 {
		return -1, -1, nil
	}
	want := segs[best].LargestTimestamp
	from := max(segs[best].BaseOffset, l.StartOffset())
	for r, err := range l.Records(from) {
		if err != nil {
			return 0, 0, err
		}
		if r.Offset >= segs[best].NextOffset {
			break
		}
		if r.Timestamp == want {
			return r.Offset, r.Timestamp, nil
		}
	}
	return -1, -1, nil
}
