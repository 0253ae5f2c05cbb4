package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// One writer per store: a command that writes a store opens it with its
// lock, naming itself in the lock file (store.Options.Holder), and a
// command turned away names the holder and, when the holder is a server,
// how to do the same work through it as a Kafka client.

// storeLogger is the store commands' logger: warnings and errors to
// stderr.
func storeLogger(cmd *cobra.Command) *slog.Logger {
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// holderOf is the lock file's record of cmd: "seglog topics create" and
// this process.
func holderOf(cmd *cobra.Command) store.Holder {
	return store.Holder{Command: cmd.CommandPath(), PID: os.Getpid()}
}

// openStoreWriter opens the store in dir to write it, as cmd. Unless
// create, a directory holding no store is refused rather than made one.
func openStoreWriter(cmd *cobra.Command, dir string, create bool) (*store.Store, error) {
	if !create {
		if err := storeDirExists(dir); err != nil {
			return nil, err
		}
	}
	return openStoreAs(dir, store.Options{Logger: storeLogger(cmd), Existing: !create, Holder: holderOf(cmd)})
}

// briefWait bounds how long a writer waits for a holder that holds the
// store for a moment only (a consumer's commit) before it gives up.
const briefWait = 30 * time.Second

// openStoreAs opens the store with opts, waiting while a brief holder
// (consume --group's commit) has it: such a holder lets go within a
// commit's time, and a writer that gave up on it would fail for nothing.
//
// A holder whose lock file does not say who it is yet is most likely one
// between taking the lock and writing its name (a brief holder among
// them): it is waited for up to unnamedWait, so that its name decides.
func openStoreAs(dir string, opts store.Options) (*store.Store, error) {
	start := time.Now()
	for {
		s, err := store.Open(dir, opts)
		he, held := heldBy(err)
		waited := time.Since(start)
		switch {
		case !held:
			return s, err
		case !he.HolderKnown && waited < unnamedWait:
		case !he.HolderKnown || !he.Holder.Brief || waited > briefWait:
			return s, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unnamedWait bounds how long a writer waits for a holder to write its
// name into the lock file: a holder names itself right after taking the
// lock, so one still unnamed after this is not a seglog command in the
// middle of starting.
const unnamedWait = 2 * time.Second

// heldBy returns the *store.HeldError in err, if the store was held.
func heldBy(err error) (*store.HeldError, bool) {
	var he *store.HeldError
	ok := errors.As(err, &he)
	return he, ok
}

// servedBy returns the Kafka listener of the server holding the store, if
// err says a server holds it.
func servedBy(err error) (string, bool) {
	he, ok := heldBy(err)
	if !ok || !he.HolderKnown || he.Holder.Listener == "" {
		return "", false
	}
	return he.Holder.Listener, true
}

// insteadError is a refusal because the store is held, with what to do
// instead.
type insteadError struct {
	err     error
	instead string
}

func (e *insteadError) Error() string { return e.err.Error() + "; " + e.instead }
func (e *insteadError) Unwrap() error { return e.err }

// withAdvice adds to a refusal because a server holds the store how to do
// the work through it (advice, given its listener's address); a store held
// by another command gets "wait for it to finish". Other errors pass
// unchanged.
func withAdvice(err error, advice func(addr string) string) error {
	he, ok := heldBy(err)
	if !ok {
		return err
	}
	if addr, ok := servedBy(err); ok && advice != nil {
		return &insteadError{err, advice(addr)}
	}
	if he.HolderKnown {
		return &insteadError{err, "run this once it has finished"}
	}
	return err
}

// partitionOfStore reports whether dir is a partition directory of a
// store (or of a Kafka broker's log.dir): such a directory is written only
// through the store. A partition of a broker's log.dir that is not a
// seglog store (no config file for its topic) is refused: writing it
// through a store would first make the log.dir one (a config file per
// topic, the offsets topic's fifty directories), which a command given
// one partition must not do behind its user's back. So is a partition the
// topic does not have (bookings-7 of a topic of 3), from the topic's
// config file alone, before the store is opened: the open would take the
// lock, writing the lock file, and remove a stray directory of that name
// as the leftover of an add-partitions never acknowledged.
func partitionOfStore(dir string) (logDir, topic string, partition int32, ok bool, err error) {
	logDir, topic, partition, ok, err = layout.PartitionLogDir(vfs.Default, dir)
	if err != nil || !ok {
		return logDir, topic, partition, ok, err
	}
	n, err := store.TopicPartitions(vfs.Default, logDir, topic)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := vfs.Default.Stat(filepath.Join(logDir, store.OffsetsTopic+layout.TopicConfigSuffix)); err == nil {
			return "", "", 0, false, fmt.Errorf("%w: %s: %s has no topic %s (seglog topics list %s)", store.ErrUnknownTopic, dir, logDir, topic, logDir)
		}
		return "", "", 0, false, fmt.Errorf("%w: %s is partition %d of topic %s in the Kafka broker's log.dir %s, which is not a seglog store: a broker's partitions are written by the broker; to write them with seglog, stop the broker and open the log.dir as a store (seglog serve %s, or seglog produce %s --topic %s), which adds a config file per topic and the __consumer_offsets topic to it",
			seglog.ErrInLogDir, dir, partition, topic, logDir, logDir, logDir, topic)
	case err != nil:
		return "", "", 0, false, fmt.Errorf("%s: %w", dir, err)
	case int(partition) >= n:
		return "", "", 0, false, fmt.Errorf("%w: %s: topic %s of %s has %d partitions, 0 to %d (seglog topics describe %s %s); nothing was changed",
			store.ErrUnknownPartition, dir, topic, logDir, n, n-1, logDir, topic)
	}
	return logDir, topic, partition, true, nil
}

// refuseLogFlags refuses the Log-shaping flags for a partition of a
// store: its topic's config decides them.
func refuseLogFlags(cmd *cobra.Command, dir, logDir, topic string, partition int32, names ...string) error {
	var given []string
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			given = append(given, "--"+n)
		}
	}
	if len(given) == 0 {
		return nil
	}
	return usageErrorf(cmd, "%v do not apply to %s: it is partition %d of topic %s in the store %s, whose topic config decides them (seglog topics describe %s %s)",
		given, dir, partition, topic, logDir, logDir, topic)
}

// logShapingFlags are the logFlags that a partition of a store takes from
// its topic's config.
var logShapingFlags = []string{"segment-bytes", "segment-ms", "segment-jitter-ms", "index-interval-bytes",
	"max-index-bytes", "max-batch-bytes", "max-mapped-indexes", "max-open-segment-files", "sync",
	"sync-bytes", "sync-interval", "compression", "timestamp-type", "leader-epoch", "preallocate"}
