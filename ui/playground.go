package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// The playground's scenario: hotel bookings keyed by booking id over 12
// partitions, read by two groups, one of which falls behind.
const (
	PlaygroundTopic      = "bookings"
	PlaygroundPartitions = 12
	// PlaygroundRetention is the topic's retention.ms, short so that
	// moving the clock an hour or two makes retention visible.
	PlaygroundRetention = time.Hour
	// PlaygroundSegmentBytes is its segment.bytes: a few records per
	// segment, so that partitions have several segments to trim.
	PlaygroundSegmentBytes = 600
	// GroupBilling reads everything as it arrives; GroupAnalytics read
	// the first events and stopped, so retention overtakes it.
	GroupBilling   = "billing"
	GroupAnalytics = "analytics"
)

// playgroundStart is the simulated clock's first reading, fixed so that
// two runs draw the same picture.
var playgroundStart = time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)

// Playground is a store in a directory of its own with the playground's
// scenario on a simulated clock, and a Server whose page can act on it.
// Every action calls the real store (Produce, Position, Commit,
// ResetOffsets, CleanOnce): nothing is simulated but time.
type Playground struct {
	st    *store.Store
	clock *SimClock
	srv   *Server
	// mu serializes the actions, so one consume's Position and Commit
	// see no other action in between.
	mu sync.Mutex
}

// NewPlayground creates the scenario's store in dir (which should be
// empty, and which the caller removes after Close): the bookings topic,
// 120 booking events spread over 90 simulated minutes, the billing group
// caught up and the analytics group behind.
func NewPlayground(dir string, logger *slog.Logger) (*Playground, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	clock := NewSimClock(playgroundStart)
	st, err := store.Open(dir, store.Options{Clock: clock, OffsetsPartitions: 1, Logger: logger})
	if err != nil {
		return nil, err
	}
	p := &Playground{st: st, clock: clock}
	if err := p.seed(); err != nil {
		st.Close()
		return nil, err
	}
	p.srv = New(st, Options{Clock: clock, Logger: logger})
	p.srv.play = p
	p.srv.mux.HandleFunc("POST /api/play/produce", p.handleProduce)
	p.srv.mux.HandleFunc("POST /api/play/consume", p.handleConsume)
	p.srv.mux.HandleFunc("POST /api/play/rewind", p.handleRewind)
	p.srv.mux.HandleFunc("POST /api/play/advance", p.handleAdvance)
	return p, nil
}

func (p *Playground) seed() error {
	cfg := store.DefaultTopicConfig()
	cfg.RetentionMs = PlaygroundRetention.Milliseconds()
	cfg.SegmentBytes = PlaygroundSegmentBytes
	cfg.MaxMessageBytes = PlaygroundSegmentBytes - 100
	if err := p.st.CreateTopic(PlaygroundTopic, PlaygroundPartitions, cfg); err != nil {
		return err
	}
	events := []string{"created", "paid", "checked-in"}
	const bookings = 40
	for i := range 3 * bookings {
		p.clock.Advance(45 * time.Second)
		id := fmt.Sprintf("booking-%d", 1001+i%bookings)
		value := fmt.Sprintf(`{"booking":%q,"event":%q,"room":%d}`, id, events[i/bookings], 100+i%bookings*7%300)
		if _, err := p.produce([]byte(id), []byte(value)); err != nil {
			return err
		}
		if i == bookings/2 {
			if _, err := p.consume(GroupAnalytics, 1<<30); err != nil {
				return err
			}
		}
	}
	_, err := p.consume(GroupBilling, 1<<30)
	return err
}

// Server returns the playground's Server, with the actions under
// /api/play/.
func (p *Playground) Server() *Server { return p.srv }

// Store returns the playground's store.
func (p *Playground) Store() *store.Store { return p.st }

// Clock returns the simulated clock.
func (p *Playground) Clock() *SimClock { return p.clock }

// Close closes the store.
func (p *Playground) Close() error { return p.st.Close() }

// Produced is where a playground record went and why.
type Produced struct {
	Key    string `json:"key"`
	Keyed  bool   `json:"keyed"`
	Offset int64  `json:"offset"`
	// Partition is where the store put the record; for a keyed record,
	// toPositive(Murmur2) % Partitions (store.PartitionForKey).
	Partition  int32 `json:"partition"`
	Murmur2    int32 `json:"murmur2"`
	Positive   int32 `json:"positive"`
	Partitions int   `json:"partitions"`
	Timestamp  int64 `json:"timestamp"`
}

// Produce appends one record to the bookings topic through
// store.Produce; an empty key produces a keyless record.
func (p *Playground) Produce(key, value string) (Produced, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var k []byte
	if key != "" {
		k = []byte(key)
	}
	return p.produce(k, []byte(value))
}

func (p *Playground) produce(key, value []byte) (Produced, error) {
	rec := record.Record{Key: key, Value: value, Headers: []record.Header{{Key: "source", Value: []byte("playground")}}}
	res, err := p.st.Produce(PlaygroundTopic, rec)
	if err != nil {
		return Produced{}, err
	}
	out := Produced{Key: string(key), Keyed: key != nil, Offset: res[0].Offset, Partition: res[0].Partition,
		Partitions: PlaygroundPartitions, Timestamp: p.clock.Now().UnixMilli()}
	if key != nil {
		out.Murmur2 = store.Murmur2(key)
		out.Positive = out.Murmur2 & 0x7fffffff
	}
	return out, nil
}

// Consumed is the result of one consume by a group.
type Consumed struct {
	Group string `json:"group"`
	Count int    `json:"count"`
	// Records holds the first records read (at most 50).
	Records []Record `json:"records"`
	// Skipped is the total of Resets' Skipped.
	Skipped int64         `json:"skipped"`
	Resets  []ResetNotice `json:"resets"`
}

// ResetNotice reports a partition where the group had no valid commit
// and auto.offset.reset=earliest chose where to read.
type ResetNotice struct {
	Partition int32 `json:"partition"`
	// Committed is the commit that was out of range, -1 if none.
	Committed int64 `json:"committed"`
	Offset    int64 `json:"offset"`
	// Skipped counts records retention removed before the group read
	// them.
	Skipped int64 `json:"skipped"`
}

const maxConsumedShown = 50

// Consume reads up to perPartition records of every partition from the
// group's position (store.Position with auto.offset.reset=earliest) and
// commits after them, as a consumer that polls and commits would.
func (p *Playground) Consume(group string, perPartition int) (Consumed, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.consume(group, perPartition)
}

func (p *Playground) consume(group string, perPartition int) (Consumed, error) {
	out := Consumed{Group: group, Records: []Record{}, Resets: []ResetNotice{}}
	if perPartition <= 0 {
		return out, fmt.Errorf("%w: records per partition must be positive", errBadRequest)
	}
	commits := make(map[int32]int64)
	for part := range int32(PlaygroundPartitions) {
		pos, err := p.st.Position(group, PlaygroundTopic, part, store.Earliest)
		if err != nil {
			return out, err
		}
		if pos.Reset {
			n := ResetNotice{Partition: part, Committed: -1, Offset: pos.Offset, Skipped: pos.Skipped}
			if c, ok := p.st.CommittedOffset(group, PlaygroundTopic, part); ok {
				n.Committed = c.Offset
			}
			out.Skipped += pos.Skipped
			out.Resets = append(out.Resets, n)
		}
		l, err := p.st.Log(PlaygroundTopic, part)
		if err != nil {
			return out, err
		}
		next, n := pos.Offset, 0
		for rec, err := range l.Records(pos.Offset) {
			if err != nil {
				return out, err
			}
			next = rec.Offset + 1
			out.Count++
			if len(out.Records) < maxConsumedShown {
				r := showRecord(rec)
				r.Partition = part
				out.Records = append(out.Records, r)
			}
			if n++; n == perPartition {
				break
			}
		}
		if c, ok := p.st.CommittedOffset(group, PlaygroundTopic, part); !ok || c.Offset != next {
			commits[part] = next
		}
	}
	if len(commits) > 0 {
		if err := p.st.Commit(group, PlaygroundTopic, commits); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Rewind says how to move a group back (or forward), as
// kafka-consumer-groups.sh --reset-offsets does.
type Rewind struct {
	// By is "offset", "time", "earliest", "latest" or "shift".
	By string `json:"by"`
	// Offset is the target of "offset", Time (ms since the epoch) of
	// "time", Shift of "shift".
	Offset int64 `json:"offset"`
	Time   int64 `json:"time"`
	Shift  int64 `json:"shift"`
	// Partition limits the rewind to one partition; -1 (or absent, in
	// JSON) means all.
	Partition *int32 `json:"partition"`
}

// Rewind moves a group's committed offsets with store.ResetOffsets and
// returns the new ones.
func (p *Playground) Rewind(group string, rw Rewind) (map[int32]int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var r store.Reset
	switch rw.By {
	case "offset":
		r = store.Reset{Kind: store.ToOffset, Offset: rw.Offset}
	case "time":
		r = store.Reset{Kind: store.ToTime, Time: rw.Time}
	case "earliest":
		r = store.Reset{Kind: store.ToEarliest}
	case "latest":
		r = store.Reset{Kind: store.ToLatest}
	case "shift":
		r = store.Reset{Kind: store.ShiftBy, Shift: rw.Shift}
	default:
		return nil, fmt.Errorf("%w: rewind by %q: want offset, time, earliest, latest or shift", errBadRequest, rw.By)
	}
	var parts []int32
	if rw.Partition != nil && *rw.Partition >= 0 {
		parts = append(parts, *rw.Partition)
	}
	return p.st.ResetOffsets(group, PlaygroundTopic, r, parts...)
}

// Advanced is the result of moving the clock.
type Advanced struct {
	Now int64 `json:"now"`
	// Segments, Bytes and Records count what the retention round the
	// advance ran deleted from the bookings topic.
	Segments int   `json:"segments"`
	Bytes    int64 `json:"bytes"`
	Records  int64 `json:"records"`
	// Behind lists, per group, the records retention removed before it
	// read them: its next consume resets and skips them.
	Behind map[string]int64 `json:"behind"`
}

// Advance moves the simulated clock forward by d and runs one retention
// round (store.CleanOnce, the cleaner's own pass) at the new time.
func (p *Playground) Advance(ctx context.Context, d time.Duration) (Advanced, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d <= 0 || d > 365*24*time.Hour {
		return Advanced{}, fmt.Errorf("%w: advance by %v: want a positive duration up to a year", errBadRequest, d)
	}
	segs0, bytes0, starts0 := p.census()
	now := p.clock.Advance(d)
	if err := p.st.CleanOnce(ctx); err != nil {
		return Advanced{}, err
	}
	segs1, bytes1, starts1 := p.census()
	out := Advanced{Now: now.UnixMilli(), Segments: segs0 - segs1, Bytes: bytes0 - bytes1, Records: starts1 - starts0, Behind: map[string]int64{}}
	for _, g := range []string{GroupBilling, GroupAnalytics} {
		for part := range int32(PlaygroundPartitions) {
			if pos, err := p.st.Position(g, PlaygroundTopic, part, store.Earliest); err == nil {
				out.Behind[g] += pos.Skipped
			}
		}
	}
	return out, nil
}

// census counts the bookings topic's segments, bytes and the sum of its
// start offsets. Only this playground writes the store, under p.mu, so
// two censuses bracket exactly one retention round.
func (p *Playground) census() (segs int, bytes, starts int64) {
	for part := range int32(PlaygroundPartitions) {
		l, err := p.st.Log(PlaygroundTopic, part)
		if err != nil {
			continue
		}
		for _, s := range l.Segments() {
			segs++
			bytes += s.Size
		}
		starts += l.StartOffset()
	}
	return segs, bytes, starts
}
