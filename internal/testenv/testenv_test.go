package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// missingProgram is a name no PATH holds.
const missingProgram = "seglog-testenv-no-such-program"

// TestLookPathChild is run only by TestLookPath, as a child process with
// the CI variable it is checking.
func TestLookPathChild(t *testing.T) {
	if os.Getenv("SEGLOG_TESTENV_CHILD") == "" {
		t.Skip("run by TestLookPath in a child process")
	}
	LookPath(t, missingProgram, "no-such-package")
	t.Log("LookPath returned for a missing program")
}

// TestLookPath: a missing program skips the test with the Debian package's
// name, except under CI, where it fails it; a present one is found.
func TestLookPath(t *testing.T) {
	for _, c := range []struct {
		ci   string
		want string // the child's verdict
	}{
		{"", "--- SKIP"},
		{"false", "--- SKIP"},
		{"0", "--- SKIP"},
		{"true", "--- FAIL"},
		{"1", "--- FAIL"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLookPathChild$", "-test.v")
		cmd.Env = append(os.Environ(), "SEGLOG_TESTENV_CHILD=1", "CI="+c.ci)
		out, err := cmd.CombinedOutput()
		if (c.want == "--- FAIL") != (err != nil) {
			t.Errorf("CI=%q: child exited with %v, want failure %v\n%s", c.ci, err, c.want == "--- FAIL", out)
		}
		s := string(out)
		if !strings.Contains(s, c.want+": TestLookPathChild") {
			t.Errorf("CI=%q: child's verdict is not %s\n%s", c.ci, c.want, s)
		}
		if !strings.Contains(s, "apt-get install -y no-such-package") {
			t.Errorf("CI=%q: the message does not say how to install the program\n%s", c.ci, s)
		}
		if strings.Contains(s, "LookPath returned") {
			t.Errorf("CI=%q: the test went on after a missing program\n%s", c.ci, s)
		}
	}
	if got := LookPath(t, "go", "golang-go"); got == "" {
		t.Error("LookPath found no go, which is running this test")
	}
}

// TestKcat: Kcat runs the kcat LookPath finds with the brokers and the
// arguments given (here -V, which needs no broker) and returns what it
// printed.
func TestKcat(t *testing.T) {
	if out := Kcat(t, []string{"127.0.0.1:1"}, "", "-V"); !strings.Contains(out, "kcat") {
		t.Errorf("kcat -V printed %q", out)
	}
}
