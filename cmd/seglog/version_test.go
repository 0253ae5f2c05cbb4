package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion: seglog version prints the module version and the Go
// version; a build stamped with a VCS revision shows it, with its time and
// whether the tree was modified.
func TestVersion(t *testing.T) {
	r := mustInvoke(t, "", "version")
	if !strings.HasPrefix(r.stdout, "seglog ") || !strings.Contains(r.stdout, runtime.Version()) || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("version printed %q", r.stdout)
	}
	if r := invoke(t, "", "version", "extra"); r.code == 0 {
		t.Errorf("version with an argument: exit 0")
	}
	for _, c := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "seglog unknown go"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "seglog (devel) go"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-12-01T00:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "seglog v1.2.3 (revision 0123abcd, 2026-12-01T00:00:00Z, modified) go"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "false"},
		}}, "seglog v1.2.3 (revision 0123abcd) go"},
	} {
		if got := versionLine(c.bi); !strings.HasPrefix(got, c.want) || !strings.HasSuffix(got, runtime.GOOS+"/"+runtime.GOARCH) {
			t.Errorf("versionLine(%+v) = %q, want it to start with %q", c.bi, got, c.want)
		}
	}
}

// TestUnknownSubcommand: a mistyped subcommand exits non-zero with the
// error and the usage (the list of commands) on stderr, nothing on stdout.
func TestUnknownSubcommand(t *testing.T) {
	r := invoke(t, "", "consme", "dir")
	if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, `unknown command "consme"`) ||
		!strings.Contains(r.stderr, "Available Commands:") || !strings.Contains(r.stderr, "consume") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestGroupCommandUsageHasNoRunLine: a command used only through its
// subcommands (seglog, topics, groups) shows "CMD [command]" as its usage,
// not also "CMD [flags]" as if it ran by itself.
func TestGroupCommandUsageHasNoRunLine(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"topics", "--help"}, {"groups", "--help"}} {
		help := mustInvoke(t, "", args...).stdout
		path := strings.Join(append([]string{"seglog"}, args[:len(args)-1]...), " ")
		if !strings.Contains(help, "  "+path+" [command]\n") || strings.Contains(help, "  "+path+" [flags]\n") {
			t.Errorf("%s --help's usage:\n%s", path, help)
		}
	}
	if help := mustInvoke(t, "", "produce", "--help").stdout; !strings.Contains(help, "  seglog produce DIR [flags]\n") {
		t.Errorf("produce --help lost its usage line:\n%s", help)
	}
}

// TestConsumeHelpListsReadingFlags: consume --help shows the flags that
// matter to reading and none of those that shape writes.
func TestConsumeHelpListsReadingFlags(t *testing.T) {
	help := mustInvoke(t, "", "consume", "--help").stdout
	for _, want := range []string{"--from", "--max ", "--json", "--raw", "--follow", "--max-batch-bytes", "--max-mapped-indexes"} {
		if !strings.Contains(help, want) {
			t.Errorf("consume --help lacks %s", want)
		}
	}
	for _, writing := range []string{"--segment-bytes", "--segment-ms", "--segment-jitter-ms", "--index-interval-bytes", "--max-index-bytes",
		"--sync", "--compression", "--timestamp-type", "--leader-epoch"} {
		if strings.Contains(help, writing) {
			t.Errorf("consume --help lists the writing flag %s", writing)
		}
	}
	if r := invoke(t, "", "consume", t.TempDir(), "--segment-bytes", "4096"); r.code == 0 {
		t.Errorf("consume accepted --segment-bytes")
	}
}
