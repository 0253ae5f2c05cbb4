package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// allCommands returns every command of a fresh tree, root first.
func allCommands() []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	return out
}

// TestEveryNumericFlagDeclaresItsRange: every numeric flag of every
// command says which values it takes (limitFlag), that every value of its
// type means something (anyValue), or which code checks it before the
// command opens anything (checkedBy), so that no command can take a value
// out of range and go on with it: a new flag without a rule fails here.
func TestEveryNumericFlagDeclaresItsRange(t *testing.T) {
	for _, c := range allCommands() {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if !numericTypes[fl.Value.Type()] {
				return
			}
			n := 0
			for _, k := range []string{ruleRange, ruleAny, ruleChecked} {
				if _, ok := fl.Annotations[k]; ok {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s --%s (%s): %d range rules, want exactly one", c.CommandPath(), fl.Name, fl.Value.Type(), n)
			}
		})
	}
}

// TestFlagDefaultsPassTheirRules: the rules are checked on defaults too,
// so a default outside its own rule would make the command unusable.
func TestFlagDefaultsPassTheirRules(t *testing.T) {
	for _, c := range allCommands() {
		if err := checkFlagRules(c); err != nil {
			t.Errorf("%s with no flags: %v", c.CommandPath(), err)
		}
	}
}

// TestUsageErrorsShowTheUsageLine: a refused command line exits 2 (fsck:
// 8) with the message and the command's usage line on stderr, nothing on
// stdout; a mistyped command of a group (bench) is refused instead of
// printing its help and exiting 0.
func TestUsageErrorsShowTheUsageLine(t *testing.T) {
	for _, c := range []struct {
		args  []string
		code  int
		wants []string
	}{
		{[]string{"serve", "--num-partitions", "0", t.TempDir()}, 2, []string{"invalid --num-partitions 0: must be from 1 to 100000", "Usage: seglog serve DIR [flags]", "seglog serve --help"}},
		{[]string{"serve"}, 2, []string{"accepts 1 arg(s), received 0", "Usage: seglog serve DIR [flags]"}},
		{[]string{"serve", "--no-such-flag", t.TempDir()}, 2, []string{"unknown flag: --no-such-flag", "Usage: seglog serve DIR [flags]"}},
		{[]string{"consume", "--json", "--raw", t.TempDir()}, 2, []string{"give --json or --raw, not both", "Usage: seglog consume DIR [flags]"}},
		{[]string{"bench", "wrtie"}, 2, []string{`unknown command "wrtie" for "seglog bench"`, "did you mean write?", "Available Commands:"}},
		{[]string{"fsck", "--max-entry-bytes", "0", t.TempDir()}, 8, []string{"invalid --max-entry-bytes 0: must be from 1 to 2147483647", "Usage: seglog fsck DIR... [flags]"}},
		{[]string{"topics", t.TempDir(), "create", "x", "--partitions", "-1"}, 2, []string{"invalid --partitions -1", "Usage: seglog topics create DIR NAME [flags]"}},
	} {
		r := invoke(t, "", c.args...)
		if r.code != c.code || r.stdout != "" {
			t.Errorf("seglog %s: exit %d, stdout %q; want %d and nothing", strings.Join(c.args, " "), r.code, r.stdout, c.code)
		}
		for _, w := range c.wants {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("seglog %s: stderr %q lacks %q", strings.Join(c.args, " "), r.stderr, w)
			}
		}
	}
}
