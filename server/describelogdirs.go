package server

import (
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// describeLogDirs answers for the store's one log.dir: each asked partition
// (every partition, __consumer_offsets too, when the request names no
// topics) with its size in bytes, offset lag 0 (there is no future replica
// to catch up) and IsFuture false. A topic or partition the store does not
// have is left out, as Kafka leaves it out; so is a partition whose log
// cannot be read (its size is not known). v4's TotalBytes and UsableBytes
// come from statfs of the log.dir, -1 when the file system cannot tell.
func (s *Server) describeLogDirs(req *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = s.st.Dir()
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	if total, usable, err := s.st.DiskSpace(); err == nil {
		dir.TotalBytes, dir.UsableBytes = total, usable
	}
	want := make(map[string][]int32) // nil: every partition
	if req.Topics == nil {
		for _, name := range append(s.st.Topics(), store.OffsetsTopic) {
			want[name] = nil
		}
	} else {
		for _, t := range req.Topics {
			want[t.Topic] = append(want[t.Topic], t.Partitions...)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		info, err := s.st.DescribeTopic(name)
		if err != nil {
			continue
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = name
		for _, p := range info.Partitions {
			if p.Err != nil || (req.Topics != nil && !slices.Contains(want[name], p.Partition)) {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = p.Partition, p.Size
			dt.Partitions = append(dt.Partitions, dp)
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
	return resp
}
