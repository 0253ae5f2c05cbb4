package benchcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/bench"
)

// Config is the workload of seglog bench cluster (Run).
type Config struct {
	// Records of RecordSize value bytes are produced to Partitions
	// partitions by each system in each round.
	Records    int
	RecordSize int
	Partitions int
	// Rounds is how many times each system produces and consumes, the
	// order alternating from round to round.
	Rounds int
	// Kills is how many times the failover phase kills a partition's
	// leader.
	Kills int
	// FailoverRate is the records a second the failover phase's producer
	// offers; 0 is as fast as acknowledgments come.
	FailoverRate int
	// MetadataMinAge is the clients' kgo.MetadataMinAge: how soon after a
	// metadata refresh a client may refresh again, so how soon a
	// producer that met a dead leader can learn the new one.
	MetadataMinAge time.Duration
}

// Check returns an error for a Config that cannot run.
func (c Config) Check() error {
	switch {
	case c.Partitions < 1:
		return fmt.Errorf("invalid partitions %d: at least 1", c.Partitions)
	case c.Records < c.Partitions:
		return fmt.Errorf("invalid --records %d: must be at least --partitions %d", c.Records, c.Partitions)
	case c.RecordSize < 1:
		return fmt.Errorf("invalid record size %d: at least 1", c.RecordSize)
	case c.Rounds < 1:
		return fmt.Errorf("invalid rounds %d: at least 1", c.Rounds)
	case c.Kills < 0:
		return fmt.Errorf("invalid kills %d: not negative", c.Kills)
	case c.FailoverRate < 0:
		return fmt.Errorf("invalid failover rate %d: not negative", c.FailoverRate)
	case c.MetadataMinAge <= 0:
		return fmt.Errorf("invalid metadata min age %v: must be positive", c.MetadataMinAge)
	}
	return nil
}

// Round is one system's figures in one round.
type Round struct {
	ProduceRecsSec float64
	ConsumeMBs     float64
	// ProduceCPUSecPerGB and ConsumeCPUSecPerGB are the server
	// processes' CPU time (user+system, every node's) per GB of values
	// produced or consumed, from /proc in 10 ms ticks.
	ProduceCPUSecPerGB float64
	ConsumeCPUSecPerGB float64
}

// Side is one system's result: the medians of its rounds.
type Side struct {
	Name               string
	ProduceRecsSec     float64
	ProduceMBs         float64
	ConsumeMBs         float64
	ProduceCPUSecPerGB float64
	ConsumeCPUSecPerGB float64
	Rounds             []Round
}

// Failover is one kill of a partition's leader.
type Failover struct {
	Partition int32
	Killed    int32 // the node killed, the partition's leader
	NewLeader int32 // the leader Metadata named after the kill
	// AckSec is the time from the SIGKILL to the first acknowledgment of
	// a record on the partition received after the killed process was
	// gone: the outage a producer with acks=all sees.
	AckSec float64
	// LeaderSec is the time from the SIGKILL to the first Metadata answer
	// naming another leader for the partition (asked every 20 ms).
	LeaderSec float64
	// ListenSec is the time the killed node took to say it listens when
	// started again; RejoinSec the time from that start until every
	// replica of every partition was back in its ISR; -1 if that never
	// happened (the run failed there).
	ListenSec float64
	RejoinSec float64
}

// Check is the checker's verdict on the failover phase's history.
type Check struct {
	Acked     int
	Failed    int // produces that failed (stored or not, either is allowed)
	Uncertain int // failed produces found stored
	Read      int
	// Violations are the broken rules, one a line (internal/nemesis's
	// checker): a record acknowledged and not read back, read twice, read
	// at another offset than its acknowledgment's...
	Violations []string
}

// OK reports whether the history broke no rule.
func (c Check) OK() bool { return len(c.Violations) == 0 }

// Result is bench cluster's figures.
type Result struct {
	Config Config
	// LoadBefore and LoadAfter are the machine's 1-minute load average
	// when the run started and when it ended.
	LoadBefore, LoadAfter float64
	Single                Side // one node, replication factor 1
	// Synced is the same node with topics of flush.messages=1: each
	// batch fsynced before its acknowledgment, as each replica of the
	// cluster syncs what it acknowledges (raft's rule), where Single
	// leaves the writeback to the kernel (Kafka's default).
	Synced  Side
	Cluster Side // three nodes, replication factor 3
	// ProduceRatio and ConsumeRatio are the medians of the rounds'
	// ratios of rates, the cluster's over the single node's.
	ProduceRatio  float64
	ConsumeRatio  float64
	ProduceRatios []float64
	ConsumeRatios []float64
	// SyncedProduceRatio is the median of the rounds' ratios of produce
	// rates, the cluster's over Synced's: the cost of three copies at
	// the same durability of each.
	SyncedProduceRatio  float64
	SyncedProduceRatios []float64
	Failovers           []Failover
	// The medians and maxima of the failovers' figures; ListenMedianSec
	// and RejoinMedian are -1 when no restarted node got that far.
	AckMedianSec, AckMaxSec       float64
	LeaderMedianSec, LeaderMaxSec float64
	ListenMedianSec, RejoinMedian float64
	// FailoverRecords is how many records the failover phase's producer
	// offered, and a final mark on each partition the read-back reads up
	// to: the ones acknowledged and the ones failed.
	FailoverRecords int
	// Check is the checker's verdict, nil when the failover phase failed
	// before the records were read back (or had no kills).
	Check *Check
}

// Run measures the workload cfg on a single node and on a cluster, with
// their stores below tmp, starting seglog serve with sc; progress gets a
// line per phase. A run whose checker found a broken rule (ErrCheck), one
// of whose nodes did not stop cleanly, or whose failover phase failed
// returns what it measured, to be printed, with the error.
func Run(ctx context.Context, progress io.Writer, tmp string, cfg Config, sc bench.ServeCommand) (*Result, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, LoadBefore: bench.LoadAverage()}
	say := func(format string, args ...any) { fmt.Fprintf(progress, "bench cluster: "+format+"\n", args...) }
	value := make([]byte, cfg.RecordSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}

	say("starting 1 node and %d nodes", Nodes)
	var singleLog nodeLog
	ssc := sc
	ssc.Stderr = &singleLog
	single, err := bench.StartServeArgs(ctx, ssc, filepath.Join(tmp, "single"), "--listen", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("single node: %w\n%s", err, singleLog.tail(logLines))
	}
	defer single.Stop()
	cl, err := startCluster(ctx, sc, filepath.Join(tmp, "cluster"))
	if err != nil {
		return nil, err
	}
	defer cl.kill()

	singleLogs := func() string { return "\n--- the single node's last lines:\n" + singleLog.tail(logLines) }
	systems := []*system{
		{name: "1 node, RF 1", brokers: []string{single.Addr}, rf: 1, cpu: single.CPU, logs: singleLogs},
		{name: "1 node, RF 1, synced", brokers: []string{single.Addr}, rf: 1, cpu: single.CPU, logs: singleLogs,
			configs: []string{"flush.messages=1"}},
		{name: fmt.Sprintf("%d nodes, RF %d", Nodes, Nodes), brokers: cl.brokers(), rf: Nodes, cpu: cl.cpu, logs: cl.logs},
	}
	for r := range cfg.Rounds {
		// Each round starts with the next system: each comes first,
		// after another, and last equally often (the page cache and the
		// heap the one before leaves change what a phase costs).
		order := append(slices.Clone(systems[r%len(systems):]), systems[:r%len(systems)]...)
		for _, s := range order {
			say("round %d of %d: %s", r+1, cfg.Rounds, s.name)
			round, err := s.round(ctx, cfg, fmt.Sprintf("bench-%d-%d", r, slices.Index(systems, s)), value)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w%s", s.name, r+1, err, s.logs())
			}
			s.rounds = append(s.rounds, round)
		}
	}
	res.Single, res.Synced, res.Cluster = systems[0].side(cfg), systems[1].side(cfg), systems[2].side(cfg)
	for i := range cfg.Rounds {
		c := res.Cluster.Rounds[i]
		res.ProduceRatios = append(res.ProduceRatios, ratio(c.ProduceRecsSec, res.Single.Rounds[i].ProduceRecsSec))
		res.ConsumeRatios = append(res.ConsumeRatios, ratio(c.ConsumeMBs, res.Single.Rounds[i].ConsumeMBs))
		res.SyncedProduceRatios = append(res.SyncedProduceRatios, ratio(c.ProduceRecsSec, res.Synced.Rounds[i].ProduceRecsSec))
	}
	res.ProduceRatio, res.ConsumeRatio = bench.Median(res.ProduceRatios), bench.Median(res.ConsumeRatios)
	res.SyncedProduceRatio = bench.Median(res.SyncedProduceRatios)
	// The single node is done: its process would only take CPU from the
	// cluster while the failovers are timed.
	single.Stop()

	if cfg.Kills > 0 {
		say("failover: %d kills of a partition's leader while producing", cfg.Kills)
		err := failovers(ctx, say, cl, cfg, res)
		summarizeFailovers(res)
		if err != nil {
			// The rounds and the kills before the failure were measured:
			// they are returned with the failure.
			res.LoadAfter = bench.LoadAverage()
			return res, fmt.Errorf("failover: %w%s", err, cl.logs())
		}
	}
	say("stopping the cluster")
	res.LoadAfter = bench.LoadAverage()
	// A node that does not stop cleanly (one that panicked after its
	// restart, say) fails the run, but the figures were measured: both
	// are returned.
	var errs []error
	if res.Check != nil && !res.Check.OK() {
		errs = append(errs, ErrCheck)
	}
	if err := cl.stop(); err != nil {
		errs = append(errs, fmt.Errorf("%w%s", err, cl.logs()))
	}
	return res, errors.Join(errs...)
}

// ErrCheck is returned with the Result of a run whose failover history
// broke a rule of the checker: an acknowledged record lost, duplicated or
// moved.
var ErrCheck = errors.New("bench cluster: the checker found acknowledged records lost, duplicated or moved")

// system is one side of the comparison, and its rounds so far.
type system struct {
	name    string
	brokers []string
	rf      int
	configs []string // the topics' configs, key=value
	cpu     func() (time.Duration, error)
	logs    func() string // the end of its servers' logs, for errors
	rounds  []Round
}

// deliveryTimeout bounds how long a round's record waits to be
// acknowledged (kgo retries for ever by default), so that a system that
// cannot store (a full disk under a majority of the nodes) fails the
// round, with its nodes' logs, instead of hanging the run. A failover
// takes seconds; a variable for the test.
var deliveryTimeout = time.Minute

// roundClient is a round's producer: newClient's, writing to topic round
// robin, each record given deliveryTimeout.
func roundClient(brokers []string, minAge time.Duration, topic string) (*kgo.Client, error) {
	return newClient(brokers, minAge, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordDeliveryTimeout(deliveryTimeout))
}

// round creates topic on s, produces the round's records to it and reads
// them back from the partitions' leaders, timing both and reading the
// server processes' CPU around each.
func (s *system) round(ctx context.Context, cfg Config, topic string, value []byte) (Round, error) {
	cl, err := roundClient(s.brokers, cfg.MetadataMinAge, topic)
	if err != nil {
		return Round{}, err
	}
	defer cl.Close()
	if err := createTopic(ctx, cl, s.brokers, topic, cfg.Partitions, s.rf, s.configs...); err != nil {
		return Round{}, err
	}
	// The earlier phases leave dirty pages the kernel would make this
	// one wait for (bench.FlushDirtyPages).
	bench.FlushDirtyPages()
	cpu0, err := s.cpu()
	if err != nil {
		return Round{}, err
	}
	p, err := produceAll(ctx, cl, topic, cfg.Records, value)
	if err != nil {
		return Round{}, err
	}
	cpu1, err := s.cpu()
	if err != nil {
		return Round{}, err
	}
	gb := float64(cfg.Records) * float64(cfg.RecordSize) / 1e9
	round := Round{ProduceRecsSec: float64(cfg.Records) / p.elapsed.Seconds(), ProduceCPUSecPerGB: (cpu1 - cpu0).Seconds() / gb}
	// The produce left its own dirty pages (three copies of them on a
	// cluster), whose writeback would run under the consume.
	bench.FlushDirtyPages()
	if cpu1, err = s.cpu(); err != nil {
		return Round{}, err
	}
	bytes, el, err := consumeAll(ctx, s.brokers, cfg.MetadataMinAge, topic, p.perPartition)
	if err != nil {
		return Round{}, err
	}
	cpu2, err := s.cpu()
	if err != nil {
		return Round{}, err
	}
	round.ConsumeMBs = float64(bytes) / el.Seconds() / 1e6
	round.ConsumeCPUSecPerGB = (cpu2 - cpu1).Seconds() / (float64(bytes) / 1e9)
	return round, nil
}

// side is the medians of s's rounds.
func (s *system) side(cfg Config) Side {
	med := func(f func(Round) float64) float64 {
		xs := make([]float64, len(s.rounds))
		for i, r := range s.rounds {
			xs[i] = f(r)
		}
		return bench.Median(xs)
	}
	recs := med(func(r Round) float64 { return r.ProduceRecsSec })
	return Side{
		Name: s.name, ProduceRecsSec: recs, ProduceMBs: recs * float64(cfg.RecordSize) / 1e6,
		ConsumeMBs:         med(func(r Round) float64 { return r.ConsumeMBs }),
		ProduceCPUSecPerGB: med(func(r Round) float64 { return r.ProduceCPUSecPerGB }),
		ConsumeCPUSecPerGB: med(func(r Round) float64 { return r.ConsumeCPUSecPerGB }),
		Rounds:             slices.Clone(s.rounds),
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
