package meta

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/seglog/seglog/store"
)

// sampleCommands holds one of each command, with every field set.
func sampleCommands() []Command {
	return []Command{
		&RegisterBroker{ID: 3, Host: "h3", Port: 9092, RaftAddr: "h3:9093"},
		&SetBrokerDirectory{Broker: 4, DirectoryID: "7dQ8Bq3XRUu8pVhTjT2zvA"},
		&CreateTopic{Name: "t", ID: [16]byte{1, 2, 3}, Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"},
			Replicas: [][]int32{{1, 2}, {2, 3}, {3, 1}}},
		&DeleteTopic{Name: "t"},
		&AlterTopicConfig{Name: "t", Set: map[string]string{"retention.ms": "5"}, Delete: []string{"cleanup.policy"}},
		&AlterTopicConfig{Name: "t", Replace: true, Set: map[string]string{"segment.bytes": "1048576"}},
		&CreatePartitions{Name: "t", From: 3, Replicas: [][]int32{{1, 3}}},
		&AllocateProducerIDs{Broker: 2},
		&SetCredential{Credentials: []Credential{sampleCredential("alice", "SCRAM-SHA-256", 32), sampleCredential("bob", "SCRAM-SHA-512", 64)}, Bootstrap: true},
		&DeleteCredential{User: "alice", Mechanism: "SCRAM-SHA-256"},
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, c := range sampleCommands() {
		b, err := Encode(c)
		if err != nil {
			t.Fatalf("%T: %v", c, err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%T: %v", c, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%T: decoded %+v, want %+v", c, got, c)
		}
		// Every strict prefix is refused, not misread.
		for i := range b {
			if _, err := Decode(b[:i]); !errors.Is(err, ErrBadEncoding) {
				t.Fatalf("%T: prefix of %d/%d bytes: %v, want ErrBadEncoding", c, i, len(b), err)
			}
		}
		if _, err := Decode(append(b, 0)); !errors.Is(err, ErrBadEncoding) {
			t.Errorf("%T with a trailing byte: %v, want ErrBadEncoding", c, err)
		}
	}
}

func TestDecodeRefusesUnknown(t *testing.T) {
	b, err := Encode(&DeleteTopic{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	newer := bytes.Clone(b)
	newer[1] = commandVersion + 1
	if _, err := Decode(newer); !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("version %d: %v, want ErrUnsupportedVersion", newer[1], err)
	}
	unknown := bytes.Clone(b)
	unknown[0] = 200
	if _, err := Decode(unknown); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("type 200: %v, want ErrUnknownCommand", err)
	}
	// A length far past the input is refused before anything is made.
	huge := []byte{byte(kindCreateTopic), commandVersion, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := Decode(huge); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("huge length: %v, want ErrBadEncoding", err)
	}
	// Map keys out of order have another encoding, so they are refused.
	w := &writer{}
	w.u8(uint8(kindAlterTopicConfig))
	w.u8(commandVersion)
	w.str("t")
	w.bool(false)
	w.uvarint(2)
	w.str("b")
	w.str("1")
	w.str("a")
	w.str("2")
	w.strs(nil)
	if _, err := Decode(w.b); !errors.Is(err, ErrBadEncoding) {
		t.Errorf("unsorted map: %v, want ErrBadEncoding", err)
	}
}

// FuzzCommand: Decode never panics, and what it accepts re-encodes to
// bytes that decode to the same command and encode again identically.
func FuzzCommand(f *testing.F) {
	for _, c := range sampleCommands() {
		b, err := Encode(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{byte(kindCreateTopic), commandVersion, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrBadEncoding) && !errors.Is(err, ErrUnknownCommand) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("untyped refusal: %v", err)
			}
			return
		}
		e1, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := Decode(e1)
		if err != nil {
			t.Fatalf("re-encoded %T does not decode: %v", c, err)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("%+v re-decoded as %+v", c, c2)
		}
		e2, err := Encode(c2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e1, e2) {
			t.Fatalf("encoding is not stable: %x then %x", e1, e2)
		}
		// Applying any decoded command to a populated state never
		// panics, and a refusal leaves the state as it was.
		s := populated(t)
		before := EncodeState(s)
		if _, _, err := s.apply(s.index+1, c); err != nil && !bytes.Equal(EncodeState(s), before) {
			t.Fatalf("refused %T changed the state", c)
		}
	})
}

// populated returns a state with brokers 1..3 and a topic "t" of three
// partitions, replication factor 2.
func populated(t testing.TB) *State {
	t.Helper()
	s := emptyState()
	cmds := []Command{
		&RegisterBroker{ID: 1, Host: "h1", Port: 9092, RaftAddr: "h1:9093"},
		&RegisterBroker{ID: 2, Host: "h2", Port: 9092, RaftAddr: "h2:9093"},
		&RegisterBroker{ID: 3, Host: "h3", Port: 9092, RaftAddr: "h3:9093"},
		&CreateTopic{Name: "t", ID: [16]byte{1}, Replicas: [][]int32{{1, 2}, {2, 3}, {3, 1}}},
	}
	for _, c := range cmds {
		var err error
		if s, _, err = s.apply(s.index+1, c); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestApplyValidates(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
		want error
	}{
		{"negative broker id", &RegisterBroker{ID: -1, Host: "h", Port: 1, RaftAddr: "r"}, ErrInvalidBroker},
		{"empty host", &RegisterBroker{ID: 4, Port: 1, RaftAddr: "r"}, ErrInvalidBroker},
		{"port 0", &RegisterBroker{ID: 4, Host: "h", RaftAddr: "r"}, ErrInvalidBroker},
		{"port 65536", &RegisterBroker{ID: 4, Host: "h", Port: 65536, RaftAddr: "r"}, ErrInvalidBroker},
		{"no raft address", &RegisterBroker{ID: 4, Host: "h", Port: 1}, ErrInvalidBroker},
		{"topic exists", &CreateTopic{Name: "t", ID: [16]byte{9}, Replicas: [][]int32{{1}}}, store.ErrTopicExists},
		{"topic collides", &CreateTopic{Name: "a.b", ID: [16]byte{9}, Replicas: [][]int32{{1}}}, nil},
		{"bad name", &CreateTopic{Name: "a/b", ID: [16]byte{9}, Replicas: [][]int32{{1}}}, store.ErrInvalidTopic},
		{"zero id", &CreateTopic{Name: "u", Replicas: [][]int32{{1}}}, ErrInvalidTopicID},
		{"id taken", &CreateTopic{Name: "u", ID: [16]byte{1}, Replicas: [][]int32{{1}}}, ErrInvalidTopicID},
		{"no partitions", &CreateTopic{Name: "u", ID: [16]byte{9}}, store.ErrInvalidPartitions},
		{"empty replicas", &CreateTopic{Name: "u", ID: [16]byte{9}, Replicas: [][]int32{{}}}, ErrInvalidReplicaAssignment},
		{"uneven rf", &CreateTopic{Name: "u", ID: [16]byte{9}, Replicas: [][]int32{{1, 2}, {1}}}, ErrInvalidReplicaAssignment},
		{"broker twice", &CreateTopic{Name: "u", ID: [16]byte{9}, Replicas: [][]int32{{1, 1}}}, ErrInvalidReplicaAssignment},
		{"unregistered replica", &CreateTopic{Name: "u", ID: [16]byte{9}, Replicas: [][]int32{{1, 7}}}, ErrUnknownBroker},
		{"empty config name", &CreateTopic{Name: "u", ID: [16]byte{9}, Replicas: [][]int32{{1}}, Configs: map[string]string{"": "x"}}, store.ErrInvalidConfig},
		{"delete unknown", &DeleteTopic{Name: "u"}, store.ErrUnknownTopic},
		{"alter unknown", &AlterTopicConfig{Name: "u"}, store.ErrUnknownTopic},
		{"replace and delete", &AlterTopicConfig{Name: "t", Replace: true, Delete: []string{"retention.ms"}}, store.ErrInvalidConfig},
		{"partitions of unknown", &CreatePartitions{Name: "u", From: 0, Replicas: [][]int32{{1}}}, store.ErrUnknownTopic},
		{"stale plan", &CreatePartitions{Name: "t", From: 2, Replicas: [][]int32{{1, 2}}}, ErrStalePlan},
		{"no new partitions", &CreatePartitions{Name: "t", From: 3}, store.ErrInvalidPartitions},
		{"new partitions' rf differs", &CreatePartitions{Name: "t", From: 3, Replicas: [][]int32{{1}}}, ErrInvalidReplicaAssignment},
		{"new partition on unregistered broker", &CreatePartitions{Name: "t", From: 3, Replicas: [][]int32{{1, 9}}}, ErrUnknownBroker},
		{"pids for unregistered broker", &AllocateProducerIDs{Broker: 9}, ErrUnknownBroker},
	}
	s := populated(t)
	before := EncodeState(s)
	for _, c := range cases {
		want := c.want
		if want == nil {
			want = store.ErrInvalidTopic // "a.b" collides with "a_b" below
		}
		base := s
		if c.name == "topic collides" {
			var err error
			base, _, err = s.apply(s.index+1, &CreateTopic{Name: "a_b", ID: [16]byte{8}, Replicas: [][]int32{{1}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		baseBytes := EncodeState(base)
		got, res, err := base.apply(base.index+1, c.cmd)
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", c.name, err, want)
		}
		if !errors.Is(res.Err, want) || got != base || !bytes.Equal(EncodeState(base), baseBytes) {
			t.Errorf("%s: a refused command changed the state or answered %v", c.name, res.Err)
		}
	}
	if !bytes.Equal(EncodeState(s), before) {
		t.Error("applying commands modified the state they were applied to")
	}
}

func TestApplyCommands(t *testing.T) {
	s := populated(t)
	apply := func(c Command) Result {
		t.Helper()
		n, res, err := s.apply(s.index+1, c)
		if err != nil {
			t.Fatalf("%T: %v", c, err)
		}
		s = n
		return res
	}
	// Re-registering moves a broker's addresses and bumps its epoch.
	res := apply(&RegisterBroker{ID: 2, Host: "new", Port: 19092, RaftAddr: "new:9093"})
	if b, _ := s.Broker(2); b.Host != "new" || b.Port != 19092 || b.Epoch != res.Epoch || res.Epoch != s.Index() {
		t.Errorf("re-registered broker %+v, result %+v", b, res)
	}
	apply(&AlterTopicConfig{Name: "t", Set: map[string]string{"retention.ms": "5", "cleanup.policy": "compact"}})
	apply(&AlterTopicConfig{Name: "t", Set: map[string]string{"segment.bytes": "1048576"}, Delete: []string{"cleanup.policy"}})
	if tp, _ := s.Topic("t"); !reflect.DeepEqual(tp.Configs, map[string]string{"retention.ms": "5", "segment.bytes": "1048576"}) {
		t.Errorf("incremental changes left %v", tp.Configs)
	}
	apply(&AlterTopicConfig{Name: "t", Replace: true, Set: map[string]string{"retention.bytes": "7"}})
	if tp, _ := s.Topic("t"); !reflect.DeepEqual(tp.Configs, map[string]string{"retention.bytes": "7"}) {
		t.Errorf("replacing change left %v", tp.Configs)
	}
	apply(&CreatePartitions{Name: "t", From: 3, Replicas: [][]int32{{1, 3}, {2, 1}}})
	if r, ok := s.Replicas("t", 4); s.Partitions("t") != 5 || !ok || !reflect.DeepEqual(r, []int32{2, 1}) {
		t.Errorf("after CreatePartitions: %d partitions, partition 4 %v", s.Partitions("t"), r)
	}
	b1 := apply(&AllocateProducerIDs{Broker: 1}).Block
	b2 := apply(&AllocateProducerIDs{Broker: 3}).Block
	if b1 != (ProducerIDBlock{Broker: 1, First: 0, Size: ProducerIDBlockSize}) || b2.First != b1.First+b1.Size || s.NextProducerID() != b2.First+b2.Size {
		t.Errorf("blocks %+v %+v, next %d", b1, b2, s.NextProducerID())
	}
	if last, _ := s.LastProducerIDBlock(3); last != b2 {
		t.Errorf("last block of broker 3 %+v, want %+v", last, b2)
	}
	apply(&DeleteTopic{Name: "t"})
	if _, ok := s.Topic("t"); ok || len(s.TopicNames()) != 0 {
		t.Errorf("deleted topic still there: %v", s.TopicNames())
	}
}

func TestOffsetsTopicIsProtected(t *testing.T) {
	s := populated(t)
	s, _, err := s.apply(s.index+1, &CreateTopic{Name: store.OffsetsTopic, ID: [16]byte{5}, Replicas: [][]int32{{1, 2}, {2, 3}, {3, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.apply(s.index+1, &DeleteTopic{Name: store.OffsetsTopic}); !errors.Is(err, store.ErrInternalTopic) {
		t.Errorf("deleting the offsets topic: %v", err)
	}
	if _, _, err := s.apply(s.index+1, &CreatePartitions{Name: store.OffsetsTopic, From: 3, Replicas: [][]int32{{1, 2}}}); !errors.Is(err, store.ErrInternalTopic) {
		t.Errorf("growing the offsets topic: %v", err)
	}
	for _, g := range []string{"g", "orders", "a-much-longer-group-name"} {
		p, r, ok := s.CoordinatorPartition(g)
		want := store.OffsetsPartitionFor(g, 3)
		if !ok || p != want || !reflect.DeepEqual(r, s.topics[store.OffsetsTopic].Replicas[want]) {
			t.Errorf("group %q: partition %d replicas %v, want partition %d", g, p, r, want)
		}
	}
	if _, _, ok := emptyState().CoordinatorPartition("g"); ok {
		t.Error("a coordinator without an offsets topic")
	}
}
