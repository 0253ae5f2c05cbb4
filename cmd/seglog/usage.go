package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageError is a command line the command refuses before it opens,
// creates or changes anything: an unknown command or flag, a wrong number
// of arguments, a flag value out of range, a flag that does not apply. runIO
// prints it with the command's usage line and exits with the command's
// usage status (usageStatus): 2, or fsck's 8.
//
// It is the one way a command says "the command line is wrong": every
// check of arguments and flag values returns one, and cobra's own refusals
// (unknown flags, argument counts, exclusive flags) are turned into one by
// the hooks guardCommandLine installs.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf returns a usage error of cmd's command line.
func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return &usageError{cmd: cmd, err: fmt.Errorf(format, args...)}
}

// asUsageError marks err, a refusal of cmd's command line, as a usage
// error; nil stays nil and a usage error keeps its command.
func asUsageError(cmd *cobra.Command, err error) error {
	var ue *usageError
	if err == nil || errors.As(err, &ue) {
		return err
	}
	return &usageError{cmd: cmd, err: err}
}

// exitUsage is the exit status of a usage error, as most Unix commands
// give it. fsck keeps fsck(8)'s statuses, where 2 means something else
// (usageStatusKey).
const exitUsage = 2

// usageStatusKey is the command annotation that overrides exitUsage.
const usageStatusKey = "seglog:usage-status"

// usageStatus returns the exit status of a usage error of cmd.
func usageStatus(cmd *cobra.Command) int {
	if s, ok := cmd.Annotations[usageStatusKey]; ok {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return exitUsage
}

// usageLine is what follows a usage error's message: the command's
// synopsis and where its flags are described; for a command that groups
// others (a mistyped subcommand), the list of them.
func usageLine(cmd *cobra.Command) string {
	if cmd.HasAvailableSubCommands() {
		return "\n" + cmd.UsageString()
	}
	return fmt.Sprintf("Usage: %s\nRun '%s --help' for more.\n", cmd.UseLine(), cmd.CommandPath())
}

// guardCommandLine makes every refusal of cmd's command line, and of its
// subcommands', a usage error found before the command runs: cobra calls
// Args once the flags are parsed and before its own flag-group checks and
// the command's RunE, so the wrapper runs the command's argument check,
// cobra's required and exclusive flag checks and the flag rules declared
// with limitFlag, anyValue, oneOf, onlyWith and notWith (checkFlagRules).
// A command that only groups subcommands refuses any argument as an
// unknown command instead of printing its help and exiting 0.
func guardCommandLine(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		guardCommandLine(sub)
	}
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		cmd.Args = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
			if c.SuggestionsMinimumDistance <= 0 {
				c.SuggestionsMinimumDistance = 2 // cobra's default, which only its own lookup sets
			}
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
			}
			return errors.New(msg)
		}
	}
	check := cmd.Args
	cmd.Args = func(c *cobra.Command, args []string) error {
		if check != nil {
			if err := check(c, args); err != nil {
				return asUsageError(c, err)
			}
		}
		if err := c.ValidateRequiredFlags(); err != nil {
			return asUsageError(c, err)
		}
		if err := c.ValidateFlagGroups(); err != nil {
			return asUsageError(c, err)
		}
		return checkFlagRules(c)
	}
}

// The flag annotations checkFlagRules enforces.
const (
	ruleRange    = "seglog:range"     // lo, hi: a numeric flag's (or each list element's) bounds
	ruleAny      = "seglog:any"       // every value of the numeric type means something
	ruleChecked  = "seglog:checked"   // checked by the named code before anything is opened
	ruleOneOf    = "seglog:one-of"    // the values a string flag takes
	ruleOnlyWith = "seglog:only-with" // applies only with one of these: "flag" (given) or "flag=value"
	ruleNotWith  = "seglog:not-with"  // does not apply with any of these flags given
	ruleExcludes = "seglog:excludes"  // cannot be given with any of these flags
)

// numericTypes are the pflag types whose flags must declare their values
// with limitFlag, anyValue or checkedBy (TestEveryNumericFlagDeclaresItsRange).
var numericTypes = map[string]bool{"int": true, "int32": true, "int64": true, "uint64": true, "duration": true, "intSlice": true}

func annotate(cmd *cobra.Command, name, key string, values ...string) {
	if err := cmd.Flags().SetAnnotation(name, key, values); err != nil {
		panic(fmt.Sprintf("seglog: rule for --%s of %s: %v", name, cmd.Name(), err)) // a programming error, not input
	}
}

// limitFlag declares the values a numeric flag of cmd takes: lo to hi,
// for each element of a list flag. Durations are given in nanoseconds
// (limitDuration).
func limitFlag(cmd *cobra.Command, name string, lo, hi int64) {
	annotate(cmd, name, ruleRange, strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10))
}

// limitDuration declares the durations a flag of cmd takes.
func limitDuration(cmd *cobra.Command, name string, lo, hi time.Duration) {
	limitFlag(cmd, name, int64(lo), int64(hi))
}

// anyValue declares that every value of a numeric flag's type means
// something (a negative --from counts from the end).
func anyValue(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		annotate(cmd, n, ruleAny, "")
	}
}

// checkedBy declares numeric flags whose range depends on other flags and
// is checked by the named code, which the command runs before it opens or
// creates anything and which returns usage errors.
func checkedBy(cmd *cobra.Command, by string, names ...string) {
	for _, n := range names {
		annotate(cmd, n, ruleChecked, by)
	}
}

// oneOf declares the values a string flag of cmd takes.
func oneOf(cmd *cobra.Command, name string, values ...string) {
	annotate(cmd, name, ruleOneOf, values...)
}

// onlyWith declares that flag name of cmd applies only when one of conds
// holds: "other" (the flag other is given) or "other=value" (its value,
// given or default, is value). Giving it otherwise is a usage error.
func onlyWith(cmd *cobra.Command, name string, conds ...string) {
	annotate(cmd, name, ruleOnlyWith, conds...)
}

// notWith declares that the flags names of cmd do not apply when flag
// other is given.
func notWith(cmd *cobra.Command, other string, names ...string) {
	for _, n := range names {
		fl := cmd.Flags().Lookup(n)
		if fl == nil {
			panic(fmt.Sprintf("seglog: rule for unknown flag --%s of %s", n, cmd.Name()))
		}
		annotate(cmd, n, ruleNotWith, append(fl.Annotations[ruleNotWith], other)...)
	}
}

// exclusive declares that at most one of the flags names of cmd may be
// given.
func exclusive(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		for _, m := range names {
			if m != n {
				fl := cmd.Flags().Lookup(n)
				if fl == nil {
					panic(fmt.Sprintf("seglog: rule for unknown flag --%s of %s", n, cmd.Name()))
				}
				annotate(cmd, n, ruleExcludes, append(fl.Annotations[ruleExcludes], m)...)
			}
		}
	}
}

// given reports whether fl was set on the command line; a boolean set
// to false counts as not given.
func given(fl *pflag.Flag) bool {
	return fl != nil && fl.Changed && (fl.Value.Type() != "bool" || fl.Value.String() == "true")
}

// checkFlagRules checks every flag of cmd against the rules declared for
// it, defaults included, in the order the flags are listed.
func checkFlagRules(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if err == nil {
			err = checkFlag(cmd, fl)
		}
	})
	return err
}

func checkFlag(cmd *cobra.Command, fl *pflag.Flag) error {
	a := fl.Annotations
	if _, required := a[cobra.BashCompOneRequiredFlag]; required && !fl.Changed {
		return nil // refused already, by ValidateRequiredFlags; its default is no value
	}
	if r, ok := a[ruleRange]; ok {
		lo, _ := strconv.ParseInt(r[0], 10, 64)
		hi, _ := strconv.ParseInt(r[1], 10, 64)
		if err := checkFlagRange(cmd, fl, lo, hi); err != nil {
			return err
		}
	}
	if vals, ok := a[ruleOneOf]; ok {
		v := fl.Value.String()
		found := false
		for _, w := range vals {
			found = found || strings.EqualFold(v, w)
		}
		if !found {
			return usageErrorf(cmd, "invalid --%s %q: want %s", fl.Name, v, orList(vals))
		}
	}
	if !given(fl) {
		return nil
	}
	if conds, ok := a[ruleOnlyWith]; ok && !anyHolds(cmd, conds) {
		var want []string
		for _, c := range conds {
			name, value, hasValue := strings.Cut(c, "=")
			if hasValue {
				want = append(want, "--"+name+" "+value)
			} else {
				want = append(want, "--"+name)
			}
		}
		return usageErrorf(cmd, "--%s only applies with %s", fl.Name, orList(want))
	}
	for _, other := range a[ruleNotWith] {
		if given(cmd.Flags().Lookup(other)) {
			return usageErrorf(cmd, "--%s does not apply with --%s", fl.Name, other)
		}
	}
	for _, other := range a[ruleExcludes] {
		if given(cmd.Flags().Lookup(other)) {
			return usageErrorf(cmd, "give --%s or --%s, not both", fl.Name, other)
		}
	}
	return nil
}

// anyHolds reports whether one of onlyWith's conditions holds.
func anyHolds(cmd *cobra.Command, conds []string) bool {
	for _, c := range conds {
		name, value, hasValue := strings.Cut(c, "=")
		fl := cmd.Flags().Lookup(name)
		if hasValue && fl != nil && strings.EqualFold(fl.Value.String(), value) {
			return true
		}
		if !hasValue && given(fl) {
			return true
		}
	}
	return false
}

// checkFlagRange checks a numeric flag's value, each element of a list.
func checkFlagRange(cmd *cobra.Command, fl *pflag.Flag, lo, hi int64) error {
	var vals []string
	if sv, ok := fl.Value.(pflag.SliceValue); ok {
		vals = sv.GetSlice()
	} else {
		vals = []string{fl.Value.String()}
	}
	isDuration := fl.Value.Type() == "duration"
	for _, s := range vals {
		var v int64
		var err error
		if isDuration {
			var d time.Duration
			d, err = time.ParseDuration(s)
			v = int64(d)
		} else {
			v, err = strconv.ParseInt(s, 10, 64)
		}
		if err != nil || v < lo || v > hi {
			return usageErrorf(cmd, "invalid --%s %s: %s", fl.Name, s, describeRange(lo, hi, typeMax(fl), isDuration))
		}
	}
	return nil
}

// typeMax is the largest value fl's type holds.
func typeMax(fl *pflag.Flag) int64 {
	if fl.Value.Type() == "int32" {
		return math.MaxInt32
	}
	return math.MaxInt64
}

// describeRange says what limitFlag's lo and hi allow, when the flag's
// type holds up to most.
func describeRange(lo, hi, most int64, isDuration bool) string {
	f := func(n int64) string {
		if isDuration {
			return time.Duration(n).String()
		}
		return strconv.FormatInt(n, 10)
	}
	switch {
	case hi == most && lo == 0:
		return "must not be negative"
	case hi == most:
		return "must be at least " + f(lo)
	}
	return fmt.Sprintf("must be from %s to %s", f(lo), f(hi))
}

// orList joins alternatives: "a", "a or b", "a, b or c".
func orList(alts []string) string {
	if len(alts) < 2 {
		return strings.Join(alts, "")
	}
	return strings.Join(alts[:len(alts)-1], ", ") + " or " + alts[len(alts)-1]
}

// checkListenAddress refuses a listen address that is not host:port with
// a port number (or service name) net.Listen takes, as a usage error of
// flag: the command binds it before it opens or creates anything, and a
// malformed one is a typo rather than a busy port.
func checkListenAddress(cmd *cobra.Command, flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf(cmd, "invalid --%s %q: want HOST:PORT (port 0 picks a free one): %v", flag, addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usageErrorf(cmd, "invalid --%s %q: bad port %q", flag, addr, port)
	}
	return nil
}
