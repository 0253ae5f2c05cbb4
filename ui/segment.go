package ui

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Limits on what one segment request returns, so a 1 GiB segment costs a
// page of batches, not the whole file.
const (
	defaultBatches   = 50
	maxBatches       = 500
	maxRecordsShown  = 200      // records listed per batch
	maxBytesShown    = 4096     // of one key, value or header value
	maxBatchRead     = 16 << 20 // largest batch the scanner reads whole
	maxRecordsPerGet = 1000     // records per /api/records call
	maxFirstTSCache  = 1 << 16  // cached first timestamps before a reset
)

// firstTimestamps caches each segment's first batch timestamp: reading it
// costs a file open, and a sealed segment's never changes. The key holds
// the size for sealed segments so a rewrite (compaction) reads it again.
type firstTimestamps struct {
	mu sync.Mutex
	m  map[firstTSKey]int64
}

type firstTSKey struct {
	dir        string
	base, size int64
}

func (c *firstTimestamps) init() { c.m = make(map[firstTSKey]int64) }

func (c *firstTimestamps) get(fsys vfs.FS, dir string, sg cleaner.Segment) int64 {
	if sg.Size == 0 {
		return -1
	}
	k := firstTSKey{dir, sg.BaseOffset, sg.Size}
	if sg.Active {
		// Appends change the size but not the first batch.
		k.size = -1
	}
	c.mu.Lock()
	ts, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return ts
	}
	ts, ok = readFirstTimestamp(fsys, filepath.Join(dir, layout.FileName(sg.BaseOffset, layout.LogSuffix)))
	if !ok {
		return -1
	}
	c.mu.Lock()
	if len(c.m) >= maxFirstTSCache {
		clear(c.m)
	}
	c.m[k] = ts
	c.mu.Unlock()
	return ts
}

// readFirstTimestamp reads the base timestamp from the header of a .log's
// first batch; ok is false when there is no complete v2 header to read.
func readFirstTimestamp(fsys vfs.FS, path string) (int64, bool) {
	f, err := fsys.Open(path)
	if err != nil {
		return -1, false
	}
	defer f.Close()
	var hdr [record.HeaderSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return -1, false
	}
	b := record.Batch(hdr[:])
	if b.Magic() != record.CurrentMagic {
		return -1, false
	}
	return b.BaseTimestamp(), true
}

// Batches is what GET /api/segment returns: a page of one segment's
// batches as `seglog dump --records` prints them.
type Batches struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Base      int64   `json:"base"`
	File      string  `json:"file"`
	Size      int64   `json:"size"`
	Batches   []Batch `json:"batches"`
	// Next is the byte position to ask for the next page from, -1 at the
	// end of the file.
	Next int64 `json:"next"`
}

// Batch is one batch (or damaged region) of a segment file.
type Batch struct {
	Position       int64    `json:"position"`
	Size           int64    `json:"size"`
	Magic          int8     `json:"magic"`
	BaseOffset     int64    `json:"baseOffset"`
	LastOffset     int64    `json:"lastOffset"`
	Count          int32    `json:"count"`
	BaseTimestamp  int64    `json:"baseTimestamp"`
	MaxTimestamp   int64    `json:"maxTimestamp"`
	TimestampType  string   `json:"timestampType"`
	Codec          string   `json:"codec"`
	CRC            uint32   `json:"crc"`
	ProducerID     int64    `json:"producerId"`
	ProducerEpoch  int16    `json:"producerEpoch"`
	BaseSequence   int32    `json:"baseSequence"`
	LeaderEpoch    int32    `json:"leaderEpoch"`
	Transactional  bool     `json:"transactional"`
	Control        bool     `json:"control"`
	Damaged        string   `json:"damaged,omitempty"`
	Records        []Record `json:"records"`
	RecordsOmitted int      `json:"recordsOmitted"`
	RecordsError   string   `json:"recordsError,omitempty"`
}

// Record is one record, its key, value and header values shown as Bytes.
type Record struct {
	Offset    int64    `json:"offset"`
	Timestamp int64    `json:"timestamp"`
	Key       Bytes    `json:"key"`
	Value     Bytes    `json:"value"`
	Headers   []Header `json:"headers"`
	// Partition is set by /api/records, which reads one partition.
	Partition int32 `json:"partition"`
}

// Header is one record header.
type Header struct {
	Key   string `json:"key"`
	Value Bytes  `json:"value"`
}

// Bytes shows a byte string: as text when it is valid UTF-8, always as
// hex, both cut to the first 4 KiB.
type Bytes struct {
	Null      bool   `json:"null"`
	Len       int    `json:"len"`
	Text      string `json:"text"`
	IsText    bool   `json:"isText"`
	Hex       string `json:"hex"`
	Truncated bool   `json:"truncated"`
}

func showBytes(b []byte) Bytes {
	if b == nil {
		return Bytes{Null: true, Len: -1}
	}
	out := Bytes{Len: len(b)}
	if len(b) > maxBytesShown {
		b, out.Truncated = b[:maxBytesShown], true
	}
	out.Hex = hex.EncodeToString(b)
	if utf8.Valid(b) || (out.Truncated && utf8.Valid(trimPartialRune(b))) {
		out.Text, out.IsText = string(b), true
	}
	return out
}

// trimPartialRune drops a rune cut in half by the 4 KiB limit.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		if utf8.Valid(b) {
			return b
		}
		b = b[:len(b)-1]
	}
	return b
}

func showRecord(r record.Record) Record {
	out := Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: showBytes(r.Key), Value: showBytes(r.Value), Headers: []Header{}}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, Header{Key: h.Key, Value: showBytes(h.Value)})
	}
	return out
}

func intParam(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q is not an integer", errBadRequest, name, v)
	}
	return n, nil
}

// pageParams reads from (default 0) and limit, which defaults to def and
// is kept to 1..most.
func pageParams(r *http.Request, def, most int64) (from, limit int64, err error) {
	if from, err = intParam(r, "from", 0); err != nil {
		return 0, 0, err
	}
	if limit, err = intParam(r, "limit", def); err != nil {
		return 0, 0, err
	}
	return from, min(max(limit, 1), most), nil
}

// partitionParams reads topic and partition and returns the partition's
// view.
func (s *Server) partitionParams(r *http.Request) (topic string, partition int32, l seglog.View, err error) {
	topic = r.URL.Query().Get("topic")
	p, err := intParam(r, "partition", -1)
	if err != nil {
		return "", 0, seglog.View{}, err
	}
	if p < 0 || p > 1<<31-1 {
		return "", 0, seglog.View{}, fmt.Errorf("%w: partition missing or out of range", errBadRequest)
	}
	l, err = s.st.Log(topic, int32(p))
	if err != nil {
		return "", 0, seglog.View{}, err
	}
	return topic, int32(p), l, nil
}

// handleSegment serves GET /api/segment?topic=T&partition=N&base=B
// [&from=POS&limit=N]: the segment's batches from byte position from.
// It reads the .log file with fsck's scanner, as seglog dump does, so
// positions and damage are the ones fsck and dump report.
func (s *Server) handleSegment(w http.ResponseWriter, r *http.Request) {
	release, err := s.view()
	defer release()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	topic, partition, l, err := s.partitionParams(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	base, err := intParam(r, "base", -1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	from, limit, err := pageParams(r, defaultBatches, maxBatches)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if base < 0 || from < 0 {
		s.fail(w, r, fmt.Errorf("%w: base and from must be non-negative", errBadRequest))
		return
	}
	out, err := readSegment(s.opts.FS, l.Dir(), base, from, int(limit))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out.Topic, out.Partition = topic, partition
	writeJSON(w, out)
}

func readSegment(fsys vfs.FS, dir string, base, from int64, limit int) (Batches, error) {
	path := filepath.Join(dir, layout.FileName(base, layout.LogSuffix))
	f, err := fsys.Open(path)
	if err != nil {
		return Batches{}, fmt.Errorf("%w: %s: %w", errNoSegment, path, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return Batches{}, err
	}
	out := Batches{Base: base, File: path, Size: size, Batches: []Batch{}, Next: -1}
	if from >= size {
		return out, nil
	}
	// The scanner reads from the start of the file; from is a position it
	// reported earlier, so entries before it are skipped, not shown.
	sc := segment.NewScanner(f, size, maxBatchRead)
	sc.SetMinOffset(base)
	var it record.Iterator
	for {
		e, ok, err := sc.Next()
		if err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		if !ok {
			return out, nil
		}
		if !e.Damaged() {
			sc.SetMinOffset(e.LastOffset() + 1)
		}
		if e.Pos < from {
			continue
		}
		if len(out.Batches) == limit {
			out.Next = e.Pos
			return out, nil
		}
		out.Batches = append(out.Batches, showBatch(&e, &it))
	}
}

func showBatch(e *segment.Entry, it *record.Iterator) Batch {
	if e.Damaged() {
		return Batch{Position: e.Pos, Size: e.Size, BaseOffset: -1, LastOffset: -1, Damaged: fmt.Sprintf("%s: %v", e.Kind, e.Err), Records: []Record{}}
	}
	out := Batch{Position: e.Pos, Size: e.Size, Magic: e.Magic, BaseOffset: e.BaseOffset(), LastOffset: e.LastOffset(), Records: []Record{}}
	if e.Magic != record.CurrentMagic {
		// Legacy message sets: only the offset fields follow v2's layout.
		return out
	}
	b := e.Batch
	out.Count, out.BaseTimestamp, out.MaxTimestamp = b.NumRecords(), b.BaseTimestamp(), b.MaxTimestamp()
	out.TimestampType, out.Codec, out.CRC = b.TimestampType().String(), b.Codec().String(), b.CRC()
	out.ProducerID, out.ProducerEpoch, out.BaseSequence = b.ProducerID(), b.ProducerEpoch(), b.BaseSequence()
	out.LeaderEpoch, out.Transactional, out.Control = b.PartitionLeaderEpoch(), b.IsTransactional(), b.IsControl()
	if err := it.Reset(b); err != nil {
		out.RecordsError = err.Error()
		return out
	}
	for it.Next() {
		if len(out.Records) == maxRecordsShown {
			out.RecordsOmitted++
			continue
		}
		out.Records = append(out.Records, showRecord(it.Record()))
	}
	if err := it.Err(); err != nil {
		out.RecordsError = err.Error()
	}
	return out
}

// handleRecords serves GET /api/records?topic=T&partition=N&from=O
// [&limit=N]: records read through the partition's Log, from offset O.
func (s *Server) handleRecords(w http.ResponseWriter, r *http.Request) {
	release, err := s.view()
	defer release()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_, partition, l, err := s.partitionParams(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	from, limit, err := pageParams(r, 100, maxRecordsPerGet)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	from = max(from, l.StartOffset())
	out := []Record{}
	for rec, err := range l.Records(from) {
		if err != nil {
			s.fail(w, r, err)
			return
		}
		x := showRecord(rec)
		x.Partition = partition
		out = append(out, x)
		if int64(len(out)) == limit {
			break
		}
	}
	writeJSON(w, out)
}
