package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	tidwal "github.com/tidwall/wal"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// store is one engine opened in a fresh directory. Append is one call of
// the workload (a batch of records), and may be called from many
// goroutines; Verify reads every record back with the library's own reader
// and returns how many it found with the right size; Close releases it.
type store interface {
	Append(recs [][]byte) error
	Verify(want int64, size int) (int64, error)
	Close() error
}

// peer is an engine under test.
type peer struct {
	name string
	// durability states what the engine fsyncs, and when, in each mode.
	durability func(sync bool) string
	open       func(dir string, sync bool) (store, error)
}

var peers = []peer{
	{"raw file", func(sync bool) string {
		if sync {
			return "write(2) of the batch's record bytes, then fdatasync, per call (callers take turns)"
		}
		return "write(2) of the batch's record bytes per call; no fsync"
	}, openRaw},
	{"raw file, preallocated", func(sync bool) string {
		if sync {
			return "as the raw file, into space fallocate(2)d up front (not the floor: shown for what preallocation does to fdatasync)"
		}
		return "as the raw file, into space fallocate(2)d up front (not the floor)"
	}, openRawPrealloc},
	{"raw file, reserved", func(sync bool) string {
		return "the payload floor: the values gathered per call and pwritten into blocks reserved 16 MiB ahead with fallocate(KEEP_SIZE), as seglog's active segment reserves them" + syncSuffix(sync)
	}, openRawReserved},
	{"raw file, reserved, framed", func(sync bool) string {
		return "the reserved floor: each call's batch built as seglog builds it (record.Builder.AddAt: varints, framing, CRC-32C), pwritten into blocks reserved the same way; read back with pread and record.Iterator, no CRC check" + syncSuffix(sync)
	}, openRawFramed},
	{"seglog", func(sync bool) string {
		if sync {
			return "Sync=always: Append returns after fdatasync of the .log; concurrent appenders share one fdatasync (group commit)"
		}
		return "Sync=none: the OS flushes (Kafka's default); fsync on roll and close only"
	}, openSeglog},
	{"seglog, preallocated", func(sync bool) string {
		if sync {
			return "as seglog, with Options.Preallocate: each segment's .log fallocated to its full size, so fdatasync has no size to commit"
		}
		return "as seglog, with Options.Preallocate"
	}, openSeglogPrealloc},
	{"etcd wal", func(sync bool) string {
		if sync {
			return "Save fdatasyncs after every call with entries (segment files preallocated to 64 MiB)"
		}
		return "SetUnsafeNoFsync: no fsync"
	}, openEtcd},
	{"raft-wal", func(bool) string {
		return "fsyncs on every StoreLogs whatever the mode: it has no option to skip it"
	}, openRaftWAL},
	{"tidwall/wal", func(sync bool) string {
		if sync {
			return "NoSync=false: fsync after every Write/WriteBatch"
		}
		return "NoSync=true: no fsync"
	}, openTidwall},
	{"nats jetstream", func(sync bool) string {
		if sync {
			return "file store with SyncAlways: each message's block write is fsynced before its ack"
		}
		return "file store, default sync_interval (2 min): no fsync during the run"
	}, openNATS},
}

// ---- raw file: the floor ----

type rawStore struct {
	mu       sync.Mutex
	f        *os.File
	sync     bool
	prealloc bool
	reserve  bool            // fallocate(KEEP_SIZE) reserveChunk ahead of the writes
	bld      *record.Builder // framed: write Kafka batches, not bare values
	ahead    int64           // reserved up to here
	buf      []byte
	pos      int64 // bytes written
	n        int64 // records written
}

// reserveChunk is how far ahead the reserved floors reserve blocks, as
// seglog's Options.ReserveBytes does by default.
const reserveChunk = 16 << 20

func syncSuffix(sync bool) string {
	if sync {
		return "; fdatasync per call"
	}
	return "; no fsync"
}

func openRawReserved(dir string, sync bool) (store, error) {
	f, err := os.Create(filepath.Join(dir, "raw"))
	return &rawStore{f: f, sync: sync, reserve: true}, err
}

func openRawFramed(dir string, sync bool) (store, error) {
	f, err := os.Create(filepath.Join(dir, "raw"))
	return &rawStore{f: f, sync: sync, reserve: true, bld: record.NewBuilder(record.None)}, err
}

func openRaw(dir string, sync bool) (store, error) {
	f, err := os.Create(filepath.Join(dir, "raw"))
	return &rawStore{f: f, sync: sync}, err
}

// preallocBytes is what openRawPrealloc reserves: more than any round
// writes.
const preallocBytes = 1 << 30

func openRawPrealloc(dir string, sync bool) (store, error) {
	f, err := os.Create(filepath.Join(dir, "raw"))
	if err != nil {
		return nil, err
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, preallocBytes); err != nil {
		f.Close()
		return nil, err
	}
	return &rawStore{f: f, sync: sync, prealloc: true}, nil
}

func (s *rawStore) Append(recs [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buf[:0]
	if s.bld != nil {
		s.bld.Reset()
		now := time.Now().UnixMilli()
		var rec record.Record
		for i, r := range recs {
			rec.Value = r
			if err := s.bld.AddAt(int64(i), now, &rec); err != nil {
				return err
			}
		}
		built, err := s.bld.Build()
		if err != nil {
			return err
		}
		b = built
	} else {
		for _, r := range recs {
			b = append(b, r...)
		}
		s.buf = b
	}
	if end := s.pos + int64(len(b)); s.reserve && end > s.ahead {
		n := max(reserveChunk, end-s.ahead)
		if err := unix.Fallocate(int(s.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, s.ahead, n); err != nil {
			return err
		}
		s.ahead += n
	}
	if _, err := s.f.WriteAt(b, s.pos); err != nil {
		return err
	}
	s.pos += int64(len(b))
	s.n += int64(len(recs))
	if s.sync {
		return unix.Fdatasync(int(s.f.Fd()))
	}
	return nil
}

// Verify reads the file back, 256 KiB at a time with pread (seglog's scan
// window), and counts the records: bare values by their size, batches by
// walking them with record.Iterator, without a CRC check; every value's
// first byte is checked (values are hex digits, never zero). That is the read floor the read column compares with.
func (s *rawStore) Verify(want int64, size int) (int64, error) {
	fi, err := s.f.Stat()
	if err != nil {
		return 0, err
	}
	if !s.prealloc && fi.Size() != s.pos {
		return 0, fmt.Errorf("raw file holds %d bytes, wrote %d", fi.Size(), s.pos)
	}
	const window = 256 << 10
	buf := make([]byte, window+record.DefaultMaxBatchSize)
	var it record.Iterator
	var n, at int64
	have := 0 // bytes of buf holding the unparsed rest
	for at < s.pos || have > 0 {
		k, err := s.f.ReadAt(buf[have:have+int(min(window, s.pos-at))], at)
		if k == 0 && err != nil {
			return n, err
		}
		at += int64(k)
		have += k
		used := 0
		if s.bld == nil {
			recs := have / size
			for i := range recs {
				if buf[i*size] == 0 { // values are hex digits: a zero was never written
					return n, fmt.Errorf("raw file: a zero byte at %d, where a value starts", at-int64(have)+int64(i*size))
				}
			}
			n += int64(recs)
			used = recs * size
		} else {
			for have-used >= record.HeaderSize {
				b := record.Batch(buf[used:have])
				bs := b.Size()
				if bs > have-used {
					break
				}
				if err := it.Reset(b[:bs]); err != nil {
					return n, err
				}
				for it.Next() {
					v := it.Record().Value
					if len(v) != size {
						return n, fmt.Errorf("raw batch at %d: a %d-byte value", at-int64(have-used), len(v))
					}
					if v[0] == 0 {
						return n, fmt.Errorf("raw batch at %d: a value starting with a zero byte", at-int64(have-used))
					}
					n++
				}
				if err := it.Err(); err != nil {
					return n, err
				}
				used += bs
			}
		}
		have = copy(buf, buf[used:have])
		if k == 0 && have > 0 {
			return n, fmt.Errorf("raw file: %d bytes at its end are not a whole record", have)
		}
	}
	return n, nil
}

func (s *rawStore) Close() error { return s.f.Close() }

// ---- seglog ----

type seglogStore struct{ l *seglog.Log }

func openSeglog(dir string, sync bool) (store, error) { return openSeglogWith(dir, sync, false) }

func openSeglogPrealloc(dir string, sync bool) (store, error) { return openSeglogWith(dir, sync, true) }

func openSeglogWith(dir string, sync, prealloc bool) (store, error) {
	o := seglog.Options{LogConfig: seglog.LogConfig{Preallocate: prealloc}}
	if sync {
		o.Sync = seglog.SyncAlways
	}
	l, err := seglog.Open(dir, o)
	return &seglogStore{l}, err
}

var recPool = sync.Pool{New: func() any { return new([]record.Record) }}

func (s *seglogStore) Append(recs [][]byte) error {
	p := recPool.Get().(*[]record.Record)
	defer recPool.Put(p)
	rs := (*p)[:0]
	for _, r := range recs {
		rs = append(rs, record.Record{Value: r})
	}
	*p = rs
	_, err := s.l.Append(rs...)
	return err
}

func (s *seglogStore) Verify(want int64, size int) (int64, error) {
	var n int64
	for rec, err := range s.l.Records(s.l.StartOffset()) {
		if err != nil {
			return n, err
		}
		if len(rec.Value) != size {
			return n, fmt.Errorf("seglog offset %d: %d bytes", rec.Offset, len(rec.Value))
		}
		n++
	}
	return n, nil
}

func (s *seglogStore) Close() error { return s.l.Close() }

// ---- etcd's WAL ----

type etcdStore struct {
	mu   sync.Mutex
	dir  string
	w    *wal.WAL
	next uint64
	ents []*raftpb.Entry
}

func openEtcd(dir string, sync bool) (store, error) {
	d := filepath.Join(dir, "wal")
	w, err := wal.Create(zap.NewNop(), d, nil)
	if err != nil {
		return nil, err
	}
	if !sync {
		w.SetUnsafeNoFsync()
	}
	return &etcdStore{dir: d, w: w, next: 1}, nil
}

func (s *etcdStore) Append(recs [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ents = s.ents[:0]
	for _, r := range recs {
		s.ents = append(s.ents, &raftpb.Entry{Term: new(uint64(1)), Index: new(s.next), Type: new(raftpb.EntryType_EntryNormal), Data: r})
		s.next++
	}
	return s.w.Save(&raftpb.HardState{Term: new(uint64(1)), Commit: new(s.next - 1)}, s.ents)
}

func (s *etcdStore) Verify(want int64, size int) (int64, error) {
	if err := s.w.Close(); err != nil {
		return 0, err
	}
	s.w = nil
	w, err := wal.OpenForRead(zap.NewNop(), s.dir, &walpb.Snapshot{})
	if err != nil {
		return 0, err
	}
	defer w.Close()
	_, _, ents, err := w.ReadAll()
	if err != nil {
		return 0, err
	}
	for i, e := range ents {
		if len(e.GetData()) != size || e.GetIndex() != uint64(i+1) {
			return int64(i), fmt.Errorf("etcd entry %d: index %d, %d bytes", i, e.GetIndex(), len(e.GetData()))
		}
	}
	return int64(len(ents)), nil
}

func (s *etcdStore) Close() error {
	if s.w == nil {
		return nil
	}
	return s.w.Close()
}

// ---- hashicorp/raft-wal ----

type raftWALStore struct {
	mu   sync.Mutex
	w    *raftwal.WAL
	next uint64
	logs []*raft.Log
}

func openRaftWAL(dir string, _ bool) (store, error) {
	w, err := raftwal.Open(dir)
	return &raftWALStore{w: w, next: 1}, err
}

func (s *raftWALStore) Append(recs [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs = s.logs[:0]
	for _, r := range recs {
		s.logs = append(s.logs, &raft.Log{Index: s.next, Term: 1, Type: raft.LogCommand, Data: r})
		s.next++
	}
	return s.w.StoreLogs(s.logs)
}

func (s *raftWALStore) Verify(want int64, size int) (int64, error) {
	var l raft.Log
	var n int64
	for i := uint64(1); i < s.next; i++ {
		if err := s.w.GetLog(i, &l); err != nil {
			return n, err
		}
		if len(l.Data) != size {
			return n, fmt.Errorf("raft-wal index %d: %d bytes", i, len(l.Data))
		}
		n++
	}
	return n, nil
}

func (s *raftWALStore) Close() error { return s.w.Close() }

// ---- tidwall/wal ----

type tidwallStore struct {
	mu   sync.Mutex
	l    *tidwal.Log
	next uint64
	b    tidwal.Batch
}

func openTidwall(dir string, sync bool) (store, error) {
	o := *tidwal.DefaultOptions
	o.NoSync = !sync
	l, err := tidwal.Open(filepath.Join(dir, "wal"), &o)
	return &tidwallStore{l: l, next: 1}, err
}

func (s *tidwallStore) Append(recs [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Clear()
	for _, r := range recs {
		s.b.Write(s.next, r)
		s.next++
	}
	return s.l.WriteBatch(&s.b)
}

func (s *tidwallStore) Verify(want int64, size int) (int64, error) {
	var n int64
	for i := uint64(1); i < s.next; i++ {
		d, err := s.l.Read(i)
		if err != nil {
			return n, err
		}
		if len(d) != size {
			return n, fmt.Errorf("tidwall/wal index %d: %d bytes", i, len(d))
		}
		n++
	}
	return n, nil
}

func (s *tidwallStore) Close() error { return s.l.Close() }

// ---- NATS JetStream (file store) through an embedded server ----

type natsStore struct {
	ns *server.Server
	nc *nats.Conn
	js nats.JetStreamContext
}

const natsSubject = "bench.peers"

func openNATS(dir string, sync bool) (store, error) {
	opts := &server.Options{
		JetStream: true, StoreDir: dir, DontListen: true, NoLog: true, NoSigs: true,
		JetStreamMaxStore: 64 << 30, JetStreamMaxMemory: 256 << 20,
		SyncAlways: sync,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("nats server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.InProcessServer(ns))
	if err != nil {
		ns.Shutdown()
		return nil, err
	}
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(4096))
	if err == nil {
		_, err = js.AddStream(&nats.StreamConfig{Name: "BENCH", Subjects: []string{natsSubject}, Storage: nats.FileStorage})
	}
	s := &natsStore{ns: ns, nc: nc, js: js}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Append publishes the batch asynchronously and waits for every ack: the
// closest JetStream has to one append call of many records.
func (s *natsStore) Append(recs [][]byte) error {
	if len(recs) == 1 {
		_, err := s.js.Publish(natsSubject, recs[0])
		return err
	}
	futs := make([]nats.PubAckFuture, 0, len(recs))
	for _, r := range recs {
		f, err := s.js.PublishAsync(natsSubject, r)
		if err != nil {
			return err
		}
		futs = append(futs, f)
	}
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		}
	}
	return nil
}

func (s *natsStore) Verify(want int64, size int) (int64, error) {
	sub, err := s.js.SubscribeSync(natsSubject, nats.OrderedConsumer())
	if err != nil {
		return 0, err
	}
	defer sub.Unsubscribe()
	var n int64
	for n < want {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			return n, err
		}
		if len(m.Data) != size {
			return n, fmt.Errorf("nats message %d: %d bytes", n, len(m.Data))
		}
		n++
	}
	return n, nil
}

func (s *natsStore) Close() error {
	s.nc.Close()
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	return nil
}
