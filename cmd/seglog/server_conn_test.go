package main

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog/store"
)

// TestProduceTopicThroughServer: produce --topic beside the server that
// holds the store goes through it (serverConn) and places records as the
// store does: a keyed record in its key's partition, a call's keyless
// records in one partition; --verbose gives each record's partition and
// offset, in input order, and they are where consume finds them. A
// partition's share of a call that would make a batch over the server's
// limit goes as several batches, in order.
func TestProduceTopicThroughServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	const partitions = 3
	mustInvoke(t, "", "topics", "create", dir, "t", "--partitions", strconv.Itoa(partitions))
	addr, stop := startServe(t, dir)

	var in strings.Builder
	var want []string // "key value" in input order; key "" for keyless
	for i := range 30 {
		if i%3 == 2 {
			v := fmt.Sprintf("keyless-%d", i)
			in.WriteString(v + "\n")
			want = append(want, " "+v)
			continue
		}
		k, v := fmt.Sprintf("k%d", i%7), fmt.Sprintf("v%d", i)
		in.WriteString(k + "\t" + v + "\n")
		want = append(want, k+" "+v)
	}
	// Three values whose sum is over maxServerBatch, all keyless: one
	// partition, two batches.
	big := strings.Repeat("x", maxServerBatch/2)
	for i := range 3 {
		in.WriteString(fmt.Sprintf("big%d-%s\n", i, big))
		want = append(want, fmt.Sprintf(" big%d-%s", i, big))
	}
	r := mustInvoke(t, in.String(), "produce", dir, "--topic", "t", "--verbose", "--batch", "1000")
	if !strings.Contains(r.stderr, "through the server at "+addr) {
		t.Fatalf("produce beside the server did not go through it: %q", r.stderr)
	}
	type place struct {
		p   int32
		off int64
	}
	var got []place
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || !strings.HasPrefix(f[1], "t-") {
			continue
		}
		p, err1 := strconv.Atoi(strings.TrimPrefix(f[1], "t-"))
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("verbose line %q", line)
		}
		got = append(got, place{int32(p), off})
	}
	if len(got) != len(want) {
		t.Fatalf("--verbose placed %d records, want %d:\n%.2000s", len(got), len(want), r.stdout)
	}
	keyless := int32(-1)
	next := map[int32]int64{}
	for i, w := range want {
		k, _, _ := strings.Cut(w, " ")
		switch {
		case k != "":
			if p := store.PartitionForKey([]byte(k), partitions); got[i].p != p {
				t.Errorf("record %d (key %s) went to partition %d, the store's partitioner says %d", i, k, got[i].p, p)
			}
		case keyless < 0:
			keyless = got[i].p
		case got[i].p != keyless:
			t.Errorf("record %d, keyless, went to partition %d; the call's others to %d", i, got[i].p, keyless)
		}
		if got[i].off != next[got[i].p] {
			t.Errorf("record %d got offset %d in partition %d, want %d", i, got[i].off, got[i].p, next[got[i].p])
		}
		next[got[i].p] = got[i].off + 1
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	// Each partition holds its records in input order.
	for p := range int32(partitions) {
		var wantHere []string
		for i, w := range want {
			if got[i].p == p {
				wantHere = append(wantHere, w)
			}
		}
		recs := parseConsumed(t, mustInvoke(t, "", "consume", filepath.Join(dir, fmt.Sprintf("t-%d", p)), "--json").stdout)
		if len(recs) != len(wantHere) {
			t.Fatalf("t-%d holds %d records, want %d", p, len(recs), len(wantHere))
		}
		for i, rec := range recs {
			var k, v []byte
			var err error
			if rec.Key != nil {
				if k, err = base64.StdEncoding.DecodeString(*rec.Key); err != nil {
					t.Fatal(err)
				}
			}
			if v, err = base64.StdEncoding.DecodeString(*rec.Value); err != nil {
				t.Fatal(err)
			}
			if g := string(k) + " " + string(v); g != wantHere[i] || rec.Offset != int64(i) {
				t.Fatalf("t-%d offset %d holds %.40q, want %.40q at offset %d", p, rec.Offset, g, wantHere[i], i)
			}
		}
	}
}
