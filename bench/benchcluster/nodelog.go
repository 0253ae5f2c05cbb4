package benchcluster

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
)

// logKept bounds what is kept of a node's standard error: the end of it
// says what the node did last, which is what a failure report needs.
const logKept = 64 << 10

// logLines is how many of each node's last lines a failure quotes.
const logLines = 20

// nodeLog keeps the end of what a node wrote to its standard error over
// all its runs. It has its own lock: the exec package's copying goroutine
// writes while the benchmark may read.
type nodeLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends b, dropping the oldest bytes beyond logKept.
func (l *nodeLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(b)
	if extra := l.buf.Len() - logKept; extra > 0 {
		l.buf.Next(extra)
	}
	return len(b), nil
}

// tail returns the last n lines kept; if a run of the node panicked,
// the last panic's message and the n lines after it instead, since the
// message is what says what went wrong and the stack comes after it.
func (l *nodeLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := strings.Split(strings.TrimRight(l.buf.String(), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "panic: ") {
			return strings.Join(lines[i:min(len(lines), i+n)], "\n")
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logs returns the end of every node's log, each headed by its id: what a
// failure of the cluster is reported with.
func (c *cluster) logs() string {
	var b strings.Builder
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "\n--- node %d (%s), the end of its log:\n%s", n.ID, n.args[0], n.log.tail(logLines))
	}
	return b.String()
}
