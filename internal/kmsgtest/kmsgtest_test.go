package kmsgtest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRecords: records kmsg wrote come back with their fields, and a
// section cut short or with a negative length is refused.
func TestRecords(t *testing.T) {
	var section []byte
	for i := range 3 {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte{byte('a' + i)}, Value: []byte("v"),
			Headers: []kmsg.Header{{Key: "h", Value: []byte{byte(i)}}}}
		body := r.AppendTo(nil)
		// AppendTo writes the Length field as given; frame it as Kafka does.
		r.Length = int32(len(body) - 1)
		section = r.AppendTo(section)
	}
	got, err := Records(section)
	if err != nil || len(got) != 3 {
		t.Fatalf("%d records, %v; want 3", len(got), err)
	}
	for i, r := range got {
		if r.OffsetDelta != int32(i) || string(r.Key) != string(rune('a'+i)) || r.Headers[0].Value[0] != byte(i) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if _, err := Records(section[:len(section)-1]); err == nil {
		t.Fatal("a section cut short was read")
	}
	if _, err := Records([]byte{1}); err == nil { // varint -1
		t.Fatal("a negative length was read")
	}
}
