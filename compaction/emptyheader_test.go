package compaction

import (
	"encoding/binary"
	"math/rand"
	"path"
	"strings"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// emptyHeaders returns the batches of no records in the log's .log files,
// by file.
func emptyHeaders(t *testing.T, fsys vfs.FS) map[string][]record.Batch {
	t.Helper()
	names, err := fsys.List("/log")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]record.Batch{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".log") {
			continue
		}
		data := vfstest.ReadFile(t, fsys, path.Join("/log", n))
		for len(data) >= record.HeaderSize {
			b := record.Batch(data)
			size := int(b.BatchLength()) + record.LogOverhead
			if b = b[:size]; b.NumRecords() == 0 {
				out[n] = append(out[n], b)
			}
			data = data[size:]
		}
	}
	return out
}

// TestEmptyHeaderIsUncompressed: a compressed batch emptied by a round
// and kept as the group's last is written as Kafka writes an empty
// header, uncompressed; clients fail to decompress an empty payload and
// read no further (found by a walk: kcat and franz-go stuck at the first
// one). An empty header left compressed by an older round is rewritten
// by the next round that passes it, and fsck reports it until then.
func TestEmptyHeaderIsUncompressed(t *testing.T) {
	fsys := vfs.NewMem()
	o := testOptions(fsys)
	o.Compression = record.Snappy
	l, err := seglogOpen(o)
	if err != nil {
		t.Fatal(err)
	}
	appendKV := func(k, v string) {
		t.Helper()
		if _, err := l.Append(record.Record{Key: []byte(k), Value: []byte(v), Timestamp: 1}); err != nil {
			t.Fatal(err)
		}
	}
	clean := func() {
		t.Helper()
		if _, err := Clean(l, NewOffsetMap(55*bucketSlots*slotBytes, 0), 0, l.EndOffset(), Options{SegmentBytes: o.SegmentBytes}); err != nil {
			t.Fatal(err)
		}
	}
	// The first segment alone in its group, its one batch superseded.
	noise := make([]byte, 1900)
	rand.New(rand.NewSource(1)).Read(noise)
	appendKV("a", "v0")
	roll := func() {
		t.Helper()
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	roll()
	// One batch, its segment too large to merge with the first.
	if _, err := l.Append(record.Record{Key: []byte("a"), Value: []byte("v1"), Timestamp: 1},
		record.Record{Key: []byte("p"), Value: noise, Timestamp: 1}); err != nil {
		t.Fatal(err)
	}
	roll()
	appendKV("z", "v0")
	clean()
	empty := emptyHeaders(t, fsys)
	first := empty["00000000000000000000.log"]
	if len(first) != 1 {
		t.Fatalf("empty headers %v; want the first segment's emptied batch kept as one", empty)
	}
	if c := first[0].Codec(); c != record.None {
		t.Fatalf("the emptied batch's header names codec %v, want none", c)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// As an older round left it: the header names snappy, CRC valid.
	p := "/log/00000000000000000000.log"
	data := vfstest.ReadFile(t, fsys, p)
	data[21+1] |= byte(record.Snappy)
	binary.BigEndian.PutUint32(data[17:], record.Batch(data).ComputeCRC())
	vfstest.WriteFile(t, fsys, p, data)
	r, err := fsck.Check(fsys, "/log", fsck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, pr := range r.Problems {
		found = found || pr.Kind == fsck.KindEmptyCodec
	}
	if !found {
		t.Fatalf("fsck did not report the compressed empty header: %+v", r.Problems)
	}
	if l, err = seglogOpen(o); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendKV("b", "v0")
	roll()
	appendKV("b", "v1")
	roll()
	clean()
	for n, bs := range emptyHeaders(t, fsys) {
		for _, b := range bs {
			if b.Codec() != record.None {
				t.Errorf("%s: the empty header at %d still names %v after a round passed it", n, b.BaseOffset(), b.Codec())
			}
		}
	}
	var got []string
	for r, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(r.Key)+"="+string(r.Value[:2]))
	}
	if strings.Join(got, " ") != "a=v1 p="+string(noise[:2])+" z=v0 b=v1" {
		t.Errorf("read %q, want the latest value of each key", got)
	}
}
