package store

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// plainCommitKey is an independent reader of OffsetCommitKey versions 0
// and 1 (int16 version, group and topic as int16-length strings, int32
// partition), beside the kmsg reader decodeCommit uses. Like Kafka's and
// kmsg's readers, it ignores bytes after the fields.
func plainCommitKey(b []byte) (group, topic string, part int32, ok bool) {
	str := func() (string, bool) {
		if len(b) < 2 {
			return "", false
		}
		n := int(int16(binary.BigEndian.Uint16(b)))
		if n < 0 || n > len(b)-2 {
			return "", false
		}
		s := string(b[2 : 2+n])
		b = b[2+n:]
		return s, true
	}
	b = b[2:]
	group, ok1 := str()
	topic, ok2 := str()
	if !ok1 || !ok2 || len(b) < 4 {
		return "", "", 0, false
	}
	return group, topic, int32(binary.BigEndian.Uint32(b)), true
}

// plainCommitValue reads OffsetCommitValue versions 0 to 3 (offset, the
// leader epoch from version 3, metadata, commit timestamp, the expire
// timestamp of version 1); ok false for a version it does not know.
func plainCommitValue(b []byte) (offset, ts int64, known, ok bool) {
	if len(b) < 2 {
		return 0, 0, true, false
	}
	v := int16(binary.BigEndian.Uint16(b))
	if v < 0 || v > 3 {
		return 0, 0, false, false
	}
	b = b[2:]
	need := func(n int) bool { return len(b) >= n }
	if !need(8) {
		return 0, 0, true, false
	}
	offset, b = int64(binary.BigEndian.Uint64(b)), b[8:]
	if v >= 3 {
		if !need(4) {
			return 0, 0, true, false
		}
		b = b[4:]
	}
	if !need(2) {
		return 0, 0, true, false
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	if n < 0 || n > len(b)-2 {
		return 0, 0, true, false
	}
	b = b[2+n:]
	if !need(8) || (v == 1 && !need(16)) {
		return 0, 0, true, false
	}
	return offset, int64(binary.BigEndian.Uint64(b)), true, true
}

// FuzzCommitRecord tries to break the reading of __consumer_offsets
// records that rebuilds every group's committed offsets on Open.
// Arbitrary key and value bytes never panic decodeCommit; where the record is an
// offset commit of a version an independent plain reader knows (key 0-1,
// value 0-3), the two agree on whether it decodes and on the group,
// topic, partition, offset and timestamp. And a commit encodeCommit
// writes from the same bytes (a group of any bytes up to the int16
// limit) decodes back to exactly what was committed, a tombstone to none.
func FuzzCommitRecord(f *testing.F) {
	seed := func(group, topic string, part int32, c *Committed) {
		r := encodeCommit(group, tp{topic, part}, c)
		f.Add(r.Key, r.Value, r.Value == nil)
	}
	seed("g", "orders", 3, &Committed{Offset: 42, Timestamp: 1_700_000_000_000})
	seed("consumers-ü\xff", "t", 0, nil)
	seed("", "", -1, &Committed{Offset: -1, Timestamp: -1})
	// What Kafka brokers of other versions write: values 0 to 4, and a
	// group metadata key (version 2), which is not a commit.
	key := kmsg.NewOffsetCommitKey()
	key.Group, key.Topic, key.Partition = "old", "t", 1
	for v := int16(0); v <= 4; v++ {
		val := kmsg.NewOffsetCommitValue()
		val.Version, val.Offset, val.Metadata, val.CommitTimestamp, val.ExpireTimestamp = v, 7, "meta", 1000, 2000
		f.Add(key.AppendTo(nil), val.AppendTo(nil), false)
	}
	gm := kmsg.NewGroupMetadataKey()
	gm.Group = "g"
	f.Add(gm.AppendTo(nil), []byte{0, 3, 1, 2}, false)
	f.Add([]byte{0, 1, 0x7f, 0xff}, []byte{0, 3}, false)
	f.Add([]byte{0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0}, []byte{}, false)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		group, k, c, ok, err := decodeCommit(key, value)
		isCommit := len(key) >= 2 && key[0] == 0 && key[1] <= 1
		if !isCommit {
			if ok || err != nil {
				t.Fatalf("key version %x: ok %v, err %v; want the record skipped", key[:min(len(key), 2)], ok, err)
			}
		} else {
			pg, pt, pp, kok := plainCommitKey(key)
			off, ts, known, vok := plainCommitValue(value)
			switch {
			case !kok:
				if err == nil {
					t.Fatalf("key %x: decoded as %q %q %d, the plain reader refuses it", key, group, k.topic, k.part)
				}
			case err == nil && (pg != group || pt != k.topic || pp != k.part):
				t.Fatalf("key %x: decoded %q %q %d, plain reader %q %q %d", key, group, k.topic, k.part, pg, pt, pp)
			case value == nil:
				if err != nil || !ok || c != nil {
					t.Fatalf("tombstone: c %v, ok %v, err %v", c, ok, err)
				}
			case known && vok != (err == nil):
				t.Fatalf("value %x: decode err %v, the plain reader ok %v", value, err, vok)
			case known && vok && (c.Offset != off || c.Timestamp != ts):
				t.Fatalf("value %x: decoded %+v, plain reader offset %d timestamp %d", value, *c, off, ts)
			}
		}

		// Round trip: the bytes as a group, the value as a topic.
		g := string(key[:min(len(key), math.MaxInt16)])
		topic := string(value[:min(len(value), MaxTopicNameLength)])
		part := int32(len(key)) - 3
		var in *Committed
		if !tombstone && len(value) >= 16 {
			in = &Committed{Offset: int64(binary.BigEndian.Uint64(value)), Timestamp: int64(binary.BigEndian.Uint64(value[8:]))}
		} else if !tombstone {
			in = &Committed{Offset: int64(len(value)), Timestamp: -int64(len(key))}
		}
		r := encodeCommit(g, tp{topic, part}, in)
		gotGroup, gotK, gotC, ok, err := decodeCommit(r.Key, r.Value)
		if err != nil || !ok || gotGroup != g || gotK != (tp{topic, part}) || (gotC == nil) != (in == nil) || (in != nil && *gotC != *in) {
			t.Fatalf("commit %q %q %d %+v decoded as %q %+v %+v, ok %v, err %v", g, topic, part, in, gotGroup, gotK, gotC, ok, err)
		}
	})
}
