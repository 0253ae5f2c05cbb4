package meta

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/seglog/seglog/store"
)

// TestAssignKafka checks Assign against the assignment Kafka's
// AdminZkClientTest expects of assignReplicasToBrokers over brokers 0..4,
// 10 partitions, replication factor 3, start index 0.
func TestAssignKafka(t *testing.T) {
	want := [][]int32{
		{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
		{0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2},
	}
	got, err := Assign([]int32{4, 2, 0, 3, 1}, 0, 10, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestAssignReplicationFactor(t *testing.T) {
	for _, rf := range []int{0, -1, 4} {
		if _, err := Assign([]int32{1, 2, 3}, 0, 3, rf, 0, 0); !errors.Is(err, ErrInvalidReplicationFactor) {
			t.Errorf("rf %d over 3 brokers: %v, want ErrInvalidReplicationFactor", rf, err)
		}
	}
	if _, err := Assign(nil, 0, 3, 1, 0, 0); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Errorf("no brokers: %v", err)
	}
	s := populated(t)
	if _, err := NewCreateTopic(s, "u", 3, 4, nil, nil, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Errorf("rf 4 over 3 registered brokers: %v", err)
	}
	// Live brokers, when given, bound it rather than the registered ones.
	if _, err := NewCreateTopic(s, "u", 3, 3, nil, []int32{1, 2}, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Errorf("rf 3 over 2 live brokers: %v", err)
	}
}

// TestAssignSpreads is a property test: for random broker sets, counts,
// replication factors and random numbers, every list holds rf distinct
// brokers, leaders are spread evenly (counts differ by at most one), and
// the result depends on nothing but the inputs.
func TestAssignSpreads(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	for range 2000 {
		n := 1 + rnd.IntN(9)
		brokers := rnd.Perm(20)[:n]
		ids := make([]int32, n)
		for i, b := range brokers {
			ids[i] = int32(b)
		}
		parts, rf := 1+rnd.IntN(200), 1+rnd.IntN(n)
		start, shift := rnd.IntN(n), rnd.IntN(n)
		a, err := Assign(ids, 0, parts, rf, start, shift)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Assign(ids, 0, parts, rf, start, shift)
		if !reflect.DeepEqual(a, again) {
			t.Fatal("Assign is not deterministic")
		}
		leaders := map[int32]int{}
		for p, r := range a {
			if len(r) != rf {
				t.Fatalf("partition %d: %v, want %d replicas", p, r, rf)
			}
			for i, b := range r {
				if slices.Contains(r[:i], b) || !slices.Contains(ids, b) {
					t.Fatalf("partition %d: %v over brokers %v", p, r, ids)
				}
			}
			leaders[r[0]]++
		}
		checkEven(t, ids, leaders, parts)
	}
}

func checkEven(t *testing.T, ids []int32, leaders map[int32]int, parts int) {
	t.Helper()
	lo, hi := parts, 0
	for _, b := range ids {
		lo, hi = min(lo, leaders[b]), max(hi, leaders[b])
	}
	if hi-lo > 1 {
		t.Fatalf("%d partitions over %d brokers: leaders %v", parts, len(ids), leaders)
	}
}

// TestPlanCreatePartitions: new partitions continue the topic's leader
// rotation, so leaders stay even over the grown topic.
func TestPlanCreatePartitions(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	s := populated(t)
	for i := range 50 {
		name := "grow" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		c, err := NewCreateTopic(s, name, 1+rnd.IntN(10), 1+rnd.IntN(3), nil, nil, rnd)
		if err != nil {
			t.Fatal(err)
		}
		if s, _, err = s.apply(s.index+1, c); err != nil {
			t.Fatal(err)
		}
		total := s.Partitions(name) + 1 + rnd.IntN(10)
		cp, err := NewCreatePartitions(s, name, total, nil, rnd)
		if err != nil {
			t.Fatal(err)
		}
		if s, _, err = s.apply(s.index+1, cp); err != nil {
			t.Fatal(err)
		}
		tp, _ := s.Topic(name)
		leaders := map[int32]int{}
		for _, r := range tp.Replicas {
			leaders[r[0]]++
		}
		checkEven(t, s.BrokerIDs(), leaders, total)
	}
	if _, err := NewCreatePartitions(s, "growaa", 1, nil, rnd); !errors.Is(err, store.ErrInvalidPartitions) {
		t.Errorf("shrinking: %v", err)
	}
	if _, err := NewCreatePartitions(s, "nope", 9, nil, rnd); !errors.Is(err, store.ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
}

func TestPlanValidatesConfigs(t *testing.T) {
	s := populated(t)
	rnd := rand.New(rand.NewPCG(1, 1))
	if _, err := NewCreateTopic(s, "u", 1, 1, map[string]string{"retention.ms": "soon"}, nil, rnd); !errors.Is(err, store.ErrInvalidConfig) {
		t.Errorf("bad value: %v", err)
	}
	if _, err := NewCreateTopic(s, "u", 1, 1, map[string]string{"no.such.config": "1"}, nil, rnd); !errors.Is(err, store.ErrInvalidConfig) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := NewCreateTopic(s, "t", 1, 1, nil, nil, rnd); !errors.Is(err, store.ErrTopicExists) {
		t.Errorf("existing topic: %v", err)
	}
	if _, err := NewCreateTopic(s, "u", 0, 1, nil, nil, rnd); !errors.Is(err, store.ErrInvalidPartitions) {
		t.Errorf("0 partitions: %v", err)
	}
	if _, err := NewAlterTopicConfig(s, "t", false, map[string]string{"segment.bytes": "-3"}, nil); !errors.Is(err, store.ErrInvalidConfig) {
		t.Errorf("bad alter: %v", err)
	}
	if _, err := NewAlterTopicConfig(s, "t", false, nil, []string{"no.such.config"}); !errors.Is(err, store.ErrInvalidConfig) {
		t.Errorf("deleting an unknown name: %v", err)
	}
	if _, err := NewAlterTopicConfig(s, "u", false, nil, nil); !errors.Is(err, store.ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
	c, err := NewCreateTopic(s, "u", 4, 2, map[string]string{"retention.ms": "100"}, nil, rnd)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID[6]>>4 != 4 || c.ID[8]>>6 != 2 {
		t.Errorf("topic id %x is not a version 4 UUID", c.ID)
	}
	if _, _, err := s.apply(s.index+1, c); err != nil {
		t.Errorf("planned command refused: %v", err)
	}
}
