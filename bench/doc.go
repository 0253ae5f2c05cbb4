// Package bench holds seglog's workload benchmarks: the code behind
// "seglog bench". Each workload is a Config struct and a Run function, in the
// style of pebble's bench package, so the CLI, the smoke test and other
// programs drive the same code:
//
//	write    sequential appends (Append of built records, or AppendBatch of
//	         pre-built producer batches), any number of concurrent writers,
//	         any codec and sync policy — RunWrite
//	read     Log.Read + Slice.WriteTo to a loopback TCP peer — RunRead
//	lookup   Log.Read of random offsets (the offset-index path) — RunLookup
//	durable  Sync=always with 1, 2, 4 … N writers (group commit) — RunDurable
//	store    a store's keyed produce against plain Logs, its open with many
//	         partitions, and commits for many groups — RunStore
//	restart  seglog serve's restart after a SIGKILL against its restart
//	         after a clean stop, the server a child process (StartServe) —
//	         RunRestart
//
// The server workload with a real Kafka client, bench serve, is package
// bench/benchserve, apart so that only a seglog built with the benchextras
// tag links franz-go's kgo and kfake; the plots are bench/benchplot, for
// gonum.
//
// # Method
//
// A storage engine is chosen by its benchmark, so every number comes with
// the floor it is measured against, in the same process and the same run:
//
//   - write: a plain file append of the same batch bytes, one write(2) per
//     batch, with the same fsync policy (fdatasync after every write for
//     Sync=always; with N writers, N goroutines take turns on one file);
//   - read: sendfile(2) of the same file ranges to the same peer, with no
//     index, segment or log logic;
//   - lookup: a binary search over an in-memory array of the same batches.
//
// The engine (A) and the baseline (B) run in alternating rounds, A B B A A B
// …, after one untimed warm-up round of each, so drift of a shared, noisy
// machine (other jobs, page-cache state, CPU frequency) hits both sides
// alike, and neither is always first. Each round starts from the same state:
// the previous round's files are synced and removed, so both sides write
// into recycled page-cache pages. A result reports the median of the
// rounds' rates for each side, and Ratio is the median of the per-round
// ratios engine ÷ baseline (a pair of adjacent rounds shares the machine's
// state of the moment, so its ratio is steadier than either rate).
//
// Nothing is timed writing nothing: after each engine round the records are
// read back through Log.Records and counted (untimed), the baseline's file
// size is checked, and the read workload's receiver parses and CRC-checks
// every batch of its warm-up pass. Result.Verified counts what was checked.
//
// Latency is per append (or per read, per lookup) call, recorded in an HDR
// histogram by each writer and merged. CPU time is the process's user +
// system time (getrusage) over each side's timed rounds, so it includes the
// Go runtime (GC) and, for reads, the in-process receiver.
package bench
