package meta

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// TestClientQuotasApplyAndRoundTrip: AlterClientQuotas encodes and decodes
// to itself, applies set and remove, and the quotas survive a snapshot.
func TestClientQuotasApplyAndRoundTrip(t *testing.T) {
	c := &AlterClientQuotas{Changes: []QuotaChange{
		{Entity: QuotaEntity{User: "alice", ClientID: "app"}, Set: map[string]float64{"producer_byte_rate": 1024, "request_percentage": 12.5}},
		{Entity: QuotaEntity{DefaultUser: true}, Set: map[string]float64{"consumer_byte_rate": 2048}},
		{Entity: QuotaEntity{DefaultClientID: true}, Set: map[string]float64{"producer_byte_rate": 1}},
	}}
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := Encode(d)
	if !bytes.Equal(b, b2) {
		t.Fatalf("round trip changed the encoding")
	}
	s, _, err := emptyState().apply(1, d)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err = s.apply(2, &AlterClientQuotas{Changes: []QuotaChange{
		{Entity: QuotaEntity{DefaultClientID: true}, Remove: []string{"producer_byte_rate"}},
		{Entity: QuotaEntity{User: "alice", ClientID: "app"}, Remove: []string{"request_percentage"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := s.ClientQuotas()
	if len(got) != 2 {
		t.Fatalf("quotas %+v", got)
	}
	for _, q := range got {
		switch q.Entity {
		case QuotaEntity{User: "alice", ClientID: "app"}:
			if len(q.Values) != 1 || q.Values["producer_byte_rate"] != 1024 {
				t.Errorf("alice/app: %v", q.Values)
			}
		case QuotaEntity{DefaultUser: true}:
			if q.Values["consumer_byte_rate"] != 2048 {
				t.Errorf("default user: %v", q.Values)
			}
		default:
			t.Errorf("unexpected entity %+v", q.Entity)
		}
	}
	snap := EncodeState(s)
	r, err := DecodeState(snap)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(EncodeState(r), snap) || len(r.ClientQuotas()) != 2 {
		t.Fatalf("snapshot round trip: %+v", r.ClientQuotas())
	}
	// A refused command changes nothing.
	for _, bad := range []*AlterClientQuotas{
		{},
		{Changes: []QuotaChange{{Set: map[string]float64{"producer_byte_rate": 1}}}},
		{Changes: []QuotaChange{{Entity: QuotaEntity{User: "u", DefaultUser: true}, Set: map[string]float64{"producer_byte_rate": 1}}}},
		{Changes: []QuotaChange{{Entity: QuotaEntity{User: "u"}, Set: map[string]float64{"producer_byte_rate": math.NaN()}}}},
		{Changes: []QuotaChange{{Entity: QuotaEntity{User: "u"}, Set: map[string]float64{"producer_byte_rate": -1}}}},
	} {
		if n, _, err := s.apply(3, bad); !errors.Is(err, ErrInvalidQuota) || n != s {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	// Damaged encodings are refused, never a panic.
	for i := range b {
		_, _ = Decode(b[:i])
	}
}
