package main

import (
	"os"

	"github.com/seglog/seglog/bench"
)

// runAsSeglogEnv makes a test binary run as seglog (main_test.go): the
// bench's server child is this binary's serve command, in tests too.
const runAsSeglogEnv = "SEGLOG_TEST_RUN_MAIN"

// serveCommand is how the server benchmarks (bench serve, one of the bench
// extras, and bench restart) start seglog serve: this binary. Tests run it
// through the test binary, which becomes seglog when runAsSeglogEnv is
// set; for the seglog binary the variable is harmless.
func serveCommand() (bench.ServeCommand, error) {
	exe, err := os.Executable()
	if err != nil {
		return bench.ServeCommand{}, err
	}
	return bench.ServeCommand{Path: exe, Env: append(os.Environ(), runAsSeglogEnv+"=1")}, nil
}
