// Command multiraft measures what one hashicorp/raft group per partition
// costs: N partitions, each a raft group of three replicas, on three
// in-process nodes that each serve all their groups on one port through
// internal/cluster/raftmux (issue 30 asks whether hundreds of partitions fit
// on three nodes before settling on hashicorp/raft).
//
//	go run ./bench/multiraft -partitions 300 -profile default
//
// It starts 3 × N raft.Raft instances over raft.InmemStore and
// raft.InmemSnapshotStore (the measurement is of consensus traffic and
// timers, not of a log store's disk writes, which docs/raft.md measures),
// waits until every partition has a leader, then measures:
//
//   - idle: CPU seconds per wall second of the whole process (getrusage),
//     goroutines, Go heap, resident memory, TCP connections, and the RPCs
//     and bytes per second the groups exchange with nothing to replicate;
//   - load: committed Apply calls per second of 100-byte commands spread
//     over every partition, and the CPU they took;
//   - failover: the node leading the most partitions dies (its Mux closed,
//     so its peers see every connection drop at once, then its rafts shut
//     down), and for each partition it led, the time until a survivor leads
//     and until a command commits through it.
//
// Every node, and both ends of every connection, share this process and the
// machine's cores, so the CPU figures are the cost of the three nodes
// together.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/vfs"
)

// profiles are the raft timeouts compared. hashicorp/raft sends a
// heartbeat every HeartbeatTimeout/10 to 2×HeartbeatTimeout/10, and an
// AppendEntries every CommitTimeout to 2×CommitTimeout even when idle (so
// followers learn the commit index), so those two set the idle RPC rate;
// a follower notices a dead leader after HeartbeatTimeout to twice that.
var profiles = map[string]func() *raft.Config{
	"default": raft.DefaultConfig,
	"tuned":   tuned,
	// The tuned timeouts with idle commit-index pushes ten times rarer:
	// a follower learns the commit index late only while nothing is
	// written.
	"tuned-lazy": func() *raft.Config {
		c := tuned()
		c.CommitTimeout = 500 * time.Millisecond
		return c
	},
	// A slower heartbeat: hashicorp/raft ties its period to
	// HeartbeatTimeout, so this slows failure detection too.
	"slow": func() *raft.Config {
		c := raft.DefaultConfig()
		c.HeartbeatTimeout = 2 * time.Second
		c.ElectionTimeout = 2 * time.Second
		c.LeaderLeaseTimeout = time.Second
		c.CommitTimeout = 500 * time.Millisecond
		return c
	},
}

// tuned is what a failover within 3 s asks for: half the default
// timeouts.
func tuned() *raft.Config {
	c := raft.DefaultConfig()
	c.HeartbeatTimeout = 500 * time.Millisecond
	c.ElectionTimeout = 500 * time.Millisecond
	c.LeaderLeaseTimeout = 250 * time.Millisecond
	return c
}

// settle bounds every wait for all partitions to have a leader.
var settle time.Duration

func main() {
	parts := flag.Int("partitions", 300, "partitions, each a raft group of 3 replicas (one per node)")
	idle := flag.Duration("idle", 20*time.Second, "how long to measure the idle cost")
	profile := flag.String("profile", "default", "raft timeouts: default, tuned, tuned-lazy or slow")
	loadFor := flag.Duration("load", 5*time.Second, "how long to apply commands (0 skips)")
	inflight := flag.Int("inflight", 4, "Apply calls outstanding per partition under load")
	maxPool := flag.Int("maxpool", 2, "NetworkTransport MaxPool: idle connections kept per peer and group")
	noFailover := flag.Bool("no-failover", false, "skip the failover measurement")
	flag.DurationVar(&settle, "settle", 2*time.Minute, "how long to wait for every partition to have a stable leader")
	engine := flag.String("engine", "hashicorp", "hashicorp (one raft.Raft per replica) or etcd (the go.etcd.io/raft/v3 prototype: one goroutine and one connection per peer for all groups)")
	flag.Parse()
	if *engine == "etcd" {
		if err := runEtcd(*parts, *idle, *profile, !*noFailover); err != nil {
			fmt.Fprintln(os.Stderr, "multiraft:", err)
			os.Exit(1)
		}
		return
	}
	conf, ok := profiles[*profile]
	if !ok {
		fmt.Fprintf(os.Stderr, "multiraft: unknown profile %q\n", *profile)
		os.Exit(2)
	}
	if err := run(*parts, *idle, *profile, conf, *loadFor, *inflight, *maxPool, !*noFailover); err != nil {
		fmt.Fprintln(os.Stderr, "multiraft:", err)
		os.Exit(1)
	}
}

func run(parts int, idle time.Duration, profile string, conf func() *raft.Config, loadFor time.Duration, inflight, maxPool int, failover bool) error {
	raiseFileLimit()
	c0 := conf()
	fmt.Printf("multiraft: %d partitions × RF 3 on 3 in-process nodes, one raftmux port each on 127.0.0.1\n", parts)
	fmt.Printf("stores: raft.InmemStore + InmemSnapshotStore; NetworkTransport MaxPool %d; GOMAXPROCS %d\n", maxPool, runtime.GOMAXPROCS(0))
	fmt.Printf("profile %s: HeartbeatTimeout %v, ElectionTimeout %v, LeaderLeaseTimeout %v, CommitTimeout %v\n",
		profile, c0.HeartbeatTimeout, c0.ElectionTimeout, c0.LeaderLeaseTimeout, c0.CommitTimeout)
	fmt.Printf("machine load before: %s\n", loadavg())

	c, err := newCluster(3, parts)
	if err != nil {
		return err
	}
	defer c.shutdown()
	start := time.Now()
	if err := c.start(conf, maxPool); err != nil {
		return err
	}
	cpu0 := bench.CPUTime()
	progress := func(led int) {
		fmt.Printf("  %3.0f s: %d of %d partitions led; %.2f CPU s/s so far, RSS %.0f MiB, %d TCP conns, %d goroutines, machine load %s; %s\n",
			time.Since(start).Seconds(), led, parts, (bench.CPUTime()-cpu0).Seconds()/time.Since(start).Seconds(),
			rssMiB(), c.openConns(), runtime.NumGoroutine(), loadavg(), c.muxStats())
	}
	if err := c.waitLeaders(settle, progress); err != nil {
		progress(-1)
		return err
	}
	fmt.Printf("all %d partitions led after %.1f s (from the first NewRaft); leaders per node %v\n",
		parts, time.Since(start).Seconds(), c.leaderCounts())
	// Let the elections' connections and timers settle before measuring.
	time.Sleep(3 * time.Second)

	runtime.GC()
	var resp0, in0 uint64
	var t0 time.Time
	cpu0, resp0, in0, t0 = bench.CPUTime(), c.cnt.responses.Load(), c.cnt.inBytes.Load(), time.Now()
	time.Sleep(idle)
	wall := time.Since(t0).Seconds()
	cpu := (bench.CPUTime() - cpu0).Seconds() / wall
	rpcs := float64(c.cnt.responses.Load()-resp0) / wall
	kbs := float64(c.cnt.inBytes.Load()-in0) / wall / 1024
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("idle over %.0f s: %.3f CPU s/s, %.0f RPC/s, %.0f KiB/s of requests, leaders per node %v, machine load %s\n",
		wall, cpu, rpcs, kbs, c.leaderCounts(), loadavg())
	fmt.Println()
	fmt.Println("| partitions | profile | CPU s/s idle | CPU ms/s per partition | goroutines | heap in use MiB | RSS MiB | TCP conns | open fds | RPC/s | request KiB/s |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	fmt.Printf("| %d | %s | %.3f | %.2f | %d | %.0f | %.0f | %d | %d | %.0f | %.0f |\n",
		parts, profile, cpu, 1000*cpu/float64(parts), runtime.NumGoroutine(), float64(ms.HeapInuse)/(1<<20),
		rssMiB(), c.openConns(), openFDs(), rpcs, kbs)

	if loadFor > 0 {
		cpu0, t0 = bench.CPUTime(), time.Now()
		n, err := c.load(loadFor, 100, inflight)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		wall := time.Since(t0).Seconds()
		fmt.Println()
		fmt.Println("| partitions | profile | load: commits/s (100 B, RF 3) | in flight per partition | CPU s/s |")
		fmt.Println("|---:|---|---:|---:|---:|")
		fmt.Printf("| %d | %s | %.0f | %d | %.2f |\n", parts, profile, float64(n)/wall, inflight, (bench.CPUTime()-cpu0).Seconds()/wall)
		if err := c.waitLeaders(settle, func(int) {}); err != nil {
			return err
		}
		time.Sleep(2 * time.Second)
	}

	if failover {
		counts := c.leaderCounts()
		victim := 0
		for i, n := range counts {
			if n > counts[victim] {
				victim = i
			}
		}
		fmt.Printf("\nfailover: node %d, leading %d of %d partitions, dies (machine load %s)\n", victim+1, counts[victim], parts, loadavg())
		elected, committed, err := c.failover(victim, 30*time.Second)
		if err != nil {
			return fmt.Errorf("failover: %w", err)
		}
		printFailover(parts, profile, elected, committed)
	}
	fmt.Printf("\nraftmux: %s\n", c.muxStats())
	fmt.Printf("machine load after: %s\n", loadavg())
	return nil
}

// median is bench.Median of the durations, in seconds.
func median(ds []time.Duration) float64 {
	s := make([]float64, len(ds))
	for i, d := range ds {
		s[i] = d.Seconds()
	}
	return bench.Median(s)
}

// raiseFileLimit lifts the open-file limit as far as it goes: three nodes
// in one process hold both ends of every connection.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	want := syscall.Rlimit{Cur: 1 << 20, Max: 1 << 20}
	if lim.Max >= want.Max || syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) != nil {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	fmt.Printf("open-file limit %d\n", lim.Cur)
}

// loadavg is the machine's 1, 5 and 15 minute load averages, as uptime
// prints them.
func loadavg() string {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return "?"
	}
	l := func(v uint64) float64 { return float64(v) / (1 << 16) }
	return fmt.Sprintf("%.2f %.2f %.2f", l(si.Loads[0]), l(si.Loads[1]), l(si.Loads[2]))
}

// rssMiB is the process's resident memory now, from /proc/self/statm.
func rssMiB() float64 {
	f, err := vfs.Default.Open("/proc/self/statm")
	if err != nil {
		return -1
	}
	defer f.Close()
	// A proc file reports size 0: read what is there.
	buf := make([]byte, 128)
	n, _ := f.ReadAt(buf, 0)
	fields := strings.Fields(string(buf[:n]))
	if len(fields) < 2 {
		return -1
	}
	pages, err := strconv.ParseFloat(fields[1], 64)
	if err != nil {
		return -1
	}
	return pages * float64(os.Getpagesize()) / (1 << 20)
}

// openFDs is how many file descriptors the process holds (sockets,
// mostly).
func openFDs() int {
	names, err := vfs.Default.List("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(names)
}

// runEtcd measures the etcd prototype's idle cost and failover. Its
// profiles set the tick: ElectionTick is 10 and HeartbeatTick 1, so the
// default 100 ms tick matches hashicorp's defaults (a heartbeat every
// 100 ms, a follower campaigns after 1 to 2 s without one) and tuned halves
// both.
func runEtcd(parts int, idle time.Duration, profile string, failover bool) error {
	ticks := map[string]time.Duration{"default": 100 * time.Millisecond, "tuned": 50 * time.Millisecond}
	tick, ok := ticks[profile]
	if !ok {
		return fmt.Errorf("the etcd engine has profiles default and tuned, not %q", profile)
	}
	raiseFileLimit()
	fmt.Printf("multiraft -engine etcd: %d partitions × RF 3 on 3 in-process nodes, go.etcd.io/raft/v3 RawNodes, one raftmux port each on 127.0.0.1\n", parts)
	fmt.Printf("stores: raft.MemoryStorage; one driver goroutine and one connection to each peer per node; GOMAXPROCS %d\n", runtime.GOMAXPROCS(0))
	fmt.Printf("profile %s: tick %v, ElectionTick 10, HeartbeatTick 1, CheckQuorum, PreVote\n", profile, tick)
	fmt.Printf("machine load before: %s\n", loadavg())
	start := time.Now()
	c, err := newEtcdCluster(3, parts, tick)
	if err != nil {
		return err
	}
	defer c.shutdown()
	if err := c.waitLeaders(settle); err != nil {
		return err
	}
	fmt.Printf("all %d partitions led after %.1f s; leaders per node %v\n", parts, time.Since(start).Seconds(), c.leaderCounts())
	time.Sleep(3 * time.Second)

	runtime.GC()
	cpu0, sent0, t0 := bench.CPUTime(), c.sent.Load(), time.Now()
	time.Sleep(idle)
	wall := time.Since(t0).Seconds()
	cpu := (bench.CPUTime() - cpu0).Seconds() / wall
	msgs := float64(c.sent.Load()-sent0) / wall
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("idle over %.0f s: %.3f CPU s/s, %.0f messages/s, leaders per node %v, machine load %s\n",
		wall, cpu, msgs, c.leaderCounts(), loadavg())
	fmt.Println()
	fmt.Println("| partitions | engine/profile | CPU s/s idle | CPU ms/s per partition | goroutines | heap in use MiB | RSS MiB | TCP conns | open fds | messages/s |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	fmt.Printf("| %d | etcd %s | %.3f | %.3f | %d | %.0f | %.0f | %d | %d | %.0f |\n",
		parts, profile, cpu, 1000*cpu/float64(parts), runtime.NumGoroutine(), float64(ms.HeapInuse)/(1<<20),
		rssMiB(), c.openConns(), openFDs(), msgs)

	if failover {
		counts := c.leaderCounts()
		victim := 0
		for i, n := range counts {
			if n > counts[victim] {
				victim = i
			}
		}
		fmt.Printf("\nfailover: node %d, leading %d of %d partitions, dies (machine load %s)\n", victim+1, counts[victim], parts, loadavg())
		elected, committed, err := c.failover(victim, 30*time.Second)
		if err != nil {
			return fmt.Errorf("failover: %w", err)
		}
		printFailover(parts, "etcd "+profile, elected, committed)
	}
	fmt.Printf("\nmachine load after: %s\n", loadavg())
	return nil
}

// printFailover prints the failover table's row.
func printFailover(parts int, profile string, elected, committed []time.Duration) {
	fmt.Println()
	fmt.Println("| partitions | profile | groups failed over | new leader median s | max s | first commit median s | max s | commits over 3 s |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|")
	over := 0
	for _, d := range committed {
		if d > 3*time.Second {
			over++
		}
	}
	if len(elected) == 0 {
		fmt.Printf("| %d | %s | 0 | | | | | |\n", parts, profile)
		return
	}
	fmt.Printf("| %d | %s | %d | %.2f | %.2f | %.2f | %.2f | %d |\n", parts, profile, len(elected),
		median(elected), slices.Max(elected).Seconds(), median(committed), slices.Max(committed).Seconds(), over)
}
