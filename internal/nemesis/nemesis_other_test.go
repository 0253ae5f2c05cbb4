//go:build !linux

package nemesis

import "testing"

// TestNemesisSingleNode needs Linux: its broker processes are tied to the
// test's life with Pdeathsig, which only Linux has.
func TestNemesisSingleNode(t *testing.T) {
	t.Skip("the nemesis runs seglog serve processes tied to the test with Pdeathsig: Linux only")
}

// TestNemesisCluster needs Linux, as TestNemesisSingleNode does.
func TestNemesisCluster(t *testing.T) {
	t.Skip("the nemesis runs seglog serve processes tied to the test with Pdeathsig: Linux only")
}
