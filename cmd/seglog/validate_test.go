package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/vfs/vfstest"
)

// TestBadCommandLinesChangeNothing runs every command with values out of
// range and flags that do not apply to it: each is a usage error (exit 2,
// fsck's 8) naming the flag, followed by the command's usage line, and
// found before anything is opened or created: the directory the commands
// were pointed at (a log, a store, a path that does not exist yet, an
// empty --dir) is unchanged, contents and mtimes. On the main before this
// test every case exited 1 or 0, and serve wrote a whole store first.
func TestBadCommandLinesChangeNothing(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(root, "log")
	mustInvoke(t, "a\nb\nc\n", "produce", log)
	st := filepath.Join(root, "store")
	mustInvoke(t, "", "topics", "create", st, "t", "--partitions", "2")
	mustInvoke(t, "k\tv\n", "produce", st, "--topic", "t")
	batches := filepath.Join(root, "batches")
	writeVFS(t, batches, []byte("never read: the command line is refused first"))
	empty := filepath.Join(root, "empty")
	writeVFS(t, filepath.Join(empty, "keep"), nil)
	fresh := filepath.Join(root, "new") // must stay missing

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	cases := []struct {
		args []string
		want string // in the message: the flag, the range
		code int    // 0: 2, the usage status
	}{
		// serve: every flag checked and the listener bound before the
		// store is created.
		{[]string{"serve", fresh, "--listen", "bogus"}, "invalid --listen \"bogus\"", 0},
		{[]string{"serve", fresh, "--listen", "127.0.0.1:70000"}, "invalid --listen", 0},
		{[]string{"serve", fresh, "--listen", busy.Addr().String()}, "address already in use", 1},
		{[]string{"serve", st, "--listen", busy.Addr().String()}, "address already in use", 1},
		{[]string{"serve", fresh, "--advertise", "bogus"}, "invalid --advertise", 0},
		{[]string{"serve", fresh, "--advertise", ":9092"}, "no host", 0},
		{[]string{"serve", fresh, "--advertise", "h:0"}, "bad port", 0},
		{[]string{"serve", fresh, "--max-request-bytes", "0"}, "invalid --max-request-bytes 0: must be from 1 to 2147483647", 0},
		{[]string{"serve", fresh, "--max-request-bytes", "-1"}, "invalid --max-request-bytes -1", 0},
		{[]string{"serve", fresh, "--num-partitions", "0"}, "invalid --num-partitions 0: must be from 1 to 100000", 0},
		{[]string{"serve", fresh, "--num-partitions", "-3"}, "invalid --num-partitions -3", 0},
		{[]string{"serve", fresh, "--node-id", "-1"}, "invalid --node-id -1: must not be negative", 0},
		{[]string{"serve", fresh, "--grace", "-1s"}, "invalid --grace -1s: must not be negative", 0},
		{[]string{"serve", fresh, "--group-initial-rebalance-delay", "-1s"}, "invalid --group-initial-rebalance-delay -1s", 0},
		{[]string{"serve", fresh, "--config", "nokey"}, "not key=value", 0},
		{[]string{"serve", st, "--config", "bogus=1"}, `unknown config "bogus"`, 0},
		{[]string{"serve", fresh, "--num-partitions", "abc"}, `invalid argument "abc" for "--num-partitions"`, 0},
		{[]string{"serve"}, "accepts 1 arg(s), received 0", 0},
		// ui: the listener first, before the store or the playground.
		{[]string{"ui", st, "--listen", "bogus"}, "invalid --listen", 0},
		{[]string{"ui", st, "--listen", busy.Addr().String()}, "address already in use", 1},
		{[]string{"ui", "--playground", st}, "--playground takes no DIR", 0},
		// consume
		{[]string{"consume", log, "--raw", "--follow"}, "give --follow or --raw, not both", 0},
		{[]string{"consume", log, "--raw", "--json"}, "give --json or --raw, not both", 0},
		{[]string{"consume", log, "--max-batch-bytes", "0"}, "invalid --max-batch-bytes 0", 0},
		{[]string{"consume", log, "--group", "g"}, "--group only applies with --topic", 0},
		{[]string{"consume", log, "--from-beginning"}, "--from-beginning only applies with --topic", 0},
		{[]string{"consume", st, "--topic", "t", "--max-batch-bytes", "5"}, "--max-batch-bytes does not apply with --topic", 0},
		{[]string{"consume", st, "--topic", "t", "--from", "3"}, "--from does not apply with --topic", 0},
		// produce
		{[]string{"produce", log, "--batch", "0"}, "invalid --batch 0: must be from 1 to 2147483647", 0},
		{[]string{"produce", fresh, "--batch", "0"}, "invalid --batch 0", 0},
		{[]string{"produce", log, "--linger", "-1ms"}, "invalid --linger -1ms", 0},
		{[]string{"produce", log, "--batches", batches, "--batch", "5"}, "--batch does not apply with --batches", 0},
		{[]string{"produce", log, "--batches", batches, "--compression", "gzip"}, "--compression does not apply with --batches", 0},
		{[]string{"produce", log, "--sync-bytes", "5"}, "--sync-bytes only applies with --sync periodic", 0},
		{[]string{"produce", log, "--sync", "sometimes"}, "invalid --sync \"sometimes\"", 0},
		{[]string{"produce", log, "--segment-ms", "0"}, "invalid --segment-ms 0", 0},
		{[]string{"produce", log, "--segment-bytes", "10"}, "--segment-bytes 10", 0},
		{[]string{"produce", log, "--verbose"}, "--verbose only applies with --topic", 0},
		{[]string{"produce", st, "--topic", "t", "--segment-bytes", "100000"}, "--segment-bytes does not apply with --topic", 0},
		{[]string{"produce", st, "--topic", "t", "--linger", "1s"}, "--linger does not apply with --topic", 0},
		// clean: the append flags are not its own; the rules before the log.
		{[]string{"clean", log, "--retention-ms", "1", "--compression", "gzip"}, "unknown flag: --compression", 0},
		{[]string{"clean", log, "--retention-ms", "1", "--leader-epoch", "1"}, "unknown flag: --leader-epoch", 0},
		{[]string{"clean", log, "--retention-ms", "1", "--timestamp-type", "append"}, "unknown flag: --timestamp-type", 0},
		{[]string{"clean", log, "--retention-ms", "1", "--sync", "always"}, "unknown flag: --sync", 0},
		{[]string{"clean", log, "--retention-ms", "-2"}, "invalid --retention-ms -2: must be at least -1", 0},
		{[]string{"clean", log, "--delete-retention-ms", "5"}, "--delete-retention-ms only applies with --compact", 0},
		{[]string{"clean", log, "--compact", "--dry-run"}, "--dry-run does not apply with --compact", 0},
		{[]string{"clean", log}, "nothing to do", 0},
		{[]string{"clean", log, "--dry-run", "--retention-ms", "1", "--segment-bytes", "100000"}, "--segment-bytes does not apply with --dry-run", 0},
		// dump and fsck: a read limit of 0 or less was taken as the default.
		{[]string{"dump", log, "--max-entry-bytes", "-1"}, "invalid --max-entry-bytes -1: must be from 1 to 2147483647", 0},
		{[]string{"dump", log, "--max-entry-bytes", "0"}, "invalid --max-entry-bytes 0", 0},
		{[]string{"fsck", log, "--max-entry-bytes", "-1"}, "invalid --max-entry-bytes -1", 8},
		{[]string{"fsck", log, "--index-interval-bytes", "100"}, "--index-interval-bytes only applies with --repair", 8},
		{[]string{"fsck", log, "--repair", "--index-interval-bytes", "-1"}, "invalid --index-interval-bytes -1", 8},
		{[]string{"fsck", log, "--truncate-damaged"}, "--truncate-damaged only applies with --repair", 8},
		{[]string{"fsck", log, "--max-entry-bytes", "9", "--max-batch-bytes", "9"}, "not both", 8},
		// demo, before its directory is made.
		{[]string{"demo", "--dir", fresh, "--records", "0"}, "invalid --records 0: must be at least 1", 0},
		{[]string{"demo", "--dir", fresh, "--batch", "0"}, "invalid --batch 0", 0},
		{[]string{"demo", "--dir", fresh, "--size", "-1"}, "invalid --size -1", 0},
		// topics and groups
		{[]string{"topics", "create", st, "x", "--partitions", "0"}, "invalid --partitions 0: must be from 1 to 100000", 0},
		{[]string{"topics", "create", fresh, "x", "--config", "nokey"}, "not key=value", 0},
		{[]string{"topics", "create", fresh, "bad/name"}, "invalid topic name", 0},
		{[]string{"topics", st, "add-partitions", "t"}, `required flag(s) "partitions" not set`, 0},
		{[]string{"topics", "add-partitions", st, "t", "--partitions", "-1"}, "invalid --partitions -1", 0},
		{[]string{"groups", "reset", st, "g", "--to-earliest"}, `required flag(s) "topic" not set`, 0},
		{[]string{"groups", "reset", st, "g", "--topic", "t", "--to-offset", "-1"}, "invalid --to-offset -1", 0},
		{[]string{"groups", "reset", st, "g", "--topic", "t", "--to-datetime", "yesterday"}, "--to-datetime \"yesterday\"", 0},
		{[]string{"groups", "reset", st, "g", "--topic", "t"}, "exactly one of", 0},
		{[]string{"groups", st, "bogus"}, `unknown command "bogus"`, 0},
		// bench, before its run directory is made below --dir.
		{[]string{"bench", "bogus"}, `unknown command "bogus"`, 0},
		{[]string{"bench", "write", "--dir", empty, "--rounds", "0"}, "invalid --rounds 0: must be from 1 to 2147483647", 0},
		{[]string{"bench", "write", "--dir", empty, "--floor", "bogus"}, `invalid --floor "bogus": want plain, reserved, payload, preallocated, zeroed or spare`, 0},
		{[]string{"bench", "write", "--dir", empty, "--floor", "reserved", "--sync", "periodic", "--sync-interval", "1s"}, "--floor reserved does not apply with --sync periodic", 0},
		{[]string{"bench", "write", "--dir", empty, "--records", "5", "--duration", "1s"}, "give --duration or --records, not both", 0},
		{[]string{"bench", "write", "--dir", empty, "--writers", "0"}, "invalid --writers 0: must be from 1 to 4096", 0},
		{[]string{"bench", "write", "--dir", empty, "--size", "10,0"}, "invalid --size 0", 0},
		{[]string{"bench", "read", "--dir", empty, "--fetch-bytes", "0"}, "invalid --fetch-bytes 0", 0},
		{[]string{"bench", "scan", "--dir", empty, "--fetch-bytes", "4096"}, "--fetch-bytes only applies with --mode read", 0},
		{[]string{"bench", "scan", "--dir", empty, "--mode", "fast"}, `invalid --mode "fast"`, 0},
		{[]string{"bench", "lookup", "--dir", empty, "--lookups", "0"}, "invalid --lookups 0", 0},
		{[]string{"bench", "durable", "--dir", empty, "--sync", "none"}, "unknown flag: --sync", 0},
		{[]string{"bench", "durable", "--dir", empty, "--levels", "1,0"}, "invalid --levels 0", 0},
		{[]string{"bench", "durable", "--dir", empty, "--levels", "1,2", "--writers", "8"}, "--writers does not apply with --levels", 0},
		{[]string{"bench", "durable", "--dir", empty, "--paired", "--floor", "reserved"}, "--floor does not apply with --paired", 0},
		{[]string{"bench", "durable", "--dir", empty, "--duration", "0s"}, "invalid --duration 0s: must be at least 1ns", 0},
		{[]string{"bench", "compact", "--dir", empty, "--records", "0"}, "invalid --records 0", 0},
		{[]string{"bench", "compact", "--dir", empty, "--keys", "zero"}, `invalid --keys "zero"`, 0},
		{[]string{"bench", "compact", "--dir", empty, "--segment-bytes", "10"}, "invalid --segment-bytes 10", 0},
		{[]string{"bench", "retention", "--dir", empty, "--logs", "0"}, "invalid --logs 0", 0},
		{[]string{"bench", "retention", "--dir", empty, "--memory"}, "--dir does not apply with --memory", 0},
		{[]string{"bench", "store", "--dir", empty, "--groups", "0"}, "invalid --groups 0", 0},
		{[]string{"bench", "store", "--dir", empty, "--value-bytes", "600000"}, "invalid --value-bytes 600000: must be from 1 to 524288", 0},
		{[]string{"bench", "serve", "--dir", empty, "--records", "1", "--partitions", "2"}, benchServeRefusal, 0},
		{[]string{"bench", "raft", "--dir", empty, "--rounds", "0"}, benchRaftRefusal, 0},
		{[]string{"bogus"}, `unknown command "bogus"`, 0},
		{[]string{"help", "bogus"}, `unknown help topic "bogus"`, 0},
		{[]string{"completion", "bogus"}, `unknown command "bogus" for "seglog completion"`, 0},
		{[]string{"version", "extra"}, `unknown command "extra" for "seglog version"`, 0},
	}
	before := dirSnapshot(t, root)
	for _, c := range cases {
		r, ok := runRefused(t, c.args...)
		if !ok {
			continue
		}
		code := c.code
		if code == 0 {
			code = 2
			if c.args[0] == "fsck" {
				code = 8
			}
		}
		line := strings.Join(c.args, " ")
		if r.code != code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("seglog %s: exit %d, stderr %q; want %d and %q", line, r.code, r.stderr, code, c.want)
		}
		if code != 1 && !strings.Contains(r.stderr, "Usage:") {
			t.Errorf("seglog %s: no usage line in %q", line, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("seglog %s: wrote %q to stdout", line, r.stdout)
		}
	}
	vfstest.Unchanged(t, "refused command lines", before, dirSnapshot(t, root))
}

// refusalDeadline bounds how long a refused command line may take: it is
// refused before any work. A command that took the bad value instead
// (serve serving, bench benchmarking) is killed at the deadline, so that
// the test fails instead of hanging.
const refusalDeadline = 30 * time.Second

// runRefused runs seglog with args as a process with an empty stdin and
// returns its result, or reports that it was still running at
// refusalDeadline and returns false.
func runRefused(t *testing.T, args ...string) (cliResult, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), refusalDeadline)
	defer cancel()
	var stdout, stderr lockedBuffer
	cmd := seglogProcess(t, &stderr, args...)
	cmd.Stdout = &stdout
	err := cmd.Start()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		t.Errorf("seglog %s: still running after %v: it took the command line and went to work\nstderr: %s",
			strings.Join(args, " "), refusalDeadline, stderr.String())
		return cliResult{}, false
	}
	return cliResult{code: exitCode(t, err, &stderr), stdout: stdout.String(), stderr: stderr.String()}, true
}
