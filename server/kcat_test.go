package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testenv"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func kcatLines(n int, tag string) (string, []string) {
	var in strings.Builder
	var want []string
	for i := range n {
		line := fmt.Sprintf("key%d:%s value %d %s", i%5, tag, i, strings.Repeat("x", i%40))
		in.WriteString(line + "\n")
		want = append(want, line)
	}
	return in.String(), want
}

// advertisesKey says whether the server (with its group coordinator)
// advertises key at version v.
func advertisesKey(ts *testServer, key, v int16) bool {
	var coord *coordinator
	testutil.WaitFor(ts.t, "the server started its group coordinator", func() bool {
		ts.srv.mu.Lock()
		defer ts.srv.mu.Unlock()
		coord = ts.srv.coord
		return coord != nil
	})
	return slices.ContainsFunc(apiKeys(coord), func(k kmsg.ApiVersionsResponseApiKey) bool {
		return k.ApiKey == key && k.MinVersion <= v && v <= k.MaxVersion
	})
}

// TestKcatEveryCodec: kcat -P -z CODEC stores batches carrying that codec,
// and kcat -C -o beginning -e reads every line back.
func TestKcatEveryCodec(t *testing.T) {
	testenv.LookPath(t, "kcat", "kcat")
	ts := startServer(t, "", Options{})
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := "kcat-" + codec
			in, want := kcatLines(300, codec)
			testenv.Kcat(t, []string{ts.addr}, in, "-P", "-t", topic, "-K", ":", "-z", codec, "-X", "linger.ms=200")
			out := testenv.Kcat(t, []string{ts.addr}, "", "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n")
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if !slices.Equal(got, want) {
				t.Fatalf("read back %d lines, want %d; first got %q", len(got), len(want), got[0])
			}
			wantCodec := map[string]record.Codec{"none": record.None, "gzip": record.Gzip, "snappy": record.Snappy, "lz4": record.LZ4, "zstd": record.Zstd}[codec]
			// librdkafka sends lz4 only to a broker advertising
			// FindCoordinator v0, which the group coordinator does: a
			// coordinator that stopped would show here as plain batches.
			// librdkafka sends a batch uncompressed when compressing
			// would make it larger (a batch of one short line), so
			// batches may be plain; the rest must carry the codec.
			checkStoredCodecOrPlain(t, ts.st, topic, wantCodec)
		})
	}
}

// TestKcatIdempotent: librdkafka's idempotent producer gets a producer id
// and its batches carry it.
func TestKcatIdempotent(t *testing.T) {
	testenv.LookPath(t, "kcat", "kcat")
	ts := startServer(t, "", Options{})
	in, want := kcatLines(50, "idem")
	testenv.Kcat(t, []string{ts.addr}, in, "-P", "-t", "idem", "-K", ":", "-X", "enable.idempotence=true")
	out := testenv.Kcat(t, []string{ts.addr}, "", "-C", "-t", "idem", "-o", "beginning", "-e", "-f", "%k:%s\n")
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
		t.Fatalf("read back %d lines, want %d", len(got), len(want))
	}
	l, err := ts.st.Log("idem", 0)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := l.Read(0, 1<<20, seglogReadAll)
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	hdr := make([]byte, record.HeaderSize)
	if _, err := sl.ReadAt(hdr, 0); err != nil {
		t.Fatal(err)
	}
	if b := record.Batch(hdr); b.ProducerID() < 0 || b.BaseSequence() != 0 {
		t.Fatalf("first batch: producer id %d, sequence %d; want an idempotent batch", b.ProducerID(), b.BaseSequence())
	}
}

// TestKcatGroup: kcat -G consumes a topic as a group member.
func TestKcatGroup(t *testing.T) {
	testenv.LookPath(t, "kcat", "kcat")
	ts := startServer(t, "", Options{NumPartitions: 2})
	if !advertisesKey(ts, 11, 0) {
		t.Fatal("the group coordinator does not advertise JoinGroup v0")
	}
	in, want := kcatLines(40, "grp")
	testenv.Kcat(t, []string{ts.addr}, in, "-P", "-t", "grp", "-K", ":")
	out := testenv.Kcat(t, []string{ts.addr}, "", "-G", "g1", "-o", "beginning", "-e", "-f", "%k:%s\n", "grp")
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("group read %d lines, want %d", len(got), len(want))
	}
}

// checkStoredCodecOrPlain checks that every stored batch of topic has codec
// want or none, and that most records are in batches of codec want.
func checkStoredCodecOrPlain(t *testing.T, st *store.Store, topic string, want record.Codec) {
	t.Helper()
	n, err := st.Partitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	var inCodec, total int
	for p := range int32(n) {
		for _, b := range storedBatches(t, st, topic, p) {
			if c := b.Codec(); c != want && c != record.None {
				t.Fatalf("%s-%d: batch at %d has codec %v, want %v (or none)", topic, p, b.BaseOffset(), c, want)
			}
			if b.Codec() == want {
				inCodec += int(b.NumRecords())
			}
			total += int(b.NumRecords())
		}
	}
	if total == 0 || inCodec*2 < total {
		t.Fatalf("%s: %d of %d records in %v batches", topic, inCodec, total, want)
	}
}
