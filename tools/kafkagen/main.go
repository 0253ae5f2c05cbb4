// Command kafkagen produces records with a real Kafka client (franz-go
// kgo) against an in-process fake broker (kfake) and captures the exact
// record batches the client put on the wire, per compression codec. Output
// is a corpus of producer batches plus the records they hold, for checking
// a storage engine's append path against batches it did not build itself:
// testdata/kafka-client was made with it (its README gives the command).
//
// It uses only modules seglog already requires (kgo, kfake and kmsg are
// in go.mod for the server's tests and bench serve), and touches files
// through vfs like the rest of the module; kfake writes its own data
// directory.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/vfs"
)

// fs is every file kafkagen reads or writes.
var fs = vfs.Default

type rec struct {
	Key       *string           `json:"key"`   // base64, nil = null key
	Value     *string           `json:"value"` // base64, nil = tombstone
	Headers   map[string]string `json:"headers,omitempty"`
	Timestamp int64             `json:"timestamp_ms"`
	Aborted   bool              `json:"aborted,omitempty"` // written inside an aborted transaction
}

func main() {
	out := flag.String("out", "corpus", "output dir")
	n := flag.Int("n", 3000, "records per codec")
	keys := flag.Int("keys", 64, "distinct keys")
	seed := flag.Int64("seed", 1, "seed")
	maxValue := flag.Int("max-value", 2048, "largest ordinary value size")
	bigEvery := flag.Int("big-every", 50, "one record in this many gets a 64 KiB value (0: never)")
	flushEvery := flag.Int("flush-every", 500, "records between flushes (and transaction ends)")
	flag.Parse()
	codecs := []struct {
		name string
		c    kgo.CompressionCodec
	}{{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()}, {"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()}}
	must(fs.MkdirAll(*out))
	for _, cd := range codecs {
		dataDir := filepath.Join(os.TempDir(), fmt.Sprintf("kafkagen-kfake-%d-%s", os.Getpid(), cd.name))
		must(removeTree(dataDir)) // a leftover of an earlier run with this pid
		must(fs.MkdirAll(dataDir))
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.DataDir(dataDir))
		must(err)
		var mu sync.Mutex
		var raw []byte
		nb := 0
		c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			req := r.(*kmsg.ProduceRequest)
			mu.Lock()
			for _, t := range req.Topics {
				for _, p := range t.Partitions {
					raw = append(raw, p.Records...)
					nb++
				}
			}
			mu.Unlock()
			return nil, nil, false
		})
		txn := cd.name == "zstd" // one codec also writes transactions: commit and abort markers
		opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("t"),
			kgo.ProducerBatchCompression(cd.c), kgo.ProducerLinger(5 * time.Millisecond),
			kgo.ProducerBatchMaxBytes(256 << 10), kgo.MaxBufferedRecords(1 << 20)}
		if txn {
			opts = append(opts, kgo.TransactionalID("gen-txn"))
		}
		cl, err := kgo.NewClient(opts...)
		must(err)
		if txn {
			must(cl.BeginTransaction())
		}
		aborted := map[int]bool{}
		rng := rand.New(rand.NewSource(*seed))
		var recs []rec
		var wg sync.WaitGroup
		for i := 0; i < *n; i++ {
			r := &kgo.Record{Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)*37)}
			var jr rec
			if rng.Intn(20) != 0 {
				k := []byte(fmt.Sprintf("key-%04d", rng.Intn(*keys)))
				r.Key = k
				s := base64.StdEncoding.EncodeToString(k)
				jr.Key = &s
			}
			if rng.Intn(15) != 0 { // else tombstone
				sz := rng.Intn(*maxValue)
				if *bigEvery > 0 && rng.Intn(*bigEvery) == 0 {
					sz = 64 << 10
				}
				v := make([]byte, sz)
				for j := range v {
					v[j] = byte('a' + rng.Intn(8)) // compressible
				}
				r.Value = v
				s := base64.StdEncoding.EncodeToString(v)
				jr.Value = &s
			}
			if rng.Intn(4) == 0 {
				r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprint(i))}}
				jr.Headers = map[string]string{"trace": fmt.Sprint(i)}
			}
			jr.Timestamp = r.Timestamp.UnixMilli()
			recs = append(recs, jr)
			wg.Add(1)
			cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) { must(err); wg.Done() })
			if i%*flushEvery == *flushEvery-1 {
				must(cl.Flush(context.Background()))
				if txn {
					commit := (i / *flushEvery)%3 != 1
					if !commit {
						for j := i - *flushEvery + 1; j <= i; j++ {
							aborted[j] = true
						}
					}
					must(cl.EndTransaction(context.Background(), kgo.TransactionEndTry(commit)))
					must(cl.BeginTransaction())
				}
			}
		}
		wg.Wait()
		must(cl.Flush(context.Background()))
		if txn {
			must(cl.EndTransaction(context.Background(), kgo.TryCommit))
		}
		cl.Close()
		c.Close()
		var brokerLog []byte
		must(walkFiles(dataDir, func(path string) error {
			if filepath.Ext(path) == ".dat" {
				b, err := vfs.ReadFileLimit(fs, path, math.MaxInt64)
				if err != nil {
					return err
				}
				brokerLog = append(brokerLog, b...)
			}
			return nil
		}))
		must(vfs.WriteFileAtomic(fs, filepath.Join(*out, cd.name+".broker-log"), brokerLog))
		must(removeTree(dataDir))
		must(vfs.WriteFileAtomic(fs, filepath.Join(*out, cd.name+".batches"), raw))
		var jsonl strings.Builder
		enc := json.NewEncoder(&jsonl)
		for i, r := range recs {
			if aborted[i] {
				r.Aborted = true
			}
			must(enc.Encode(r))
		}
		must(vfs.WriteFileAtomic(fs, filepath.Join(*out, cd.name+".records.jsonl"), []byte(jsonl.String())))
		fmt.Printf("%s: %d producer batches, %d bytes, %d records; broker log %d bytes\n", cd.name, nb, len(raw), len(recs), len(brokerLog))
	}
}

// walkFiles calls fn with the path of every file below dir, in name order
// (kfake's segment files sort by offset).
func walkFiles(dir string, fn func(path string) error) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := fs.Stat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			err = walkFiles(p, fn)
		} else {
			err = fn(p)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// removeTree removes dir and everything below it; a dir that does not
// exist is not an error.
func removeTree(dir string) error {
	if _, err := fs.Stat(dir); os.IsNotExist(err) {
		return nil
	}
	var files []string
	if err := walkFiles(dir, func(p string) error { files = append(files, p); return nil }); err != nil {
		return err
	}
	for _, f := range files {
		if err := fs.Remove(f); err != nil {
			return err
		}
	}
	return removeDirs(dir)
}

// removeDirs removes the (now fileless) directory tree at dir, deepest
// first.
func removeDirs(dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := removeDirs(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return fs.Remove(dir)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
