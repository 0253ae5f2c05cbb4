// Command seglog writes, reads, inspects, checks and benchmarks seglog
// partition logs (and Kafka partition directories).
//
// Each subcommand lives in its own file and registers itself on the root
// command from an init function. Commands read and write through the
// cobra command's InOrStdin, OutOrStdout and ErrOrStderr, so tests can run
// the whole CLI in-process with captured streams (runIO).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// exitError carries a specific exit status out of a command (fsck's codes
// follow fsck(8), a signal gives 128+N); a usageError exits with the
// command's usage status, any other error with status 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// newRoot builds the command tree. Tests build a fresh one per run so
// flags do not leak between runs.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "seglog",
		Short: "Kafka-compatible partition log storage: produce, consume, demo, dump, fsck, bench, version",
		Long: `seglog writes, reads, inspects, checks and benchmarks partition logs laid out
as Apache Kafka lays them out: a directory of segments (.log, .index,
.timeindex) of RecordBatch v2 batches.

Start with "seglog demo", which writes, reopens, verifies and truncates a log
in a temporary directory and reports how fast each step ran. Commands that
open a log take its options as flags, with Kafka's defaults.

Every command checks its arguments and flags before it opens, creates or
changes anything: an unknown command or flag, a wrong number of arguments,
a value out of range or a flag that does not apply exits with status 2 (fsck:
8, as fsck(8)) and the command's usage line. Other errors exit with status 1
unless the command's help says otherwise.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return asUsageError(c, err) })
	// cobra adds help and completion when it runs; added now, they are
	// guarded as the others are.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.Args = func(c *cobra.Command, args []string) error {
				// A topic that names no command: Find stops at the last
				// command it knows and leaves the rest.
				found, rest, err := c.Root().Find(args)
				if err == nil && len(rest) > 0 && found.HasSubCommands() {
					err = fmt.Errorf("unknown help topic %q", strings.Join(args, " "))
				}
				return err
			}
		}
	}
	guardCommandLine(root)
	// guardCommandLine makes a command with subcommands runnable (to
	// refuse an unknown one as a usage error), which would add a
	// "seglog [flags]" line to its usage: such a command is used through
	// its subcommands only.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(),
		"{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	return root
}

// subcommands holds the constructors registered by each command's file.
var subcommands []func() *cobra.Command

func register(c func() *cobra.Command) { subcommands = append(subcommands, c) }

// run executes the CLI with args on the process's standard streams and
// returns the exit status.
func run(args []string) int { return runIO(args, os.Stdin, os.Stdout, os.Stderr) }

// runIO executes the CLI with args on the given streams and returns the
// exit status. Errors go to stderr, prefixed with "seglog:".
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		code = usageStatus(ue.cmd)
	case errors.As(err, &ee):
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	// The library's errors already start with "seglog: ".
	fmt.Fprintln(stderr, "seglog:", strings.TrimPrefix(err.Error(), "seglog: "))
	if ue != nil {
		fmt.Fprint(stderr, usageLine(ue.cmd))
	}
	return code
}

func main() { os.Exit(run(os.Args[1:])) }
