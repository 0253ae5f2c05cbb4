//go:build linux

package nemesis

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"time"
)

// StartTimeout is how long Start and Restart wait for a process to say it
// listens: recovery after a SIGKILL replays only unflushed data, but a
// loaded CI machine is slow.
var StartTimeout = 60 * time.Second

// StopTimeout is how long Stop waits for a process to exit after SIGTERM
// (serve's own --grace is 30 s by default; pass a shorter one).
var StopTimeout = 60 * time.Second

// listening matches the line `seglog serve` prints once its listener is
// bound and its store open, as .ci/run and the interop tests parse it.
var listening = regexp.MustCompile(`(?m)^seglog serve: listening on ([^,\s]+)`)

// outputKept bounds the output a Proc keeps for diagnostics: the tail of
// stdout and stderr of all its runs.
const outputKept = 256 << 10

// Proc is one `seglog serve DIR ARGS...` process, run again with the same
// directory and arguments after a Kill or Stop. Its methods are safe for
// concurrent use, though a nemesis drives one Proc from one goroutine.
type Proc struct {
	bin  string
	dir  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	addr   string
	exited chan struct{} // closed when the current run's process has exited
	err    error         // the current run's exit status, once exited
	out    tailBuffer
	runs   int
}

// Start runs `bin serve dir args...` and returns once it prints that it
// listens. The process is killed if the calling process dies (Pdeathsig),
// so a test that crashes leaves no broker behind; the caller still Stops
// or Kills it at the end.
func Start(bin, dir string, args ...string) (*Proc, error) {
	p := &Proc{bin: bin, dir: dir, args: slices.Clone(args)}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Dir returns the process's store directory.
func (p *Proc) Dir() string { return p.dir }

// Addr returns the address the process listens on (its Kafka listener),
// the same across restarts.
func (p *Proc) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// Output returns the tail of what the process wrote to stdout and stderr
// over all its runs, each run headed by a line saying so.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Running reports whether the process is running (or paused).
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

func (p *Proc) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// start runs the process once more and waits for its listener.
func (p *Proc) start() error {
	mark, exited, err := p.launch()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(StartTimeout)
	for {
		if m := listening.FindStringSubmatch(p.out.since(mark)); m != nil {
			p.mu.Lock()
			if p.addr == "" {
				p.addr = m[1]
			}
			p.mu.Unlock()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("nemesis: %s exited before listening: %v\n%s", p.bin, p.exitErr(), p.Output())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.signal(syscall.SIGKILL)
			<-exited
			return fmt.Errorf("nemesis: %s did not listen within %v\n%s", p.bin, StartTimeout, p.Output())
		}
	}
}

// Launch runs the process again, like Restart, but returns as soon as it
// is started: a Kill soon after is a crash during recovery (or during the
// start-up that follows it), where the broker has not said it listens.
// The process must have listened once before (Start), so that it keeps
// its address.
func (p *Proc) Launch() error {
	if p.Addr() == "" {
		return errors.New("nemesis: Launch of a process that never listened: its address is not known")
	}
	_, _, err := p.launch()
	return err
}

// launch starts a run and returns the output mark it started at and its
// exit channel.
func (p *Proc) launch() (mark int64, exited chan struct{}, err error) {
	p.mu.Lock()
	if p.runningLocked() {
		p.mu.Unlock()
		return 0, nil, errors.New("nemesis: start of a process that is running")
	}
	args := append([]string{"serve", p.dir}, p.args...)
	if p.addr != "" {
		// A restart listens where the first run did (a --listen of port 0
		// picked it), so clients find it again at the address they know.
		args = withListen(args, p.addr)
	}
	p.runs++
	fmt.Fprintf(&p.out, "--- run %d: %s %q\n", p.runs, p.bin, args)
	cmd := exec.Command(p.bin, args...)
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	// A test binary that panics or is killed runs no cleanup: the broker
	// must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	mark = p.out.mark()
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return 0, nil, err
	}
	exited = make(chan struct{})
	p.cmd, p.exited, p.err = cmd, exited, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(exited)
	}()
	return mark, exited, nil
}

func (p *Proc) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// withListen returns args with --listen set to addr.
func withListen(args []string, addr string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		switch {
		case a == "--listen" && i+1 < len(out):
			out[i+1] = addr
			return out
		case len(a) > 9 && a[:9] == "--listen=":
			out[i] = "--listen=" + addr
			return out
		}
	}
	return append(out, "--listen", addr)
}

// signal sends sig to the current run, if it is running.
func (p *Proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return errors.New("nemesis: signal to a process that is not running")
	}
	return p.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits for the process to be gone: the crash. A
// process that has already exited (after Terminate) is not an error.
func (p *Proc) Kill() error {
	if !p.Running() {
		return nil
	}
	p.signal(syscall.SIGKILL) // it may exit between the check and the signal
	<-p.currentExit()
	return nil
}

func (p *Proc) currentExit() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Pause sends SIGSTOP: the process stops answering without closing its
// connections, as a machine that hangs (or a long GC pause) does.
func (p *Proc) Pause() error { return p.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT to a paused process.
func (p *Proc) Resume() error { return p.signal(syscall.SIGCONT) }

// Restart runs the process again, with the same directory and arguments
// and on the same address, after a Kill or Stop.
func (p *Proc) Restart() error { return p.start() }

// Terminate sends SIGTERM and returns at once: a Kill soon after is a
// crash during the clean shutdown (the producer snapshots, the clean
// shutdown marker).
func (p *Proc) Terminate() error {
	p.signal(syscall.SIGCONT)
	return p.signal(syscall.SIGTERM)
}

// Stop sends SIGTERM (after SIGCONT, in case it is paused) and waits for
// the process to exit; an exit status other than 0 is an error, with the
// process's output. A process already gone is not an error.
func (p *Proc) Stop() error {
	if !p.Running() {
		return nil
	}
	p.signal(syscall.SIGCONT)
	if err := p.signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.currentExit():
	case <-time.After(StopTimeout):
		p.signal(syscall.SIGKILL)
		<-p.currentExit()
		return fmt.Errorf("nemesis: %s did not exit within %v of SIGTERM; killed\n%s", p.bin, StopTimeout, p.Output())
	}
	if err := p.exitErr(); err != nil {
		return fmt.Errorf("nemesis: %s after SIGTERM: %v\n%s", p.bin, err, p.Output())
	}
	return nil
}

// tailBuffer is an io.Writer keeping the last outputKept bytes written
// to it, and the count of all of them. It has its own lock: the exec
// package's copying goroutines write to it while the Proc reads it.
type tailBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	total int64 // bytes ever written
}

// Write appends b, dropping the oldest bytes beyond outputKept.
func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	t.total += int64(len(b))
	if extra := t.buf.Len() - outputKept; extra > 0 {
		t.buf.Next(extra)
	}
	return len(b), nil
}

// mark returns the count of bytes ever written, for since.
func (t *tailBuffer) mark() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// String returns what is kept.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// since returns what was written after the first mark bytes, as far as
// it is kept.
func (t *tailBuffer) since(mark int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.total - int64(t.buf.Len())
	b := t.buf.Bytes()
	if mark > kept {
		b = b[mark-kept:]
	}
	return string(b)
}
