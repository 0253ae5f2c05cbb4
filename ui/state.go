package ui

import (
	"errors"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// State is what GET /api/state returns: the whole store as the page draws
// it. Times are milliseconds since the epoch; -1 means none.
type State struct {
	Dir string `json:"dir"`
	// Now is the time the retention boundary was judged at.
	Now        int64 `json:"now"`
	Playground bool  `json:"playground"`
	// Cluster says whose view of the replication the partitions carry
	// (Options.Cluster), empty for a single node's store.
	Cluster string  `json:"cluster,omitempty"`
	Totals  Totals  `json:"totals"`
	Topics  []Topic `json:"topics"`
	Groups  []Group `json:"groups"`
}

// Totals sums the store.
type Totals struct {
	// Bytes is the size of every live segment of the user topics.
	Bytes      int64 `json:"bytes"`
	Segments   int   `json:"segments"`
	Partitions int   `json:"partitions"`
	// MaxLag is the largest lag of any group on any partition, and
	// MaxLagGroup, MaxLagTopic and MaxLagPartition say where (empty when
	// no group committed).
	MaxLag          int64  `json:"maxLag"`
	MaxLagGroup     string `json:"maxLagGroup"`
	MaxLagTopic     string `json:"maxLagTopic"`
	MaxLagPartition int32  `json:"maxLagPartition"`
}

// Topic is one topic and its partitions.
type Topic struct {
	Name string `json:"name"`
	// Config holds the topic configs that shape what the page shows,
	// as Kafka names them.
	Config     map[string]string `json:"config"`
	Bytes      int64             `json:"bytes"`
	Partitions []Partition       `json:"partitions"`
}

// Partition is one partition: its log's bounds, segments, retention
// boundary and the groups' positions on it.
type Partition struct {
	Partition int32 `json:"partition"`
	// Start and End are the log start offset and the log end offset (the
	// next offset to be written).
	Start     int64     `json:"start"`
	End       int64     `json:"end"`
	Bytes     int64     `json:"bytes"`
	Segments  []Segment `json:"segments"`
	Retention Retention `json:"retention"`
	Groups    []Marker  `json:"groups"`
	// Replication is the partition's leader, replicas and ISR in a
	// cluster (Options.Cluster); absent for a single node's store.
	Replication *Replication `json:"replication,omitempty"`
}

// Segment is one segment of a partition.
type Segment struct {
	Base int64 `json:"base"`
	// Next is the offset after its last record (Base when empty).
	Next int64 `json:"next"`
	Size int64 `json:"size"`
	// FirstTimestamp is the first batch's base timestamp and
	// LargestTimestamp the largest record timestamp: the segment's time
	// range.
	FirstTimestamp   int64 `json:"firstTimestamp"`
	LargestTimestamp int64 `json:"largestTimestamp"`
	Active           bool  `json:"active"`
	// Delete is why the next cleaner pass would delete the segment
	// (cleaner.Reason: "retention.ms", "retention.bytes",
	// "log-start-offset"), empty if it stays.
	Delete string `json:"delete"`
}

// Retention is what the next cleaner pass would do to the partition, as
// cleaner.Decide plans it at State.Now.
type Retention struct {
	Policy         string `json:"policy"`
	RetentionMs    int64  `json:"retentionMs"`
	RetentionBytes int64  `json:"retentionBytes"`
	// NewStart is the start offset after the pass; Segments, Bytes and
	// Records count what it would delete.
	NewStart int64 `json:"newStart"`
	Segments int   `json:"segments"`
	Bytes    int64 `json:"bytes"`
	Records  int64 `json:"records"`
	// Pinned is the base offset of a segment kept only because its
	// largest timestamp is in the future, -1 if none.
	Pinned int64 `json:"pinned"`
}

// Marker is one group's position on a partition.
type Marker struct {
	Group     string `json:"group"`
	Committed int64  `json:"committed"`
	Lag       int64  `json:"lag"`
	// Skipped counts records retention removed before the group read
	// them: the group's next read resets to the start and skips them
	// (store.Position with auto.offset.reset=earliest).
	Skipped int64 `json:"skipped"`
}

// Group is one consumer group's total.
type Group struct {
	Name string `json:"name"`
	Lag  int64  `json:"lag"`
	// Partitions counts the partitions it committed on.
	Partitions int `json:"partitions"`
}

func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	st, err := s.state("")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, st)
}

func (s *Server) handleTopics(w http.ResponseWriter, r *http.Request) {
	release, err := s.view()
	defer release()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, s.st.Topics())
}

func (s *Server) handleTopic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("topic")
	if err := store.ValidateTopic(name); err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := s.state(name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(st.Topics) == 0 {
		s.fail(w, r, store.ErrUnknownTopic)
		return
	}
	writeJSON(w, st.Topics[0])
}

func (s *Server) handleGroups(w http.ResponseWriter, r *http.Request) {
	st, err := s.state("")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, st.Groups)
}

// state builds the snapshot of every topic, or of only one when only is
// set (then an unknown topic gives no topic).
func (s *Server) state(only string) (State, error) {
	release, err := s.view()
	defer release()
	if err != nil {
		return State{}, err
	}
	now := s.opts.Clock.Now()
	st := State{Dir: s.st.Dir(), Now: now.UnixMilli(), Playground: s.play != nil, Topics: []Topic{}, Groups: []Group{}}
	markers, groups := s.markers()
	st.Groups = groups
	var cl Cluster
	if s.opts.Cluster != nil {
		// A view the caller cannot give (a damaged record) is said on
		// the page, which still draws the store: the logs are readable
		// without it.
		if cl, err = s.opts.Cluster(); err != nil {
			cl = Cluster{About: "replication unknown: " + err.Error()}
		}
		st.Cluster = cl.About
	}
	topics := s.st.Topics()
	if only != "" {
		topics = slices.DeleteFunc(topics, func(t string) bool { return t != only })
	}
	for _, name := range topics {
		info, err := s.st.DescribeTopic(name)
		if err != nil {
			// Deleted between Topics and DescribeTopic.
			continue
		}
		t := Topic{Name: name, Config: map[string]string{}, Partitions: []Partition{}}
		for _, k := range []string{"cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes"} {
			t.Config[k] = info.Config.Get(k)
		}
		policy := policyOf(info.Config)
		for _, pi := range info.Partitions {
			l, err := s.st.Log(name, pi.Partition)
			if err != nil {
				continue
			}
			p := s.partition(l, pi.Partition, policy, now)
			if reps := cl.Topics[name]; int(pi.Partition) < len(reps) {
				p.Replication = &reps[pi.Partition]
			}
			for _, m := range markers[topicPartition{name, pi.Partition}] {
				if pos, err := s.st.Position(m.Group, name, pi.Partition, store.Earliest); err == nil && pos.Offset > m.Committed {
					m.Skipped = pos.Skipped
				}
				p.Groups = append(p.Groups, m)
				if m.Lag > st.Totals.MaxLag {
					st.Totals.MaxLag, st.Totals.MaxLagGroup = m.Lag, m.Group
					st.Totals.MaxLagTopic, st.Totals.MaxLagPartition = name, pi.Partition
				}
			}
			t.Bytes += p.Bytes
			st.Totals.Segments += len(p.Segments)
			t.Partitions = append(t.Partitions, p)
		}
		st.Totals.Bytes += t.Bytes
		st.Totals.Partitions += len(t.Partitions)
		st.Topics = append(st.Topics, t)
	}
	return st, nil
}

type topicPartition struct {
	topic     string
	partition int32
}

// markers gathers every group's committed offsets by partition, and each
// group's total.
func (s *Server) markers() (map[topicPartition][]Marker, []Group) {
	out := make(map[topicPartition][]Marker)
	groups := []Group{}
	for _, g := range s.st.Groups() {
		rows, total, err := s.st.DescribeGroup(g)
		if err != nil {
			continue
		}
		n := 0
		for _, row := range rows {
			if row.Topic == store.OffsetsTopic {
				continue
			}
			n++
			tp := topicPartition{row.Topic, row.Partition}
			out[tp] = append(out[tp], Marker{Group: g, Committed: row.Committed, Lag: row.Lag})
		}
		if n > 0 {
			groups = append(groups, Group{Name: g, Lag: total, Partitions: n})
		}
	}
	return out, groups
}

// partition describes one log with the retention plan cleaner.Decide
// makes for it now: the same function the store's cleaner applies.
func (s *Server) partition(l seglog.View, n int32, policy cleaner.Policy, now time.Time) Partition {
	start := l.StartOffset()
	segs := live(cleaner.SegmentsOf(l), start)
	p := Partition{Partition: n, Start: start, End: l.EndOffset(), Segments: make([]Segment, 0, len(segs)), Groups: []Marker{}}
	plan := cleaner.Decide(cleaner.Input{Segments: segs, Policy: policy, Now: now, StartOffset: start, UpperBound: s.replicaLimit(l.Dir(), start)})
	p.Retention = Retention{
		Policy:         policy.CleanupPolicy.String(),
		RetentionMs:    policy.Retention.Milliseconds(),
		RetentionBytes: policy.RetentionBytes,
		NewStart:       plan.NewStart,
		Segments:       len(plan.Delete),
		Bytes:          plan.Bytes,
		Records:        max(plan.NewStart-start, 0),
		Pinned:         -1,
	}
	if policy.Retention < 0 {
		p.Retention.RetentionMs = -1
	}
	if plan.Pinned != nil {
		p.Retention.Pinned = plan.Pinned.BaseOffset
	}
	for i, sg := range segs {
		seg := Segment{
			Base: sg.BaseOffset, Next: sg.NextOffset, Size: sg.Size,
			FirstTimestamp: s.firstTS.get(s.opts.FS, l.Dir(), sg), LargestTimestamp: sg.LargestTimestamp,
			Active: sg.Active,
		}
		if i < len(plan.Reasons) {
			seg.Delete = plan.Reasons[i].String()
		}
		p.Bytes += sg.Size
		p.Segments = append(p.Segments, seg)
	}
	return p
}

// replicaLimit is the upper bound a cleaner pass has in a cluster node's
// replicated partition (its directory holds raft's files), read from
// them: the last anchored batch (layout.RaftIndexFile's last line), which
// the partition manager's cleaning floor never passes, so that the
// newest anchored segment stays (internal/cluster/partition, moveFloor);
// the floor may be lower still (the high watermark). A replicated
// partition whose checkpoint cannot be read keeps everything (start),
// as the store's cleaner does until the replica sets a floor. -1 for a
// partition raft does not hold: no bound.
func (s *Server) replicaLimit(dir string, start int64) int64 {
	name := filepath.Join(dir, layout.RaftIndexFile)
	data, err := vfs.ReadFileLimit(s.opts.FS, name, 4<<20)
	if err != nil {
		if _, serr := s.opts.FS.Stat(filepath.Join(dir, layout.RaftStateFile)); serr == nil || !errors.Is(err, fs.ErrNotExist) {
			return start
		}
		return -1
	}
	lines, err := layout.ParseRaftIndex(name, data)
	if err != nil || len(lines) == 0 {
		return start
	}
	return max(lines[len(lines)-1].Offset, start)
}

// live drops the segments a read-only view may still list after its
// writer deleted them (seglog's read-only Refresh raises the start but
// keeps the old entries): sealed segments wholly below the start, and
// sealed empty ones, which a writer never keeps (it rolls only a non-empty
// segment). A writable Log has neither, so for it live changes nothing.
func live(segs []cleaner.Segment, start int64) []cleaner.Segment {
	return slices.DeleteFunc(segs, func(s cleaner.Segment) bool {
		return !s.Active && (s.NextOffset <= start || s.Size == 0)
	})
}

// policyOf is the cleaner policy the store gives a topic's partitions
// (store's TopicConfig.policy, which is unexported): the topic configs
// mapped onto cleaner.Policy field by field.
func policyOf(c store.TopicConfig) cleaner.Policy {
	p := cleaner.DefaultPolicy()
	p.CleanupPolicy = c.CleanupPolicy
	p.Retention = time.Duration(c.RetentionMs) * time.Millisecond
	if c.RetentionMs < 0 {
		p.Retention = cleaner.Forever
	}
	p.RetentionBytes = c.RetentionBytes
	return p
}
