package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// acceptDirFirst lets a store command take the directory before the verb,
// as the issue and kafka-topics.sh users write it (`seglog topics DIR
// create NAME`), besides cobra's verb-first form (`seglog topics create
// DIR NAME`). The parent parses no flags of its own, so the verb's flags
// (--partitions, --config, ...) reach the verb unchanged.
func acceptDirFirst(cmd *cobra.Command) {
	cmd.DisableFlagParsing = true
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		if args[0] == "-h" || args[0] == "--help" {
			return c.Help()
		}
		if len(args) < 2 {
			return usageErrorf(c, "%s %s: missing a command (one of %s)", c.Name(), args[0], verbs(c))
		}
		sub, _, err := c.Find(args[1:2])
		if err != nil || sub == c {
			return usageErrorf(c, "%s %s: unknown command %q (one of %s)", c.Name(), args[0], args[1], verbs(c))
		}
		rest := append([]string{args[0]}, args[2:]...)
		sub.InitDefaultHelpFlag() // cobra adds it only on the way to a command it runs itself
		if err := sub.ParseFlags(rest); errors.Is(err, pflag.ErrHelp) {
			return sub.Help()
		} else if err != nil {
			return sub.FlagErrorFunc()(sub, err)
		}
		if help, _ := sub.Flags().GetBool("help"); help {
			return sub.Help()
		}
		pos := sub.Flags().Args()
		// The verb's Args is guardCommandLine's: it checks the flags too
		// and returns usage errors.
		if err := sub.ValidateArgs(pos); err != nil {
			return err
		}
		return sub.RunE(sub, pos)
	}
}

func verbs(c *cobra.Command) string {
	s := ""
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		if s != "" {
			s += ", "
		}
		s += sub.Name()
	}
	return s
}
