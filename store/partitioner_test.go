package store

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Known values of Kafka's Utils.murmur2: the vectors of Kafka's own
// UtilsTest.testMurmur2 and the ones Akka's Murmur2Spec quotes from Kafka.
// (kafkajs's legacy partitioner vectors are not Java's and are not used.)
func TestMurmur2KnownVectors(t *testing.T) {
	for key, want := range map[string]int32{
		"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
		"a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107, "1": -1993445489, "12": 126087238, "123": -267702483, "1234": -1614185708, "12345": -1188365604,
	} {
		if got := Murmur2([]byte(key)); got != want {
			t.Errorf("Murmur2(%q) = %d, want %d", key, got, want)
		}
	}
}

// franz-go's default keyed partitioner is Kafka-compatible
// (KafkaHasher(murmur2)); the store must put every key where it does.
func TestPartitionerMatchesFranzGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	part := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for i := range 100_000 {
		key := make([]byte, rng.IntN(40))
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		if i%3 == 0 {
			key = []byte("booking-" + strconv.Itoa(i))
		}
		n := 1 + rng.IntN(100)
		want := part.Partition(&kgo.Record{Key: key}, n)
		if got := PartitionForKey(key, n); int(got) != want {
			t.Fatalf("key %x over %d partitions: store %d, franz-go %d", key, n, got, want)
		}
	}
}

func TestOffsetsPartitionFor(t *testing.T) {
	// Java: "my-group".hashCode() == -1906497762 (31-polynomial over
	// UTF-16 units, wrapping); Kafka puts it in abs(h) % 50.
	cases := map[string]int32{"": 0, "a": 97 % 50, "my-group": 1906497762 % 50}
	for g, want := range cases {
		if got := OffsetsPartitionFor(g, 50); got != want {
			t.Errorf("OffsetsPartitionFor(%q) = %d, want %d", g, got, want)
		}
	}
	// Negative hashes are made positive, and non-ASCII counts UTF-16
	// units: "😀" is two surrogates.
	h := int32(0)
	for _, u := range []int32{0xD83D, 0xDE00} {
		h = 31*h + u
	}
	if h < 0 {
		h = -h
	}
	if got := OffsetsPartitionFor("😀", 50); got != h%50 {
		t.Errorf("emoji: %d, want %d", got, h%50)
	}
	for range 1000 {
		g := strconv.Itoa(rand.Int())
		if p := OffsetsPartitionFor(g, 7); p < 0 || p >= 7 {
			t.Fatalf("%q → %d", g, p)
		}
	}
}

// Keyless records: one call's go to one partition, and successive calls
// visit every partition in turn.
func TestStickyKeyless(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	defer s.Close()
	mustf(t, s.CreateTopic("t", 4, smallConfig()), "create")
	var order []int32
	for range 8 {
		res, err := s.Produce("t", kv("", "a"), kv("", "b"), kv("", "c"))
		mustf(t, err, "produce")
		for _, r := range res[1:] {
			if r.Partition != res[0].Partition {
				t.Fatalf("one call's keyless records split: %v", res)
			}
		}
		order = append(order, res[0].Partition)
	}
	for i := 1; i < len(order); i++ {
		if order[i] != (order[i-1]+1)%4 {
			t.Fatalf("keyless calls went to %v, want round robin", order)
		}
	}
}
