package meta

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// TestRegisterBrokerUnchanged: RegisterBroker keeps the version 1
// encoding an older build decodes (the directory id is a command of its
// own), so such a node still applies every registration.
func TestRegisterBrokerUnchanged(t *testing.T) {
	w := &writer{}
	w.u8(uint8(kindRegisterBroker))
	w.u8(1)
	w.varint(3)
	w.str("h3")
	w.varint(9092)
	w.str("h3:9093")
	b, err := Encode(&RegisterBroker{ID: 3, Host: "h3", Port: 9092, RaftAddr: "h3:9093"})
	if err != nil || !bytes.Equal(b, w.b) {
		t.Errorf("RegisterBroker encodes as %x, %v; version 1 is %x", b, err, w.b)
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
	reg := func(id int32) *RegisterBroker {
		return &RegisterBroker{ID: id, Host: "h", Port: 9092, RaftAddr: "h:9093"}
	}
	if _, err := apply(&SetBrokerDirectory{Broker: 1, DirectoryID: "A"}); !errors.Is(err, ErrUnknownBroker) {
		t.Errorf("directory of an unregistered broker: %v, want ErrUnknownBroker", err)
	}
	if _, err := apply(reg(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckDirectory(1, "B"); err != nil {
		t.Errorf("a broker without a directory id refused B: %v", err)
	}
	for _, bad := range []string{"", string(make([]byte, MaxDirectoryIDLen+1))} {
		if _, err := apply(&SetBrokerDirectory{Broker: 1, DirectoryID: bad}); !errors.Is(err, ErrInvalidBroker) {
			t.Errorf("directory id of %d bytes: %v, want ErrInvalidBroker", len(bad), err)
		}
	}
	if _, err := apply(&SetBrokerDirectory{Broker: 1, DirectoryID: "A"}); err != nil {
		t.Fatal(err)
	}
	first, _ := s.Broker(1)
	if first.DirectoryID != "A" {
		t.Fatalf("broker 1's directory id %q, want A", first.DirectoryID)
	}
	if err := s.CheckDirectory(1, "B"); !errors.Is(err, ErrDirectoryID) || !strings.Contains(err.Error(), "directory.id=A") {
		t.Errorf("registering broker 1 from B: %v, want ErrDirectoryID naming A", err)
	}
	for _, dir := range []string{"A", ""} {
		if err := s.CheckDirectory(1, dir); err != nil {
			t.Errorf("registering broker 1 from %q: %v", dir, err)
		}
	}
	before := s
	if _, err := apply(&SetBrokerDirectory{Broker: 1, DirectoryID: "B"}); !errors.Is(err, ErrDirectoryID) || s != before {
		t.Errorf("setting broker 1's directory to B: %v (state changed: %v), want ErrDirectoryID and no change", err, s != before)
	}
	// A registration again keeps the id, with a new epoch.
	if res, err := apply(reg(1)); err != nil || res.Epoch <= first.Epoch {
		t.Errorf("registering again: epoch %d, %v; want above %d", res.Epoch, err, first.Epoch)
	}
	if b, _ := s.Broker(1); b.DirectoryID != "A" {
		t.Errorf("after registering again broker 1's directory id is %q, want A", b.DirectoryID)
	}
	if _, err := apply(reg(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(&SetBrokerDirectory{Broker: 2, DirectoryID: "C"}); err != nil {
		t.Fatal(err)
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

// TestUnreadableEntry: an entry a newer build wrote (an unknown command
// type, or a version this build does not read) marks the State as
// unreadable from it on, refuses snapshots past it, and leaves the rest
// of the state as it was; damage does not.
func TestUnreadableEntry(t *testing.T) {
	f := NewFSM()
	applyAll(t, f, &RegisterBroker{ID: 1, Host: "h", Port: 1, RaftAddr: "r"})
	damaged := []byte{byte(kindDeleteTopic), commandVersion, 0xff}
	f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: damaged})
	if err := f.State().Unreadable(); err != nil {
		t.Fatalf("a damaged entry marked the state unreadable: %v", err)
	}
	if _, err := f.Snapshot(); err != nil {
		t.Fatal(err)
	}
	newer := []byte{200, commandVersion}
	res, _ := f.Apply(&raft.Log{Index: 3, Type: raft.LogCommand, Data: newer}).(Result)
	err := f.State().Unreadable()
	if !errors.Is(res.Err, ErrUnknownCommand) || !errors.Is(err, ErrNewerMetadata) || !errors.Is(err, ErrUnknownCommand) || !strings.Contains(err.Error(), "entry 3") {
		t.Fatalf("unknown command: result %v, state %v; want ErrNewerMetadata naming entry 3", res.Err, err)
	}
	if b, ok := f.State().Broker(1); !ok || b.Host != "h" {
		t.Errorf("broker 1 after the unreadable entry: %+v, %v", b, ok)
	}
	if _, err := f.Snapshot(); !errors.Is(err, ErrNewerMetadata) {
		t.Errorf("snapshot past the unreadable entry: %v, want ErrNewerMetadata", err)
	}
	// The first such entry is the one named; later ones apply as before.
	v2 := []byte{byte(kindDeleteTopic), commandVersion + 1}
	f.Apply(&raft.Log{Index: 4, Type: raft.LogCommand, Data: v2})
	applyAll(t, f, &RegisterBroker{ID: 2, Host: "h2", Port: 1, RaftAddr: "r2"})
	if err := f.State().Unreadable(); !strings.Contains(err.Error(), "entry 3") {
		t.Errorf("after a second: %v, want entry 3 still", err)
	}
	if _, ok := f.State().Broker(2); !ok {
		t.Error("a command after the unreadable entry was not applied")
	}
	g := NewFSM()
	g.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: v2})
	if err := g.State().Unreadable(); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("a newer version: %v, want ErrUnsupportedVersion", err)
	}
}
