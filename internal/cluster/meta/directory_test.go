package meta

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// TestRegisterBrokerDirectoryID: version 2 of RegisterBroker carries the
// directory id and round-trips; version 1, written before it, still
// decodes (with none); a version 3 is refused.
func TestRegisterBrokerDirectoryID(t *testing.T) {
	c := &RegisterBroker{ID: 3, Host: "h3", Port: 9092, RaftAddr: "h3:9093", DirectoryID: "7dQ8Bq3XRUu8pVhTjT2zvA"}
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if b[1] != registerBrokerVersion {
		t.Fatalf("written as version %d, want %d", b[1], registerBrokerVersion)
	}
	if got, err := Decode(b); err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, c)
	}
	// Version 1: the same fields without the directory id.
	w := &writer{}
	w.u8(uint8(kindRegisterBroker))
	w.u8(1)
	w.varint(3)
	w.str("h3")
	w.varint(9092)
	w.str("h3:9093")
	want := &RegisterBroker{ID: 3, Host: "h3", Port: 9092, RaftAddr: "h3:9093"}
	if got, err := Decode(w.b); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("version 1: %+v, %v; want %+v", got, err, want)
	}
	// A version 2 body under a version 1 byte has a byte too many.
	v1 := bytes.Clone(b)
	v1[1] = 1
	if _, err := Decode(v1); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("version 2 body as version 1: %v, want ErrBadEncoding", err)
	}
	v3 := bytes.Clone(b)
	v3[1] = registerBrokerVersion + 1
	if _, err := Decode(v3); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("version %d: %v, want ErrUnsupportedVersion", v3[1], err)
	}
}

// TestRegisterFromAnotherDirectory: a broker that registered from one
// directory is refused from another (and from none), with the state
// unchanged; from the same one it registers again with a new epoch. A
// broker registered without a directory id takes the first it sends.
func TestRegisterFromAnotherDirectory(t *testing.T) {
	s := emptyState()
	apply := func(c Command) (Result, error) {
		t.Helper()
		n, res, err := s.apply(s.index+1, c)
		s = n
		return res, err
	}
	reg := func(id int32, dir string) *RegisterBroker {
		return &RegisterBroker{ID: id, Host: "h", Port: 9092, RaftAddr: "h:9093", DirectoryID: dir}
	}
	if _, err := apply(reg(1, "A")); err != nil {
		t.Fatal(err)
	}
	first, _ := s.Broker(1)
	if first.DirectoryID != "A" {
		t.Fatalf("registered broker has directory id %q, want A", first.DirectoryID)
	}
	for _, dir := range []string{"B", ""} {
		before := s
		_, err := apply(reg(1, dir))
		if !errors.Is(err, ErrDirectoryID) {
			t.Errorf("registering from directory %q: %v, want ErrDirectoryID", dir, err)
		}
		if s != before {
			t.Errorf("a refused registration from %q changed the state", dir)
		}
	}
	if res, err := apply(reg(1, "A")); err != nil || res.Epoch <= first.Epoch {
		t.Errorf("registering again from A: epoch %d, %v; want above %d", res.Epoch, err, first.Epoch)
	}
	if _, err := apply(reg(2, "")); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(reg(2, "C")); err != nil {
		t.Errorf("broker without a directory id registering with one: %v", err)
	}
	if b, _ := s.Broker(2); b.DirectoryID != "C" {
		t.Errorf("broker 2's directory id %q, want C", b.DirectoryID)
	}
	if _, err := apply(reg(3, string(make([]byte, MaxDirectoryIDLen+1)))); !errors.Is(err, ErrInvalidBroker) {
		t.Errorf("a directory id over %d bytes: %v, want ErrInvalidBroker", MaxDirectoryIDLen, err)
	}

	// The snapshot keeps the ids; a version 3 snapshot has none.
	enc := EncodeState(s)
	got, err := DecodeState(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Brokers(), s.Brokers()) || !bytes.Equal(EncodeState(got), enc) {
		t.Errorf("snapshot round trip: %+v, want %+v", got.Brokers(), s.Brokers())
	}
	for i := range enc {
		if _, err := DecodeState(enc[:i]); !errors.Is(err, ErrBadEncoding) {
			t.Fatalf("snapshot cut at %d/%d: %v, want ErrBadEncoding", i, len(enc), err)
		}
	}
	withIDs := func(v uint8, pairs ...any) []byte {
		e := EncodeState(populated(t))
		e[len(snapshotMagic)] = v
		e = e[:len(e)-emptyDirectoryIDsSection]
		w := &writer{b: e}
		if v >= 4 {
			w.uvarint(uint64(len(pairs) / 2))
			for i := 0; i < len(pairs); i += 2 {
				w.varint(int64(pairs[i].(int)))
				w.str(pairs[i+1].(string))
			}
		}
		return w.b
	}
	if got, err := DecodeState(withIDs(3)); err != nil || len(got.Brokers()) != 3 || got.Brokers()[0].DirectoryID != "" {
		t.Errorf("version 3 snapshot: %v, %v", got, err)
	}
	if got, err := DecodeState(withIDs(4, 1, "x", 3, "y")); err != nil {
		t.Errorf("two ids: %v", err)
	} else if b, _ := got.Broker(3); b.DirectoryID != "y" {
		t.Errorf("broker 3's id %q, want y", b.DirectoryID)
	}
	for name, bad := range map[string][]byte{
		"out of order":   withIDs(4, 3, "y", 1, "x"),
		"repeated":       withIDs(4, 1, "x", 1, "x"),
		"unknown broker": withIDs(4, 9, "x"),
		"empty id":       withIDs(4, 1, ""),
	} {
		if _, err := DecodeState(bad); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("%s: %v, want ErrBadEncoding", name, err)
		}
	}
}
