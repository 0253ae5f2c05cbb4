package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print seglog's module version, the VCS revision it was built from, and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			bi, _ := debug.ReadBuildInfo()
			fmt.Fprintln(cmd.OutOrStdout(), versionLine(bi))
			return nil
		},
	}
}

// versionLine formats the build information the Go toolchain stamped into
// the binary: "seglog VERSION (revision REV, TIME, modified) GO OS/ARCH",
// with the parenthesis only when the build recorded a revision. bi is nil
// for a binary built without module support.
func versionLine(bi *debug.BuildInfo) string {
	version := "unknown"
	if bi != nil && bi.Main.Version != "" {
		// "(devel)" for a build from a checkout without VCS stamping.
		version = bi.Main.Version
	}
	var vcs []string
	if bi != nil {
		var rev, at, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			vcs = append(vcs, "revision "+rev)
			if at != "" {
				vcs = append(vcs, at)
			}
			if modified == "true" {
				vcs = append(vcs, "modified")
			}
		}
	}
	line := "seglog " + version
	if len(vcs) > 0 {
		line += " (" + strings.Join(vcs, ", ") + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", line, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
